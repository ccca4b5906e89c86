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


# Whole modules left out of the fast lane (`uv run pytest -m "not slow"`): each spawns servers, git
# daemons or fake upstreams for most of its tests (together ~3½ of the full suite's ~12 minutes). A single
# slow test elsewhere carries its own ``@pytest.mark.slow``.
SLOW_MODULES = frozenset(
    {
        "tests/git/test_github.py",
        "tests/git/test_github_review.py",
        "tests/git/test_remote.py",
        "tests/git/test_remote_hostile.py",
        "tests/git/test_remote_http.py",
        "tests/git/test_remote_redirects.py",
        "tests/interop/test_fuzz.py",
        "tests/name_origin/test_faults.py",
        "tests/tasks/test_integrity_concurrency.py",
        "tests/tasks/test_listen_reconnect.py",
        "tests/workspace/test_startup_imports.py",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(str(config.rootpath))
    for item in items:
        if Path(str(item.path)).relative_to(root).as_posix() in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
