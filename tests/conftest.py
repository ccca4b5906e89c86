"""Fixtures every test folder shares; the connection machinery lives in tests/harness.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import ERAS, Era


@pytest.fixture(params=ERAS)
def era(request: pytest.FixtureRequest) -> Era:
    """Run the test once per protocol era (2025-11-25 and 2026-07-28)."""
    return request.param


@pytest.fixture(scope="session")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where spawned server processes write their stderr."""
    return tmp_path_factory.mktemp("server-logs")
