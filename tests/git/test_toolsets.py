"""Which git tools are served: the toolsets and the common selection flags, through the protocol."""

from __future__ import annotations

import subprocess

import pytest

from dockyard_git.__main__ import entry
from tests.git.fake_github import TOKEN
from tests.git.tool_names import (
    GITHUB_TOOLS,
    GITHUB_WRITE_TOOLS,
    MERGING_TOOLS,
    READ_TOOLS,
    REMOTE_TOOLS,
    SEARCH_TOOLS,
    TAG_TOOLS,
    WORKTREE_TOOLS,
    WRITE_TOOLS,
)
from tests.harness import Launch, open_session


def server(repo, *flags: str, token: str | None = None, monkeypatch=None):
    """The server the command line builds (the flags as an operator types them)."""
    if token is None:
        monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    else:
        monkeypatch.setenv("GITHUB_TOKEN", token)
    return entry.build(entry.parser(with_runner=False).parse_args(["--root", str(repo), *flags]))


@pytest.mark.parametrize(
    ("flags", "token", "served"),
    [
        ((), None, READ_TOOLS),
        ((), TOKEN, READ_TOOLS | GITHUB_TOOLS),
        (("--allow-write",), None, READ_TOOLS | WRITE_TOOLS),
        (("--toolsets", "write"), None, WRITE_TOOLS),
        (
            ("--toolsets", "all"),
            TOKEN,
            READ_TOOLS
            | SEARCH_TOOLS
            | WRITE_TOOLS
            | GITHUB_TOOLS
            | GITHUB_WRITE_TOOLS
            | REMOTE_TOOLS
            | WORKTREE_TOOLS
            | MERGING_TOOLS
            | TAG_TOOLS,
        ),
        (
            ("--toolsets", "default,worktrees,merging,tags"),
            None,
            READ_TOOLS | WORKTREE_TOOLS | MERGING_TOOLS | TAG_TOOLS,
        ),
        (
            ("--toolsets", "all"),
            None,
            READ_TOOLS
            | SEARCH_TOOLS
            | WRITE_TOOLS
            | REMOTE_TOOLS
            | WORKTREE_TOOLS
            | MERGING_TOOLS
            | TAG_TOOLS,
        ),
        # The lookups off by default: one tool by name, or the search toolset beside the default ones.
        (("--tools", "git_tags"), None, READ_TOOLS | {"git_tags"}),
        (("--toolsets", "default,search", "--read-only"), None, READ_TOOLS | SEARCH_TOOLS),
        (("--toolsets", "tags", "--read-only"), None, {"git_tags", "git_tag_verify"}),
        (("--toolsets", "default,github_write"), TOKEN, READ_TOOLS | GITHUB_TOOLS | GITHUB_WRITE_TOOLS),
        (("--allow-write", "--read-only"), TOKEN, READ_TOOLS | GITHUB_TOOLS),
        (("--tools", "git_commit,git_add"), None, READ_TOOLS | {"git_commit", "git_add"}),
        (("--toolsets", "github", "--exclude-tools", "github_issue"), TOKEN, GITHUB_TOOLS - {"github_issue"}),
    ],
)
async def test_the_selection_flags_decide_which_tools_exist(repo, era, monkeypatch, flags, token, served):
    async with open_session(server(repo, *flags, token=token, monkeypatch=monkeypatch), era=era) as session:
        listed = await session.tool_names()
    assert listed == served


async def test_a_tool_left_out_cannot_be_called(repo, era, monkeypatch):
    built = server(
        repo, "--allow-write", "--read-only", "--exclude-tools", "git_log", monkeypatch=monkeypatch
    )
    async with open_session(built, era=era) as session:
        for name in ("git_log", "git_commit"):
            outcome = await session.call(name, {"message": "x"} if name == "git_commit" else {})
            assert outcome.is_error and "switched off" in outcome.text, name
        assert (await session.call_ok("git_status")).data["branch"] == "main"


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (("--toolsets", "github"), "needs a GitHub token in $GITHUB_TOKEN"),
        (("--toolsets", "github_write"), "needs a GitHub token in $GITHUB_TOKEN (--github-token-env"),
        (
            ("--toolsets", "writes"),
            "Valid toolsets: github, github_write, merging, read, remote, search, tags, worktrees, write",
        ),
        (("--tools", "git_frobnicate"), "Valid tools:"),
        (("--tools", "git_push"), "git_push is served only together with the write toolset"),
    ],
)
def test_an_impossible_selection_stops_start_up_saying_why(repo, flags, expected):
    launch = Launch("dockyard-git", ("--root", str(repo), *flags), env={"GITHUB_TOKEN": ""})
    result = subprocess.run(
        launch.command(),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env=launch.environment(),
    )
    assert result.returncode == 2 and expected in result.stderr and "Traceback" not in result.stderr
