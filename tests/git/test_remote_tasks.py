"""git_fetch, git_pull and git_push as MCP tasks (io.modelcontextprotocol/tasks, ``--tasks``), against a real
smart-HTTP remote that stalls halfway through the pack: a client that speaks the extension polls the task;
cancelling it kills the git processes and leaves no partial pack behind."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError
from fastmcp_tasks import call_tool_task

from dockyard_git.settings import RemoteSettings
from dockyard_shared.toolsets import Exposure
from tests.git.helpers import git, make_server
from tests.git.remote_setup import ALL_PROTOCOLS, commit, head_of, operator_environment
from tests.git.smart_http import TOKEN, SmartHttpRemote, bare_clone, have_http_backend
from tests.harness import open_session
from tests.waiting import until

pytestmark = pytest.mark.skipif(not have_http_backend(), reason="git-http-backend is not installed")

TERMINAL = {"completed", "failed", "cancelled"}


@pytest.fixture
def web(remotes, tmp_path):
    """The served clone with a second remote, ``web``, over smart HTTP, holding a commit of 200 files
    of incompressible data the clone has not fetched yet (a pack big enough to be cut in the middle)."""
    served = tmp_path / "http"
    served.mkdir()
    bare_clone(remotes.origin, served, "project")
    data = remotes.others / "data"
    data.mkdir()
    for index in range(
        200
    ):  # over git's unpack limit (100 objects): the fetch keeps a pack, not loose objects
        (data / f"{index}.bin").write_bytes(os.urandom(20_000))
    git(remotes.others, "add", "data")
    git(remotes.others, "commit", "-q", "-m", "a lot of data")
    git(remotes.others, "push", "-q", f"{served}/project.git", "main")
    with SmartHttpRemote(served) as remote:
        git(remotes.work, "remote", "add", "web", f"{remote.url}/project.git")
        yield remote


def tasks_server(remotes, web):
    return make_server(
        remotes.root,
        allow_write=True,
        exposure=Exposure(toolsets=("default", "remote")),
        remote=RemoteSettings(
            protocols=ALL_PROTOCOLS,
            token=TOKEN,
            token_env="DOCKYARD_TEST_REMOTE_TOKEN",
            token_hosts=(web.url.removeprefix("http://"),),
            operator_environment=operator_environment(remotes.home),
        ),
        tasks=True,
    )


def partial_packs(repo: Path) -> list[Path]:
    return sorted((repo / ".git" / "objects" / "pack").glob("tmp_*"))


def processes_in(folder: Path) -> list[str]:
    """The command lines of the processes working in ``folder`` (git and the helpers it starts)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if Path(os.readlink(entry / "cwd")) == folder:
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:  # gone, or not ours to read
            continue
    return found


async def test_a_fetch_runs_as_a_task_the_client_polls_while_the_remote_stalls(remotes, web):
    web.stall = threading.Event()
    async with Client(tasks_server(remotes, web)) as client:
        task = await call_tool_task(client, "git_fetch", {"remote": "web", "repo_path": "work"})
        await until(web.stalled.is_set, "the remote to hold the pack")
        assert (await task.status()).status == "working"
        web.stall.set()
        final = await task.wait(timeout=60)
        assert final.status == "completed", final
        fetched = (await task.result()).structured_content
    theirs = head_of(web.root / "project.git", "refs/heads/main")
    assert any(r["ref"] == "web/main" and r["new"] == theirs for r in fetched["moved"])


async def test_a_cancelled_fetch_leaves_no_git_child_and_no_partial_pack(remotes, web):
    web.stall = threading.Event()
    async with Client(tasks_server(remotes, web)) as client:
        task = await call_tool_task(client, "git_fetch", {"remote": "web", "repo_path": "work"})
        await until(web.stalled.is_set, "the remote to hold the pack")
        await until(lambda: partial_packs(remotes.work), "half a pack on disk")
        assert processes_in(remotes.work)  # git fetch (and index-pack) are running
        await task.cancel()
        assert (await task.status()).status == "cancelled"
        await until(lambda: not processes_in(remotes.work), "the git processes to be gone")
        await until(lambda: not partial_packs(remotes.work), "the partial pack to be removed")
        assert head_of(remotes.work, "refs/remotes/web/main") is None  # nothing half-fetched was recorded
        web.stall.set()
        again = await client.call_tool("git_fetch", {"remote": "web", "repo_path": "work"})  # fine afterwards
    assert head_of(remotes.work, "refs/remotes/web/main") == head_of(
        web.root / "project.git", "refs/heads/main"
    )
    assert not again.is_error


async def test_pull_and_push_run_as_tasks_and_every_era_still_gets_plain_calls(remotes, web, era):
    server = tasks_server(remotes, web)

    async def never_asked(message, response_type, params, context):
        raise AssertionError(f"a push to a new branch asked the user: {message}")

    async with Client(server, elicitation_handler=never_asked) as client:  # declares elicitation
        pulled = await call_tool_task(client, "git_pull", {"remote": "web", "repo_path": "work"})
        assert (await pulled.result()).structured_content["outcome"] == "fast-forwarded"
        git(remotes.work, "checkout", "-q", "-b", "feature")
        mine = commit(remotes.work, "mine.txt")
        pushed = await call_tool_task(
            client, "git_push", {"remote": "web", "set_upstream": True, "repo_path": "work"}
        )
        assert (await pushed.result()).structured_content["outcome"] == "new branch"
    assert head_of(web.root / "project.git", "refs/heads/feature") == mine
    async with Client(server) as client:  # no elicitation: git_push (which may ask) is a plain call
        with pytest.raises(ToolError, match="did not run as a task"):
            await call_tool_task(client, "git_push", {"remote": "web", "repo_path": "work"})
    mine = commit(remotes.work, "again.txt")
    async with open_session(server, era=era) as session:  # the harness's client, either era: a plain answer
        outcome = await session.call_ok("git_push", {"remote": "web", "repo_path": "work"})
    assert outcome.data["outcome"] == "fast-forward"
    assert head_of(web.root / "project.git", "refs/heads/feature") == mine


@pytest.mark.parametrize("accept", [True, False])
async def test_a_push_to_a_protected_branch_asks_the_user_from_inside_the_task(remotes, web, accept):
    asked = []

    async def elicitation(message, response_type, params, context):
        asked.append(message)
        return {"confirm": accept}

    async with Client(tasks_server(remotes, web), elicitation_handler=elicitation) as client:
        await (await call_tool_task(client, "git_pull", {"remote": "web", "repo_path": "work"})).result()
        mine = commit(remotes.work, "protected.txt")
        pushed = await call_tool_task(
            client, "git_push", {"remote": "web", "branch": "main", "repo_path": "work"}, raise_on_error=False
        )
        result = await pushed.result()
    assert asked and "main" in asked[0]
    if accept:
        assert result.structured_content["outcome"] == "fast-forward", result
        assert head_of(web.root / "project.git", "refs/heads/main") == mine
    else:
        assert result.is_error and "declined" in result.content[0].text
        assert head_of(web.root / "project.git", "refs/heads/main") != mine
