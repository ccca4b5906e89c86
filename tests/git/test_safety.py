"""Hostile repositories and hostile arguments: refused or harmless, judged by the absence of side effects."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.git.conftest import git, make_repo, make_server
from tests.harness import open_session


def plant_hostile_config(repo: Path, markers: Path) -> None:
    """Every command a repository's own config or hooks can name, each touching its own marker file."""
    markers.mkdir(exist_ok=True)

    def cmd(name: str) -> str:
        return f"touch {markers / name}"

    include = repo / "included.cfg"
    include.write_text(f"[core]\n\tfsmonitor = {cmd('include-fsmonitor')}\n")
    settings = {
        "core.fsmonitor": cmd("fsmonitor"),
        "core.pager": cmd("pager"),
        "core.editor": cmd("editor"),
        "core.sshCommand": cmd("ssh"),
        "core.askPass": cmd("askpass"),
        "core.alternateRefsCommand": cmd("alternate-refs"),
        "core.hooksPath": str(repo / ".git" / "hooks"),
        "sequence.editor": cmd("sequence-editor"),
        "pager.log": cmd("pager-log"),
        "pager.diff": cmd("pager-diff"),
        "pager.show": cmd("pager-show"),
        "pager.grep": cmd("pager-grep"),
        "diff.external": cmd("diff-external"),
        "diff.evil.textconv": cmd("textconv"),
        "diff.evil.command": cmd("diff-command"),
        "filter.evil.clean": cmd("clean"),
        "filter.evil.smudge": cmd("smudge"),
        "filter.evil.process": cmd("process"),
        "filter.evil.required": "true",
        "merge.evil.driver": cmd("merge-driver"),
        "credential.helper": "!" + cmd("credential"),
        "gpg.program": cmd("gpg"),
        "commit.gpgSign": "true",
        "log.showSignature": "true",
        "status.showUntrackedFiles": "all",
        "include.path": str(include),
    }
    for key, value in settings.items():
        git(repo, "config", key, value)
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for hook in (
        "pre-commit",
        "commit-msg",
        "post-commit",
        "post-checkout",
        "pre-auto-gc",
        "reference-transaction",
        "post-index-change",
        "prepare-commit-msg",
        "fsmonitor-watchman",
    ):
        script = hooks / hook
        script.write_text(f"#!/bin/sh\n{cmd('hook-' + hook)}\n")
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    (repo / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")


@pytest.fixture
def hostile(tmp_path) -> tuple[Path, Path, Path]:
    """A folder root holding a normal repository and, nested inside it, a hostile one."""
    root = tmp_path / "root"
    outer = make_repo(root / "outer")
    # The hostile repository is committed with the test's own (unhardened) git before its config turns hostile.
    nested = make_repo(outer / "vendor" / "planted")
    markers = tmp_path / "markers"
    plant_hostile_config(nested, markers)
    (nested / "README.md").write_text("modified in the work tree\n")
    return root, nested, markers


async def test_no_tool_runs_a_command_a_planted_repository_names(hostile, era):
    root, nested, markers = hostile
    async with open_session(make_server(root, allow_write=True), era=era) as session:
        listing = (await session.call_ok("git_repositories")).data["repositories"]
        assert str(nested) in {r["path"] for r in listing}
        target = {"repo_path": str(nested)}
        calls = [
            ("git_status", {}),
            ("git_log", {"max_count": 5}),
            ("git_log", {"paths": ["README.md"]}),
            ("git_diff", {}),
            ("git_diff", {"mode": "stat"}),
            ("git_diff", {"base": "HEAD~1", "target": "HEAD"}),
            ("git_show", {"revision": "HEAD"}),
            ("git_show", {"revision": "HEAD", "path": "README.md"}),
            ("git_blame", {"path": "README.md"}),
            ("git_branches", {"kind": "all"}),
            ("git_tags", {}),
            ("git_grep", {"pattern": "version"}),
            ("git_add", {"paths": ["README.md"]}),
            ("git_unstage", {"paths": ["README.md"]}),
            ("git_add", {"paths": ["."]}),
            ("git_commit", {"message": "commit in a hostile repository"}),
            ("git_create_branch", {"name": "side", "switch": True}),
            ("git_checkout", {"branch": "main"}),
            ("git_stash", {"action": "list"}),
        ]
        for name, arguments in calls:
            await session.call(name, {**arguments, **target})
        (nested / "README.md").write_text("more work\n")
        await session.call("git_stash", {"action": "push", **target})
        await session.call("git_stash", {"action": "pop", **target})
        await session.read_resource("git://planted/status")
        await session.read_resource("git://planted/file/HEAD/README.md")
        await session.get_prompt("commit_message", {"repo_path": str(nested)})
    fired = sorted(p.name for p in markers.iterdir())
    assert fired == [], f"commands from the planted repository ran: {fired}"
    assert git(nested, "log", "-1", "--format=%s").strip() == "commit in a hostile repository"


async def test_core_worktree_cannot_move_git_outside_the_repository(tmp_path, era):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    repo = make_repo(tmp_path / "root" / "repo")
    git(repo, "config", "core.worktree", str(outside))
    async with open_session(make_server(tmp_path / "root", allow_write=True), era=era) as session:
        status = (await session.call_ok("git_status")).data
        await session.call("git_add", {"paths": ["."]})
        grep = (await session.call_ok("git_grep", {"pattern": "secret"})).data
    assert "secret.txt" not in status["untracked"]
    assert grep["matches"] == []
    assert "secret.txt" not in git(repo, "-c", "core.worktree=" + str(repo), "ls-files")


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("git_status", {"repo_path": "/etc"}),
        ("git_status", {"repo_path": "../"}),
        ("git_status", {"repo_path": "../../"}),
        ("git_show", {"path": "../../../etc/passwd"}),
        ("git_show", {"path": "/etc/passwd"}),
        ("git_show", {"revision": "HEAD:../../etc/passwd"}),
        ("git_blame", {"path": "link-out/passwd"}),
        ("git_show", {"path": "link-out/passwd"}),
        ("git_log", {"paths": ["../outside"]}),
        ("git_diff", {"paths": ["link-out"]}),
        ("git_grep", {"pattern": "root", "paths": ["/etc"]}),
        ("git_add", {"paths": ["../escape.txt"]}),
        ("git_add", {"paths": ["link-out/passwd"]}),
    ],
)
async def test_paths_that_leave_the_root_are_refused(tmp_path, tool, arguments):
    repo = make_repo(tmp_path / "project")
    os.symlink("/etc", repo / "link-out")
    (tmp_path / "escape.txt").write_text("outside")
    async with open_session(make_server(repo, allow_write=True)) as session:
        text = await session.call_error(tool, arguments)
    assert text.startswith(("Error (permission_denied)", "Error (not_found)")), text
    assert "root:" not in text  # nothing of /etc/passwd came back
    assert "escape.txt" not in git(repo, "ls-files")


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("git_log", {"revision_range": "--output=/tmp/dockyard-pwned"}),
        ("git_log", {"revision_range": "HEAD..--output=/tmp/dockyard-pwned"}),
        ("git_diff", {"base": "--output=/tmp/dockyard-pwned"}),
        ("git_show", {"revision": "--output=/tmp/dockyard-pwned"}),
        ("git_blame", {"path": "--output=/tmp/dockyard-pwned"}),
        ("git_branches", {"contains": "--output=/tmp/dockyard-pwned"}),
        ("git_grep", {"pattern": "x", "revision": "--open-files-in-pager=touch /tmp/dockyard-pwned"}),
        ("git_create_branch", {"name": "--force"}),
        ("git_create_branch", {"name": "ok", "start_point": "--orphan"}),
        ("git_checkout", {"branch": "--orphan=x"}),
        ("git_add", {"paths": ["--chmod=+x"]}),
        ("git_status", {"repo_path": "--git-dir=/tmp"}),
    ],
)
async def test_option_like_values_are_refused(repo, tool, arguments):
    marker = Path("/tmp/dockyard-pwned")
    marker.unlink(missing_ok=True)
    async with open_session(make_server(repo, allow_write=True)) as session:
        text = await session.call_error(tool, arguments)
    assert "may not start with '-'" in text or text.startswith("Error (not_found)"), text
    assert not marker.exists()


