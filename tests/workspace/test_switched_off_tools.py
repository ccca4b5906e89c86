"""A tool the server has but does not serve answers how to switch it on, on every server; a name no server
has still gets FastMCP's "Unknown tool"."""

from __future__ import annotations

import pytest

from dockyard_shared.cli import discover_servers
from tests.harness import REPO_ROOT, open_session

SERVERS = discover_servers()

CASES = [
    # server, flags, tool called, words the answer must hold
    ("sqlite", [], "execute", ["'write' toolset, which is off", "--allow-write", "--tools execute"]),
    ("git", [], "git_add", ["'write' toolset, which is off", "--allow-write"]),
    ("git", [], "git_fetch", ["'remote' toolset, which is off", "--allow-remote"]),
    ("tasks", ["--read-only"], "create_task", ["--read-only"]),
    (
        "tasks",
        ["--toolsets", "read"],
        "create_task",
        ["'write' toolset, which is off", "--toolsets default,write"],
    ),
    (
        "name-origin",
        ["--toolsets", "all", "--exclude-tools", "quota_status"],
        "quota_status",
        ["--exclude-tools"],
    ),
    ("name-origin", [], "predict_origin", ["'details' toolset, which is off", "--toolsets default,details"]),
]


def build(name: str, flags: list[str], monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    if name == "git":
        flags = [*flags, "--root", str(REPO_ROOT)]
    entry = SERVERS[name]
    return entry.build(entry.parser(with_runner=False).parse_args(flags))


@pytest.mark.parametrize(("name", "flags", "tool", "said"), CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
async def test_a_switched_off_tool_says_how_to_switch_it_on(
    name, flags, tool, said, era, monkeypatch, tmp_path
):
    async with open_session(build(name, flags, monkeypatch, tmp_path), era=era) as session:
        assert tool not in await session.tool_names()
        text = await session.call_error(tool, {})
    assert f"The tool '{tool}' exists but is switched off on this server" in text, text
    assert (
        "Unknown tool" not in text
        and "Next step: Tell the user: restart the server with its flags changed" in text
    )
    for words in said:
        assert words in text, text


async def test_the_github_toolset_without_a_token_says_why_it_cannot_be_served(monkeypatch, tmp_path):
    async with open_session(build("git", [], monkeypatch, tmp_path)) as session:
        text = await session.call_error("github_pull_requests", {})
    assert "'github' cannot be served here" in text and "GITHUB_TOKEN" in text, text


@pytest.mark.parametrize("name", sorted(SERVERS))
async def test_a_name_no_toolset_has_is_still_an_unknown_tool(name, monkeypatch, tmp_path):
    async with open_session(build(name, [], monkeypatch, tmp_path)) as session:
        text = await session.call_error("no_such_tool", {})
    assert "Unknown tool" in text and "switched off" not in text
