"""Which roots are served as bare repositories (gitcmd/bare.py), as a client sees it.

Only a root may name a bare repository. It is one when it looks like a git directory of its own (HEAD,
objects, refs, no commondir) and its own config says ``core.bare = true``, read from a regular file by a
bounded git that opens nothing else. Everything here goes through an MCP session.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.git.helpers import git, make_repo, make_server
from tests.harness import ERAS, open_session

PATIENCE_S = 120


def bare_clone(source: Path, target: Path) -> Path:
    git(source.parent, "clone", "-q", "--bare", str(source), str(target))
    return target


async def listing(root: Path, era: str) -> list[dict]:
    async with open_session(make_server(root), era=era, timeout=PATIENCE_S) as session:
        return (await session.call_ok("git_repositories")).data["repositories"]


@pytest.mark.parametrize("era", ERAS)
async def test_a_root_that_is_a_bare_repository_is_served_as_one(tmp_path, era):
    bare = bare_clone(make_repo(tmp_path / "seed"), tmp_path / "project.git")
    async with open_session(make_server(bare), era=era, timeout=PATIENCE_S) as session:
        repositories = (await session.call_ok("git_repositories")).data["repositories"]
        log = (await session.call_ok("git_log", {"max_count": 1})).data
        status = await session.call_error("git_status")
        resource = await session.read_resource("git://project.git/log")
    assert [(r["name"], r["bare"]) for r in repositories] == [("project.git", True)]
    assert log["commits"][0]["subject"] == "change number 2"
    assert "bare repository" in status and "no working tree" in status
    assert "change number 2" in resource


@pytest.mark.parametrize("era", ERAS)
async def test_a_work_tree_root_is_served_with_its_work_tree_not_as_bare(tmp_path, era):
    repo = make_repo(tmp_path / "project")
    async with open_session(make_server(repo), era=era, timeout=PATIENCE_S) as session:
        repositories = (await session.call_ok("git_repositories")).data["repositories"]
        status = (await session.call_ok("git_status")).data
    assert [(r["name"], r["bare"]) for r in repositories] == [("project", False)]
    assert status["branch"] == "main"


async def test_a_git_directory_whose_config_says_core_bare_false_is_not_served_as_bare(tmp_path):
    # A work tree's own .git named as a root: it looks like a git directory, but its config says
    # core.bare = false, so it is not served as a bare repository (and, being no work tree, not at all).
    repo = make_repo(tmp_path / "project")
    assert git(repo, "config", "--get", "core.bare").strip() == "false"
    assert await listing(repo / ".git", "2026-07-28") == []
    # The same for a bare clone whose config was flipped to core.bare = false.
    flipped = bare_clone(repo, tmp_path / "flipped.git")
    git(flipped, "config", "core.bare", "false")
    assert await listing(flipped, "2025-11-25") == []
    git(flipped, "config", "core.bare", "true")  # and back: now it is one
    assert [r["bare"] for r in await listing(flipped, "2025-11-25")] == [True]


async def test_a_linked_work_trees_git_directory_is_not_bare_and_the_work_tree_is_served(tmp_path):
    repo = make_repo(tmp_path / "both" / "main")
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "both" / "linked"))
    linked_git_dir = repo / ".git" / "worktrees" / "linked"
    assert (linked_git_dir / "commondir").exists()
    # The linked work tree's git directory has HEAD (and refs of its own) but shares the objects
    # (commondir): never a bare repository of its own, whatever the shared config says.
    git(repo, "config", "core.bare", "true")
    try:
        assert await listing(linked_git_dir, "2026-07-28") == []
    finally:
        git(repo, "config", "core.bare", "false")
    # A bare repository with a commondir file, as a linked work tree's git directory has (here naming
    # itself, so it leads nowhere outside the root): still not a repository of its own, never bare.
    shared = bare_clone(repo, tmp_path / "shared.git")
    (shared / "commondir").write_text(".\n")
    assert await listing(shared, "2025-11-25") == []
    (shared / "commondir").unlink()
    assert [r["bare"] for r in await listing(shared, "2025-11-25")] == [True]
    served = await listing(tmp_path / "both", "2026-07-28")
    assert sorted((r["name"], r["bare"], r["branch"]) for r in served) == [
        ("linked", False, "side"),
        ("main", False, "main"),
    ]


async def test_a_config_that_is_a_fifo_does_not_hang_the_check(tmp_path):
    bare = bare_clone(make_repo(tmp_path / "seed"), tmp_path / "project.git")
    os.unlink(bare / "config")
    os.mkfifo(bare / "config")  # git would wait on it for a writer until its time limit
    server = make_server(bare, git_timeout_s=90)
    started = time.monotonic()
    async with open_session(server, timeout=PATIENCE_S) as session:
        repositories = (await session.call_ok("git_repositories")).data["repositories"]
        refused = await session.call_error("git_log", {"max_count": 1})
    # Not bare (never opened), so nothing is served; far sooner than a git waiting on the FIFO would stop.
    assert repositories == [] and "No git repository was found" in refused
    assert time.monotonic() - started < 45


async def test_a_huge_config_is_answered_within_the_limits_not_read_whole(tmp_path):
    bare = bare_clone(make_repo(tmp_path / "seed"), tmp_path / "project.git")
    # core.bare = true first, then 40 MB of entries: more than any config listing may print.
    with open(bare / "config", "a") as config:
        config.write("[filler]\n")
        line = "\tkey = " + "x" * 200 + "\n"
        config.write(line * (40_000_000 // len(line)))
    async with open_session(make_server(bare), era="2026-07-28", timeout=PATIENCE_S) as session:
        repositories = (await session.call_ok("git_repositories")).data
        log = await session.call("git_log", {"max_count": 1})
    # It is a bare repository by its config, but one whose config is too large to check is refused.
    assert repositories["repositories"] == []
    assert log.is_error and "too large" in log.text, log.text
