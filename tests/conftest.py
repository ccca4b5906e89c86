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


# The user's own Dockyard folders: no test may write there (each server's data and cache folders follow
# XDG_DATA_HOME and XDG_CACHE_HOME, which the fixture below points at the session's temporary folders).
REAL_USER_FOLDERS = (Path.home() / ".cache" / "dockyard", Path.home() / ".local" / "share" / "dockyard")


def _snapshot(folders: tuple[Path, ...]) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``folders``, with its modification time and size."""
    seen: dict[str, tuple[int, int]] = {}
    for folder in folders:
        for path in [folder, *(folder.rglob("*") if folder.is_dir() else ())]:
            try:
                stat = path.lstat()
            except OSError:
                continue
            seen[str(path)] = (stat.st_mtime_ns, stat.st_size)
    return seen


@pytest.fixture(scope="session", autouse=True)
def user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The cache and data folders of every server a test starts, in process or spawned, instead of the
    user's own; at the end of the session, the user's own Dockyard folders must be as they were."""
    folder = tmp_path_factory.mktemp("xdg-cache")
    data = tmp_path_factory.mktemp("xdg-data")
    before = _snapshot(REAL_USER_FOLDERS)
    previous = {name: os.environ.get(name) for name in ("XDG_CACHE_HOME", "XDG_DATA_HOME")}
    os.environ["XDG_CACHE_HOME"] = str(folder)
    os.environ["XDG_DATA_HOME"] = str(data)
    yield folder
    for name, value in previous.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    after = _snapshot(REAL_USER_FOLDERS)
    changed = sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))
    assert not changed, (
        f"the tests wrote into the user's own Dockyard folders: {changed[:10]} (or another process on this "
        "machine did meanwhile: a server a host or another checkout runs)"
    )


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
