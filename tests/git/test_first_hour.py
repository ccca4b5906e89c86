"""What a new user of dockyard-git meets first: a --root with no repository is said at start-up (the log) and
in every reply with a next step that can work; blame dates in git_log's form; a prompt that names only tools
this server serves."""

from __future__ import annotations

import re

import pytest

from tests.git.helpers import GIT_ENV, LOOKUPS, git, make_repo, make_server
from tests.harness import Launch, open_session

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$")


async def _stderr_line_containing(process, words: str) -> str:
    seen = []
    async for raw in process.stderr:  # waits for the line, no fixed sleep
        line = raw.decode(errors="replace")
        seen.append(line)
        if words in line:
            return line
    raise AssertionError("".join(seen))


@pytest.mark.parametrize(("repositories", "said"), [(0, "No git repository was found"), (2, "serving 2 git")])
async def test_the_log_says_at_start_up_what_root_holds(repositories, said, tmp_path):
    import anyio

    root = tmp_path / "work"
    root.mkdir()
    for i in range(repositories):
        make_repo(root / f"project{i}", commits=1)
    launch = Launch("dockyard-git", ("--root", str(root)), env={"XDG_DATA_HOME": str(tmp_path / "xdg")})
    async with await anyio.open_process(
        launch.command(), env=launch.environment(), stdin=-1, stdout=-1, stderr=-1
    ) as process:
        try:
            # The log line follows the client's first exchange (the scan runs off the path to initialize).
            init = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
            init += b'"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}\n'
            await process.stdin.send(init)
            with anyio.fail_after(60):
                line = await _stderr_line_containing(process, said)
        finally:
            process.terminate()
    assert str(root) in line
    if not repositories:
        assert "git init" in line and "--root <folder>" in line


async def test_a_root_without_a_repository_gives_a_next_step_that_can_work(tmp_path, era):
    (tmp_path / "empty").mkdir()
    async with open_session(make_server(tmp_path / "empty"), era=era) as session:
        listed = (await session.call_ok("git_repositories")).data
        refused = await session.call_error("git_log", {})
    assert listed["repositories"] == [] and "No git repository was found" in listed["note"]
    assert "No git repository was found in the served folder" in refused and "git init" in refused
    assert "start the server with --root" not in refused


async def test_blame_gives_the_same_iso_date_as_log_for_a_commit(tmp_path, era):
    repo = make_repo(tmp_path / "repo", commits=1)
    (repo / "zoned.txt").write_text("one line\n")
    git(repo, "add", "zoned.txt")
    env = {**GIT_ENV, "GIT_AUTHOR_DATE": "2024-03-01T10:00:00+0530"}
    import subprocess

    subprocess.run(["git", "commit", "-qm", "zoned"], cwd=repo, env=env, check=True)
    async with open_session(make_server(repo, toolsets=LOOKUPS), era=era) as session:
        blame = (await session.call_ok("git_blame", {"path": "zoned.txt"})).data
        log = (await session.call_ok("git_log", {"max_count": 1})).data
    blamed, logged = blame["lines"][0]["date"], log["commits"][0]["date"]
    assert ISO.match(blamed) and blamed == logged == "2024-03-01T10:00:00+05:30"


async def test_the_commit_message_prompt_names_git_add_only_where_it_is_served(tmp_path):
    repo = make_repo(tmp_path / "repo", commits=1)
    async with open_session(make_server(repo)) as session:
        read_only = " ".join(await session.get_prompt("commit_message", {}))
    async with open_session(make_server(repo, allow_write=True)) as session:
        writing = " ".join(await session.get_prompt("commit_message", {}))
    assert "Nothing is staged" in read_only and "git_add" not in read_only and "git add" in read_only
    assert "Nothing is staged" in writing and "git_add" in writing


async def test_a_page_of_one_commit_says_where_the_next_one_is(repo, era):
    server = make_server(repo)
    async with open_session(server, era=era) as session:
        page = (await session.call_ok("git_log", {"max_count": 1})).data
        last = (await session.call_ok("git_log", {"max_count": -1, "skip": 1})).data
    assert page["next_skip"] == 1 and "note" not in page, page
    assert "next_skip" not in last and "note" not in last  # the last page: nothing more to say
    # What next_skip is for is said once, in the instructions (and in the output schema).
    assert "pass next_skip/next_offset back as skip/offset" in server.instructions


async def test_an_error_raised_without_its_own_next_step_still_gives_one(repo, era):
    async with open_session(make_server(repo, toolsets=LOOKUPS), era=era) as session:
        refused = await session.call_error("git_blame", {"path": "README.md", "start": 5, "end": 2})
        pointless = await session.call_error("git_show", {"revision": "HEAD", "path": "src"})
    for text in (refused, pointless):
        assert "\nNext step: " in text, text
