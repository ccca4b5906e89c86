"""Every installed Dockyard server, plus the toy server, as targets for the cross-cutting tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from dockyard_shared.cli import discover_servers
from tests.harness import REPO_ROOT, Launch
from tests.name_origin.fake_nationalize import FakeNationalize, RunningFake

SERVERS = discover_servers()

_loopback_nationalize: list[RunningFake] = []


def loopback_nationalize() -> str:
    """The URL of a fake nationalize.io for this process, started on first use: name-origin is never
    pointed at the real API by these tests (or by conformance.py, which calls launch_for too)."""
    if not _loopback_nationalize:
        running = RunningFake(FakeNationalize(free_limit=1_000_000))
        running.thread.start()  # a daemon thread: it ends with the process
        _loopback_nationalize.append(running)
    return _loopback_nationalize[0].url


def launch_for(name: str, data_dir: Path) -> Launch:
    """How to start a server on defaults that need nothing external: git serves this checkout (the
    clients here share no MCP roots, so it is told which folder with --root); name-origin asks a
    loopback fake of nationalize.io; tasks serves every toolset."""
    env = {"XDG_DATA_HOME": str(data_dir)}
    if name == "toy":
        return Launch("python", ("-m", "tests.shared.toy_server"), env=env, cwd=str(REPO_ROOT))
    args: tuple[str, ...] = ()
    if name == "name-origin":
        args = ("--api-url", loopback_nationalize())
    elif name == "git":
        args = ("--root", str(REPO_ROOT))
    elif name == "tasks":
        args = ("--toolsets", "all")  # its manage toolset is off by default; every tool is exercised
    return Launch(f"dockyard-{name}", args, env=env, cwd=str(REPO_ROOT))


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("xdg")


@pytest.fixture(params=["toy", *SERVERS])
def server_name(request) -> str:
    return request.param
