"""Hostile repositories, second round (issue 12): submodules, reads through symlinked folders, loose objects
that link out. Each is judged by what must never happen: a marker file written by a command the repository
names, or another file's content in a result."""

from __future__ import annotations

import os
import shutil
import stat
from functools import partial
from pathlib import Path

import pytest

from dockyard_git.gitcmd import GitRunner, layout
from dockyard_git.operations.worktree_links import LinkedFolders
from dockyard_shared import PermissionDenied
from tests.git import helpers
from tests.git.helpers import git, make_repo
from tests.git.test_safety import assert_refused_beside_normal, exercise, fired, secret_repository
from tests.harness import open_session

# git_blame, git_grep and git_tags are off by default; every test here serves them too.
make_server = partial(helpers.make_server, toolsets=helpers.LOOKUPS)

# -- submodules ----------------------------------------------------------------------------------


def plant_submodule_commands(git_dir: Path, markers: Path) -> None:
    """Name a command, each touching its own marker, at every point a submodule's own config offers."""
    markers.mkdir(exist_ok=True)

    def cmd(name: str) -> str:
        return f"touch {markers / name}"

    include = git_dir / "included.cfg"
    include.write_text(f'[filter "included"]\n\tclean = {cmd("include-clean")}\n')
    hooks = git_dir / "evil-hooks"
    hooks.mkdir(exist_ok=True)
    for hook in ("post-index-change", "post-checkout", "pre-commit", "reference-transaction"):
        script = hooks / hook
        script.write_text(f"#!/bin/sh\n{cmd('hook-' + hook)}\n")
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    settings = {
        "filter.evil.clean": cmd("clean"),
        "filter.evil.smudge": cmd("smudge"),
        "filter.evil.process": cmd("process"),
        "filter.evil.required": "true",
        "diff.evil.textconv": cmd("textconv"),
        "diff.evil.command": cmd("diff-command"),
        "diff.external": cmd("diff-external"),
        "core.fsmonitor": cmd("fsmonitor"),
        "core.pager": cmd("pager"),
        "core.hooksPath": str(hooks),
        "core.alternateRefsCommand": cmd("alternate-refs"),
        "status.submoduleSummary": "true",
        "include.path": str(include),
    }
    config = git_dir / "config"
    for key, value in settings.items():
        git(git_dir, "config", "--file", str(config), key, value)


def make_superproject(root: Path, markers: Path) -> tuple[Path, Path]:
    """A repository with a populated submodule ``sub`` (and one nested inside it, ``sub/inner``), both
    dirty, whose git directories under ``.git/modules`` name a command everywhere they can.
    ``.gitmodules`` asks git to look into the submodules (``ignore = none``)."""
    inner_source = make_repo(root.parent / "inner-source", commits=1)
    (inner_source / ".gitattributes").write_text("* filter=evil diff=evil\n")
    git(inner_source, "add", ".gitattributes")
    git(inner_source, "commit", "-q", "-m", "attributes")
    source = make_repo(root.parent / "sub-source", commits=1)
    (source / ".gitattributes").write_text("* filter=evil diff=evil\nREADME.md filter=included\n")
    git(source, "add", ".gitattributes")
    git(source, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner_source), "inner")
    git(source, "commit", "-q", "-m", "attributes and a nested submodule")
    superproject = make_repo(root / "super")
    git(superproject, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(source), "sub")
    git(
        superproject, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init", "--recursive"
    )
    git(superproject, "config", "--file", ".gitmodules", "submodule.sub.ignore", "none")
    git(superproject, "add", ".gitmodules")
    git(superproject, "commit", "-q", "-m", "add a submodule")
    modules = superproject / ".git" / "modules"
    plant_submodule_commands(modules / "sub", markers)
    plant_submodule_commands(modules / "sub" / "modules" / "inner", markers)
    for work_tree in (superproject / "sub", superproject / "sub" / "inner"):
        (work_tree / "README.md").write_text("modified inside the submodule\n")
        (work_tree / "untracked.txt").write_text("new inside the submodule\n")
    (superproject / "README.md").write_text("modified in the superproject\n")
    return superproject, modules


@pytest.fixture
def superproject(tmp_path) -> tuple[Path, Path, Path]:
    root = tmp_path / "root"
    markers = tmp_path / "markers"
    repo, _ = make_superproject(root, markers)
    return root, repo, markers


