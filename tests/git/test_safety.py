"""Hostile repositories and hostile arguments: refused or harmless, judged by the absence of side effects."""

from __future__ import annotations

import os
import shutil
import stat
import time
from functools import partial
from pathlib import Path

import pytest

from tests.git import helpers
from tests.git.helpers import git, make_repo
from tests.harness import Session, open_session

# git_blame, git_grep and git_tags are off by default; every test here serves them too.
make_server = partial(helpers.make_server, toolsets=helpers.LOOKUPS)

READ_CALLS = [
    ("git_status", {}),
    ("git_log", {"max_count": 5}),
    ("git_log", {"paths": ["README.md"]}),
    ("git_diff", {}),
    ("git_diff", {"mode": "stat"}),
    ("git_diff", {"staged": True}),
    ("git_diff", {"base": "HEAD~1", "target": "HEAD"}),
    ("git_show", {"revision": "HEAD"}),
    ("git_show", {"revision": "HEAD", "path": "README.md"}),
    ("git_blame", {"path": "README.md"}),
    ("git_branches", {"kind": "all"}),
    ("git_tags", {}),
    ("git_grep", {"pattern": "version"}),
]
WRITE_CALLS = [
    ("git_add", {"paths": ["README.md"]}),
    ("git_unstage", {"paths": ["README.md"]}),
    ("git_add", {"paths": ["."]}),
    ("git_commit", {"message": "commit in a hostile repository"}),
    ("git_create_branch", {"name": "side", "switch": True}),
    ("git_checkout", {"branch": "main"}),
    ("git_stash", {"action": "list"}),
]


async def exercise(session: Session, repo: Path, *, writes: bool) -> str:
    """Every read tool, resource and prompt on ``repo`` — and every write tool when ``writes`` — whatever
    each answers; returns all the text that came back."""
    texts = [(await session.call("git_repositories")).text]
    target = {"repo_path": str(repo)}
    for name, arguments in READ_CALLS + (WRITE_CALLS if writes else []):
        texts.append((await session.call(name, {**arguments, **target})).text)
    if writes:
        (repo / "README.md").write_text("more work\n")
        for action in ("push", "pop"):
            texts.append((await session.call("git_stash", {"action": action, **target})).text)
    for uri in ("status", "log", "file/HEAD/README.md"):
        try:
            texts.append(await session.read_resource(f"git://{repo.name}/{uri}"))
        except Exception as error:  # a refused repository's resource is an error: its text counts too
            texts.append(str(error))
    for prompt, arguments in (
        ("commit_message", {}),
        ("summarize_changes", {}),
        ("review_branch", {"branch": "HEAD", "base": "HEAD~1"}),
    ):
        try:
            texts += await session.get_prompt(prompt, {**arguments, "repo_path": str(repo)})
        except Exception as error:
            texts.append(str(error))
    return "\n".join(texts)


def fired(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir()) if markers.exists() else []


def age(*paths: Path) -> None:
    """Date files an hour back, so the server caches what it computed from them at once (a file changed
    in the last moments is re-read on every call anyway) and only noticing a change can save it."""
    past = time.time() - 3600
    for path in paths:
        os.utime(path, (past, past))


def plant_filter(config: Path, driver: str, markers: Path) -> None:
    """Define a clean/smudge/process filter ``driver`` in ``config``, each command touching a marker."""
    markers.mkdir(exist_ok=True)
    for kind in ("clean", "smudge", "process"):
        git(
            config.parent,
            "config",
            "--file",
            str(config),
            f"filter.{driver}.{kind}",
            f"touch {markers / kind}",
        )


