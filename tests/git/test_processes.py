"""dockyard-git as hosts run it: the console script over stdio and Streamable HTTP, both eras."""

from __future__ import annotations

import subprocess

import pytest

from tests.git.helpers import make_repo
from tests.harness import ERAS, Launch, http_server, open_session

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def repos(tmp_path_factory):
    root = tmp_path_factory.mktemp("roots")
    make_repo(root / "alpha")
    make_repo(root / "beta")
    return root


@pytest.mark.parametrize("era", ERAS)
async def test_stdio_serves_every_repository_under_a_root(repos, era):
    async with open_session(Launch("dockyard-git", ("--root", str(repos))), era=era) as session:
        names = {r["name"] for r in (await session.call_ok("git_repositories")).data["repositories"]}
        log = (await session.call_ok("git_log", {"repo_path": "alpha", "max_count": 1})).data
        refused = await session.call_error("git_show", {"repo_path": "alpha", "path": "../beta/README.md"})
        assert "git_add" not in await session.tool_names()
    assert names == {"alpha", "beta"} and log["commits"][0]["subject"] == "change number 2"
    assert refused.startswith("Error (permission_denied)")


@pytest.mark.parametrize("era", ERAS)
async def test_stdio_without_root_serves_the_clients_roots(repos, era):
    roots = [(repos / "alpha").as_uri()]
    async with open_session(Launch("dockyard-git"), era=era, roots=roots) as session:
        listing = (await session.call_ok("git_repositories")).data["repositories"]
    assert [r["name"] for r in listing] == ["alpha"]


@pytest.mark.parametrize("era", ERAS)
async def test_http_without_root_serves_each_client_its_own_roots(repos, log_dir, era):
    with http_server(Launch("dockyard-git"), log_dir=log_dir) as server:
        async with (
            open_session(server.url(), era=era, roots=[(repos / "alpha").as_uri()]) as first,
            open_session(server.url(), era=era, roots=[(repos / "beta").as_uri()]) as second,
        ):
            seen = [
                [r["name"] for r in (await session.call_ok("git_repositories")).data["repositories"]]
                for session in (first, second, first)
            ]
    assert seen == [["alpha"], ["beta"], ["alpha"]]


@pytest.fixture(scope="module")
def git_over_http(repos, log_dir):
    with http_server(
        Launch("dockyard-git", ("--root", str(repos / "beta"), "--allow-write")), log_dir=log_dir
    ) as server:
        yield server


@pytest.mark.parametrize("era", ERAS)
async def test_http_serves_one_repository_with_write_tools(git_over_http, era):
    async with open_session(git_over_http.url(), era=era) as session:
        status = (await session.call_ok("git_status")).data
        tools = await session.tool_names()
    assert status["branch"] == "main" and {"git_add", "git_commit", "git_stash"} <= tools


def test_a_missing_root_stops_start_up_with_a_clear_message(tmp_path):
    launch = Launch("dockyard-git", ("--root", str(tmp_path / "nope")))
    result = subprocess.run(
        launch.command(), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert result.returncode == 2 and "is not a folder" in result.stderr and "Traceback" not in result.stderr