def trace_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put a ``git`` first on PATH that logs, through GIT_TRACE, every git process the server's git starts
    (GIT_TRACE is inherited by git's own children). The server must be made after this."""
    real = shutil.which("git")
    folder = tmp_path / "traced-git"
    folder.mkdir()
    log = tmp_path / "git-trace.log"
    wrapper = folder / "git"
    wrapper.write_text(f'#!/bin/sh\nGIT_TRACE="{log}" exec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return log


def children_started_elsewhere(log: Path) -> list[str]:
    """The git processes a git of ours started in another directory (``cd <dir>;``: a submodule) or in
    another repository (``GIT_DIR=.git``)."""
    if not log.exists():
        return []
    return [
        line.split("trace: ", 1)[-1]
        for line in log.read_text(errors="replace").splitlines()
        if "run_command:" in line and ("cd " in line or "GIT_DIR=" in line)
    ]


async def test_no_tool_runs_a_command_a_submodules_config_names(superproject, tmp_path, monkeypatch, era):
    root, repo, markers = superproject
    trace = trace_git(tmp_path, monkeypatch)
    async with open_session(make_server(root, allow_write=True), era=era) as session:
        text = await exercise(session, repo, writes=True)
        await session.call_ok("git_add", {"repo_path": str(repo), "paths": ["."]})
        await session.call_ok("git_commit", {"repo_path": str(repo), "message": "everything"})
    assert fired(markers) == [], f"commands from a submodule's config ran: {fired(markers)}"
    assert "built-in: git status" in trace.read_text()  # the traced git was the one the server ran
    assert children_started_elsewhere(trace) == []
    assert "modified inside the submodule" not in text
    assert git(repo, "log", "-1", "--format=%s").strip() == "everything"


async def test_status_reports_a_submodule_from_its_recorded_commit(superproject):
    root, repo, markers = superproject
    sub = repo / "sub"
    # The submodule moves on to a new commit (plumbing: the test's own git must not run its filters).
    moved = git(sub, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "moved on").strip()
    git(sub, "update-ref", "HEAD", moved)
    for marker in markers.iterdir():
        marker.unlink()  # the test's own git just ran the submodule's hook: only the server's calls count
    async with open_session(make_server(root)) as session:
        before = (await session.call_ok("git_status", {"repo_path": str(repo)})).data
        git(repo, "update-index", "--cacheinfo", f"160000,{moved},sub")  # records the new commit
        after = (await session.call_ok("git_status", {"repo_path": str(repo)})).data
        staged_diff = (await session.call_ok("git_diff", {"repo_path": str(repo), "staged": True})).data
        unstaged_diff = (await session.call_ok("git_diff", {"repo_path": str(repo)})).data
    # Before: the checked-out commit differs from the recorded one, which is the submodule's own state.
    assert "sub" not in {c["path"] for c in before["staged"] + before["unstaged"]}
    assert "sub" not in {f["path"] for f in unstaged_diff["files"]}
    assert {"path": "sub", "status": "M", "submodule": True} in [
        {k: c.get(k) for k in ("path", "status", "submodule")} for c in after["staged"]
    ]
    assert "sub" in {f["path"] for f in staged_diff["files"]}
    assert "Subproject commit" in staged_diff["patch"]
    assert "submodule" in (after["note"] or "").lower()
    assert fired(markers) == []


def test_a_git_that_git_starts_in_a_submodule_is_stopped_before_it_reads_anything(superproject):
    # The tools never ask for this (they leave submodules out of git add); the gatekeeper is the backstop.
    root, repo, markers = superproject
    runner = GitRunner()
    runner.confine_to([root])
    with pytest.raises(PermissionDenied, match="inside a submodule"):
        runner.run(repo / ".git", repo, ["add", "--", "."])
    assert fired(markers) == []
    assert git(repo, "diff", "--cached", "--name-only", "--ignore-submodules=all") == ""  # nothing staged


@pytest.mark.parametrize("entry", ["modules/sub/HEAD", "modules/sub/refs/heads", "worktrees/linked/HEAD"])
async def test_a_submodule_or_worktree_git_directory_linking_outside_is_refused(tmp_path, entry):
    private = make_repo(tmp_path / "private")
    git(private, "commit", "-q", "--allow-empty", "-m", "TOP SECRET subject")
    root = tmp_path / "root"
    repo, _ = make_superproject(root, tmp_path / "markers")
    git(repo, "worktree", "add", "-q", "-b", "linked", str(root / "linked"))
    planted = repo / ".git" / entry
    target = private / ".git" / entry.split("/", 2)[-1]
    shutil.rmtree(planted) if planted.is_dir() else planted.unlink()
    os.symlink(target, planted)
    async with open_session(make_server(root)) as session:
        names = {r["name"] for r in (await session.call_ok("git_repositories")).data["repositories"]}
        refused = await session.call_error("git_log", {"repo_path": str(repo)})
    assert "super" not in names
    assert refused.startswith("Error (permission_denied)") and "outside the folders" in refused, refused
    assert entry.split("/")[0] in refused


# -- reads through a symlinked folder --------------------------------------------------------------


@pytest.fixture
def linked_folder(tmp_path) -> tuple[Path, Path]:
    """A repository that tracks ``a/b`` (and ``a/c/d``) whose work-tree folder ``a`` was replaced by a
    link to a folder outside the root holding files of the same names."""
    outside = tmp_path / "outside"
    (outside / "c").mkdir(parents=True)
    for name in ("b", "c/d"):
        (outside / name).write_text("OUTSIDE SECRET line\n")
    root = tmp_path / "root"
    repo = make_repo(root / "repo")
    (repo / "a" / "c").mkdir(parents=True)
    (repo / "a" / "b").write_text("tracked SECRET-free line\n")
    (repo / "a" / "c" / "d").write_text("tracked line\n")
    (repo / "kept.txt").write_text("a SECRET kept inside\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a folder")
    shutil.rmtree(repo / "a")
    os.symlink(outside, repo / "a")
    return root, repo


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("git_grep", {"pattern": "SECRET"}),
        ("git_grep", {"pattern": "SECRET", "paths": ["kept.txt"]}),
        ("git_grep", {"pattern": "line", "ignore_case": True}),
        ("git_diff", {}),
        ("git_diff", {"mode": "stat"}),
        ("git_diff", {"base": "HEAD"}),
        ("git_diff", {"paths": ["kept.txt"]}),
        ("git_status", {}),
        ("git_blame", {"path": "a/b"}),
        ("git_blame", {"path": "kept.txt"}),
        ("git_show", {"revision": "HEAD", "path": "a/b"}),
    ],
)
async def test_no_tool_reads_a_file_through_a_linked_folder_leading_outside(linked_folder, tool, arguments):
    root, repo = linked_folder
    async with open_session(make_server(root)) as session:
        outcome = await session.call(tool, {"repo_path": str(repo), **arguments})
        try:
            resource = await session.read_resource("git://repo/file/HEAD/a/b")
        except Exception as error:  # refused: its text counts too
            resource = str(error)
    assert "OUTSIDE SECRET" not in outcome.text, outcome.text
    assert "OUTSIDE SECRET" not in resource