def plant_hostile_config(repo: Path, markers: Path) -> None:
    """Every command a repository's own config or hooks can name, each touching its own marker file."""
    markers.mkdir(exist_ok=True)

    def cmd(name: str) -> str:
        return f"touch {markers / name}"

    # An include (itself including a file by a relative path) defining filters and a textconv that
    # .gitattributes names for some files: only neutralised if the runner follows includes.
    include = repo / "included.cfg"
    include.write_text(
        f"[core]\n\tfsmonitor = {cmd('include-fsmonitor')}\n"
        f'[filter "included"]\n\tclean = {cmd("include-clean")}\n\tsmudge = {cmd("include-smudge")}\n'
        f"\tprocess = {cmd('include-process')}\n\trequired = true\n"
        f'[diff "included"]\n\ttextconv = {cmd("include-textconv")}\n\tcommand = {cmd("include-diff")}\n'
        "[include]\n\tpath = nested.cfg\n"
    )
    (repo / "nested.cfg").write_text(
        f'[filter "nested"]\n\tclean = {cmd("nested-clean")}\n\tsmudge = {cmd("nested-smudge")}\n'
    )
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
    (repo / ".gitattributes").write_text(
        "* filter=evil diff=evil merge=evil\nREADME.md filter=included diff=included\n*.py filter=nested\n"
    )


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
    (nested / "src" / "app.py").write_text("modified in the work tree\n")
    return root, nested, markers


async def test_no_tool_runs_a_command_a_planted_repository_names(hostile, era):
    root, nested, markers = hostile
    async with open_session(make_server(root, allow_write=True), era=era) as session:
        listing = (await session.call_ok("git_repositories")).data["repositories"]
        assert str(nested) in {r["path"] for r in listing}
        await exercise(session, nested, writes=True)
    assert fired(markers) == [], f"commands from the planted repository ran: {fired(markers)}"
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


# -- config that names a command where the old overrides did not look -----------------------------


def modified_repo(path: Path, attributes: str) -> Path:
    """A repository with ``.gitattributes`` committed and README.md then modified in the work tree."""
    repo = make_repo(path)
    (repo / ".gitattributes").write_text(attributes)
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-q", "-m", "attributes")
    (repo / "README.md").write_text("modified in the work tree\n")
    return repo


async def test_a_filter_named_with_an_equals_sign_never_runs(tmp_path):
    # `-c filter.a=b.clean=` would set `filter.a` and leave the real `filter.a=b.clean` alone.
    markers = tmp_path / "markers"
    repo = modified_repo(tmp_path / "root" / "planted", "* filter=a=b\n")
    plant_filter(repo / ".git" / "config", "a=b", markers)
    async with open_session(make_server(tmp_path / "root", allow_write=True)) as session:
        await exercise(session, repo, writes=True)
    assert fired(markers) == []


async def test_a_filter_in_the_common_directory_a_commondir_file_names_never_runs(tmp_path):
    root = tmp_path / "root"
    markers = tmp_path / "markers"
    source = modified_repo(root / "source", "* filter=evil\n")
    store = root / "store.git"  # nested and bare: never served itself, but inside the root
    git(root, "clone", "-q", "--bare", str(source), str(store))
    planted = root / "planted"
    (planted / ".git").mkdir(parents=True)
    (planted / ".git" / "commondir").write_text("../../store.git\n")
    (planted / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    git(planted, "reset", "-q", "--hard")  # the test's own git, before the filter exists
    (planted / "README.md").write_text("modified in the work tree\n")
    plant_filter(store / "config", "evil", markers)
    async with open_session(make_server(root, allow_write=True)) as session:
        names = {r["name"] for r in (await session.call_ok("git_repositories")).data["repositories"]}
        assert "planted" in names  # a commondir inside the roots is fine; only its commands are not
        await exercise(session, planted, writes=True)
    assert fired(markers) == []


async def test_a_filter_in_config_worktree_never_runs(tmp_path):
    markers = tmp_path / "markers"
    repo = modified_repo(tmp_path / "root" / "planted", "* filter=evil\n")
    git(repo, "config", "extensions.worktreeConfig", "true")
    plant_filter(repo / ".git" / "config.worktree", "evil", markers)
    async with open_session(make_server(tmp_path / "root", allow_write=True)) as session:
        await exercise(session, repo, writes=True)
    assert fired(markers) == []


async def check_out_evil_and_use_every_tool(tmp_path: Path, repo: Path) -> None:
    """Compute (and cache) the overrides on the current branch, switch to `evil` through the server,
    modify a tracked file, then use every tool: a stale cache would let evil's filter run."""
    target = {"repo_path": str(repo)}
    async with open_session(make_server(tmp_path / "root", allow_write=True)) as session:
        await session.call_ok("git_status", target)
        await session.call("git_checkout", {"branch": "evil", **target})
        assert git(repo, "symbolic-ref", "--short", "HEAD").strip() == "evil"
        (repo / "README.md").write_text("modified on evil\n")
        await session.call("git_status", target)
        await session.call("git_diff", target)
        await exercise(session, repo, writes=True)


async def test_an_included_file_a_checkout_rewrites_cannot_enable_a_filter(tmp_path):
    # include.path names a tracked file: benign on main, defining the filter on `evil`. The checkout
    # rewrites it without touching .git/config.
    markers = tmp_path / "markers"
    repo = modified_repo(tmp_path / "root" / "planted", "* filter=evil\n")
    git(repo, "checkout", "-q", "--", "README.md")
    (repo / "inc.cfg").write_text("[user]\n\tname = Ada Lovelace\n")
    git(repo, "add", "inc.cfg")
    git(repo, "commit", "-q", "-m", "benign include")
    git(repo, "checkout", "-q", "-b", "evil")
    plant_filter(repo / "inc.cfg", "evil", markers)
    git(repo, "add", "inc.cfg")
    git(repo, "commit", "-q", "-m", "the include defines a filter")
    git(repo, "checkout", "-q", "main")
    git(repo, "config", "include.path", "../inc.cfg")
    age(repo / ".git" / "config", repo / "inc.cfg")
    for marker in markers.iterdir():
        marker.unlink()  # the test's own git just ran the filter: only the server's calls count
    await check_out_evil_and_use_every_tool(tmp_path, repo)
    assert fired(markers) == []


async def test_an_include_if_onbranch_cannot_enable_a_filter_after_a_checkout(tmp_path):
    # The condition is false while the overrides are first computed, and true after the checkout.
    markers = tmp_path / "markers"
    repo = modified_repo(tmp_path / "root" / "planted", "* filter=evil\n")
    git(repo, "checkout", "-q", "--", "README.md")
    git(repo, "branch", "evil")
    plant_filter(repo / ".git" / "evil.cfg", "evil", markers)
    git(repo, "config", "includeIf.onbranch:evil.path", "evil.cfg")
    age(repo / ".git" / "config", repo / ".git" / "evil.cfg")
    await check_out_evil_and_use_every_tool(tmp_path, repo)
    assert fired(markers) == []


async def test_a_stash_that_rewrites_an_included_file_cannot_enable_a_filter(tmp_path):
    markers = tmp_path / "markers"
    repo = modified_repo(tmp_path / "root" / "planted", "* filter=evil\n")
    git(repo, "checkout", "-q", "--", "README.md")
    (repo / "inc.cfg").write_text("[user]\n\tname = Ada Lovelace\n")
    git(repo, "add", "inc.cfg")
    git(repo, "commit", "-q", "-m", "benign include")
    plant_filter(repo / "inc.cfg", "evil", markers)
    git(repo, "stash", "push", "-q")  # the stash holds the hostile include; the work tree is benign
    git(repo, "config", "include.path", "../inc.cfg")
    (repo / "README.md").write_text("modified in the work tree\n")
    async with open_session(make_server(tmp_path / "root", allow_write=True)) as session:
        await session.call_ok("git_status", {"repo_path": str(repo)})
        await session.call("git_stash", {"action": "pop", "repo_path": str(repo)})
    assert fired(markers) == []


# -- repositories whose git data lives outside the roots ------------------------------------------


def secret_repository(path: Path) -> tuple[Path, str]:
    """A repository outside the roots with a commit nobody may read through the server."""
    private = make_repo(path)
    git(private, "commit", "-q", "--allow-empty", "-m", "TOP SECRET subject")
    return private, git(private, "rev-parse", "HEAD").strip()


def plant_reader(planted: Path, private: Path, secret: str, how: str) -> None:
    """Make ``planted`` read ``private``'s objects (and point its HEAD at the secret commit)."""
    if how == "commondir":
        (planted / ".git").mkdir(parents=True)
        (planted / ".git" / "commondir").write_text(f"{private / '.git'}\n")
        (planted / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        return
    make_repo(planted)
    objects = planted / ".git" / "objects"
    if how == "alternates":
        (objects / "info" / "alternates").write_text(f"{private / '.git' / 'objects'}\n")
    elif how == "objects link":
        shutil.rmtree(objects)
        os.symlink(private / ".git" / "objects", objects)
    elif how == "pack link":
        git(private, "gc", "-q")
        for pack in (private / ".git" / "objects" / "pack").iterdir():
            os.symlink(pack, objects / "pack" / pack.name)
    elif how == "loose-object folder link":
        fan_out = objects / secret[:2]
        if fan_out.exists():
            shutil.rmtree(fan_out)
        os.symlink(private / ".git" / "objects" / secret[:2], fan_out)
    (planted / ".git" / "refs" / "heads" / "secret").write_text(f"{secret}\n")
    (planted / ".git" / "HEAD").write_text("ref: refs/heads/secret\n")


async def assert_refused_beside_normal(root: Path, planted: Path, secret: str) -> None:
    """Served under ``root`` beside ``normal``, the ``planted`` repository is neither listed nor served, and
    nothing any tool answers about it shows the ``secret`` commit."""
    async with open_session(make_server(root, allow_write=True)) as session:
        listing = (await session.call_ok("git_repositories")).data["repositories"]
        refused = await session.call_error("git_log", {"repo_path": str(planted)})
        everything = await exercise(session, planted, writes=True)
    assert {r["name"] for r in listing} == {"normal"}
    assert refused.startswith("Error (permission_denied)") and "outside the folders" in refused, refused
    assert "TOP SECRET" not in everything and secret not in everything


@pytest.mark.parametrize(
    "how", ["commondir", "alternates", "objects link", "pack link", "loose-object folder link"]
)
async def test_a_repository_reading_git_data_outside_the_roots_is_refused(tmp_path, how):
    private, secret = secret_repository(tmp_path / "private")
    root = tmp_path / "root"
    make_repo(root / "normal")
    planted = root / "planted"
    plant_reader(planted, private, secret, how)
    # Plain git would show it (one linked loose-object folder holds the commit, not always its parent).
    shown = git(planted, "cat-file", "-p", secret) if how.startswith("loose") else git(planted, "log", "-1")
    assert "TOP SECRET" in shown
    await assert_refused_beside_normal(root, planted, secret)


@pytest.mark.parametrize("how", ["alternates", "pack link"])
async def test_a_repository_that_turns_to_outside_data_after_it_was_listed_is_refused(tmp_path, how):
    private, secret = secret_repository(tmp_path / "private")
    root = tmp_path / "root"
    planted = make_repo(root / "planted")
    async with open_session(make_server(root)) as session:
        assert (await session.call_ok("git_log", {"max_count": 1})).data["commits"]
        objects = planted / ".git" / "objects"
        if how == "alternates":
            (objects / "info" / "alternates").write_text(f"{private / '.git' / 'objects'}\n")
        else:
            git(private, "gc", "-q")
            for pack in (private / ".git" / "objects" / "pack").iterdir():
                os.symlink(pack, objects / "pack" / pack.name)
        (planted / ".git" / "refs" / "heads" / "main").write_text(f"{secret}\n")
        refused = await session.call_error("git_log", {"max_count": 1})
    assert refused.startswith("Error (permission_denied)") and "TOP SECRET" not in refused


async def test_worktrees_and_shared_clones_inside_the_root_are_still_served(tmp_path):
    root = tmp_path / "root"
    main = make_repo(root / "main")
    git(main, "worktree", "add", "-q", "-b", "feature", str(root / "linked"))
    git(root, "clone", "-q", "--shared", str(main), str(root / "shared"))
    async with open_session(make_server(root, allow_write=True)) as session:
        names = {r["name"] for r in (await session.call_ok("git_repositories")).data["repositories"]}
        for name in ("linked", "shared"):
            log = (await session.call_ok("git_log", {"repo_path": name, "max_count": 1})).data
            assert log["commits"][0]["subject"] == "change number 2"
            assert (await session.call_ok("git_status", {"repo_path": name})).data["unstaged"] == []
        (root / "linked" / "README.md").write_text("work in the linked worktree\n")
        await session.call_ok("git_add", {"repo_path": "linked", "paths": ["README.md"]})
        commit = await session.call_ok("git_commit", {"repo_path": "linked", "message": "from the worktree"})
    assert names == {"main", "linked", "shared"}
    assert commit.data["commit"]["subject"] == "from the worktree"
    assert git(main, "log", "-1", "--format=%s", "feature").strip() == "from the worktree"
