"""Fixtures every test folder shares; the connection machinery lives in tests/harness.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
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


@pytest.fixture(scope="session", autouse=True)
def user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The cache folder of every server a test starts, in process or spawned, instead of
    the user's own."""
    folder = tmp_path_factory.mktemp("xdg-cache")
    previous = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = previous