async def test_grep_drops_and_reports_what_lies_behind_a_linked_folder(linked_folder):
    root, repo = linked_folder
    async with open_session(make_server(root)) as session:
        found = (await session.call_ok("git_grep", {"repo_path": str(repo), "pattern": "SECRET"})).data
    assert [m["path"] for m in found["matches"]] == ["kept.txt"]
    assert "a/" in found["note"] and "link" in found["note"]


def test_linked_folders_are_found_outermost_first_and_remembered(tmp_path):
    work_tree = tmp_path / "tree"
    (work_tree / "x" / "y").mkdir(parents=True)
    (tmp_path / "elsewhere" / "c").mkdir(parents=True)
    os.symlink(tmp_path / "elsewhere", work_tree / "a")
    os.symlink(tmp_path / "elsewhere", work_tree / "x" / "y" / "z")
    links = LinkedFolders(str(work_tree))
    tracked = ["README.md", "a/b", "a/c/d", "x/file", "x/y/file", "x/y/z/deep/file"]
    assert links.topmost(tracked) == ["a", "x/y/z"]
    assert [links.behind_link(path) for path in tracked] == [False, True, True, False, False, True]


# -- loose object files that link out --------------------------------------------------------------


def plant_loose_object_link(planted: Path, private: Path, secret: str) -> None:
    """Make ``planted``'s loose object file for ``secret`` a link to ``private``'s, and point a branch at it."""
    fan_out = planted / ".git" / "objects" / secret[:2]
    fan_out.mkdir(exist_ok=True)
    os.symlink(private / ".git" / "objects" / secret[:2] / secret[2:], fan_out / secret[2:])
    (planted / ".git" / "refs" / "heads" / "secret").write_text(f"{secret}\n")


async def test_a_loose_object_file_linking_outside_the_roots_is_refused(tmp_path):
    private, secret = secret_repository(tmp_path / "private")
    root = tmp_path / "root"
    make_repo(root / "normal")
    planted = make_repo(root / "planted")
    plant_loose_object_link(planted, private, secret)
    (planted / ".git" / "HEAD").write_text("ref: refs/heads/secret\n")
    assert "TOP SECRET" in git(planted, "cat-file", "-p", secret)  # plain git reads it
    await assert_refused_beside_normal(root, planted, secret)


async def test_a_loose_object_link_planted_after_the_first_call_is_refused(tmp_path):
    private, secret = secret_repository(tmp_path / "private")
    root = tmp_path / "root"
    planted = make_repo(root / "planted")
    async with open_session(make_server(root)) as session:
        assert (await session.call_ok("git_log", {"max_count": 1})).data["commits"]
        plant_loose_object_link(planted, private, secret)
        refused = await session.call_error("git_log", {"revision_range": "secret", "max_count": 1})
    assert refused.startswith("Error (permission_denied)") and "TOP SECRET" not in refused, refused


async def test_a_loose_object_folder_past_the_scan_bound_is_refused(tmp_path, monkeypatch):
    # objects/ itself holds at most 256 fan-out folders, info and pack: under the bound.
    monkeypatch.setattr(layout, "_MAX_OBJECT_FOLDER_ENTRIES", 300)
    root = tmp_path / "root"
    repo = make_repo(root / "repo")
    fan_out = repo / ".git" / "objects" / "ab"
    fan_out.mkdir(exist_ok=True)
    for index in range(301):
        (fan_out / f"{index:038x}").write_bytes(b"")
    async with open_session(make_server(root)) as session:
        refused = await session.call_error("git_log", {"repo_path": str(repo)})
    assert (
        refused.startswith("Error (permission_denied)")
        and f"{fan_out} holds more than 300 entries" in refused
    ), refused
