from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import REPO_ROOT, Launch
from tests.shared.toy_server import entry


@pytest.fixture
def toy():
    """A fresh in-memory toy server."""
    return entry.default_server()


@pytest.fixture(scope="session")
def toy_launch() -> Launch:
    """The toy server as a process, launched like a console script."""
    return Launch("python", ("-m", "tests.shared.toy_server"), cwd=str(REPO_ROOT))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT
