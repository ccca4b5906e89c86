"""Every installed Dockyard server, plus the toy server, as targets for the cross-cutting tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from dockyard_shared.cli import discover_servers
from tests.harness import REPO_ROOT, Launch

SERVERS = discover_servers()


def launch_for(name: str, data_dir: Path) -> Launch:
    """How to start a server on defaults that need nothing external (git serves this checkout)."""
    env = {"XDG_DATA_HOME": str(data_dir)}
    if name == "toy":
        return Launch("python", ("-m", "tests.shared.toy_server"), env=env, cwd=str(REPO_ROOT))
    return Launch(f"dockyard-{name}", (), env=env, cwd=str(REPO_ROOT))


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("xdg")


@pytest.fixture(params=["toy", *SERVERS])
def server_name(request) -> str:
    return request.param