async def test_patterns_and_filters_that_look_like_options_are_only_data(repo):
    marker = Path("/tmp/dockyard-pwned")
    marker.unlink(missing_ok=True)
    async with open_session(make_server(repo)) as session:
        grep = (
            await session.call_ok("git_grep", {"pattern": "--open-files-in-pager=touch /tmp/dockyard-pwned"})
        ).data
        log = (
            await session.call_ok("git_log", {"author": "--output=/tmp/dockyard-pwned", "grep": "--all"})
        ).data
    assert grep["matches"] == [] and log["commits"] == []
    assert not marker.exists()


async def test_a_nested_bare_repository_is_not_served_unless_a_root_names_it(tmp_path, era):
    root = tmp_path / "root"
    make_repo(root / "normal")
    bare = root / "stash.git"
    git(tmp_path, "clone", "-q", "--bare", str(root / "normal"), str(bare))
    markers = tmp_path / "markers"
    markers.mkdir()
    git(bare, "config", "core.fsmonitor", f"touch {markers / 'fsmonitor'}")
    async with open_session(make_server(root), era=era) as session:
        names = {r["name"] for r in (await session.call_ok("git_repositories")).data["repositories"]}
        refused = await session.call_error("git_log", {"repo_path": str(bare)})
    assert names == {"normal"}
    assert refused.startswith("Error (not_found)")
    async with open_session(make_server(bare), era=era) as session:
        log = (await session.call_ok("git_log", {"max_count": 1})).data
        status = await session.call_error("git_status")
    assert log["commits"][0]["subject"] == "change number 2" and "bare" in status
    assert list(markers.iterdir()) == []


async def test_a_git_file_pointing_outside_the_roots_is_not_served(tmp_path):
    elsewhere = make_repo(tmp_path / "elsewhere")
    root = tmp_path / "root"
    (root / "decoy").mkdir(parents=True)
    (root / "decoy" / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n")
    async with open_session(make_server(root)) as session:
        text = await session.call_error("git_log", {"repo_path": "decoy"})
    assert text.startswith("Error (not_found)")


async def test_a_symlinked_folder_leaving_the_root_is_not_scanned(tmp_path):
    make_repo(tmp_path / "outside-repo")
    root = tmp_path / "root"
    make_repo(root / "inside")
    os.symlink(tmp_path / "outside-repo", root / "link")
    async with open_session(make_server(root)) as session:
        names = {r["name"] for r in (await session.call_ok("git_repositories")).data["repositories"]}
        text = await session.call_error("git_status", {"repo_path": "link"})
    assert names == {"inside"} and text.startswith(("Error (not_found)", "Error (permission_denied)"))
