"""Merge, rebase, cherry-pick and revert through the protocol: outcomes, the conflict report, continue /
skip / abort, consent for rewriting published history, and hostile repositories and arguments."""

from __future__ import annotations

import shutil
from pathlib import Path

from dockyard_shared.toolsets import Exposure
from tests.git.helpers import git, make_repo, make_server
from tests.harness import Launch, open_session


def server(root: Path):
    return make_server(root, exposure=Exposure().enabling("merging"))


def diverge(repo: Path) -> tuple[str, str]:
    """main and side both change line 2 of notes.txt: merging one into the other conflicts."""
    (repo / "notes.txt").write_text("one\ntwo\nthree\n")
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-qm", "notes")
    git(repo, "checkout", "-qb", "side")
    (repo / "notes.txt").write_text("one\nSIDE\nthree\n")
    git(repo, "commit", "-qam", "side changes two")
    side = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    (repo / "notes.txt").write_text("one\nMAIN\nthree\n")
    git(repo, "commit", "-qam", "main changes two")
    return git(repo, "rev-parse", "HEAD").strip(), side


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


async def test_a_clean_merge_is_done_and_names_its_commit(repo, era):
    git(repo, "checkout", "-qb", "feature")
    (repo / "feature.txt").write_text("new\n")
    git(repo, "add", "feature.txt")
    git(repo, "commit", "-qm", "add feature")
    git(repo, "checkout", "-q", "main")
    async with open_session(server(repo), era=era) as session:
        result = (await session.call_ok("git_merge", {"revision": "feature", "fast_forward": "never"})).data
        again = (await session.call_ok("git_merge", {"revision": "feature"})).data
    assert result["state"] == "done" and result["next_step"]
    assert result["commits"][0]["subject"] == "Merge branch 'feature'"
    assert again["state"] == "up to date"
    assert (repo / "feature.txt").exists()


async def test_a_conflict_is_reported_with_both_sides_then_resolved_and_continued(repo, era):
    _, side = diverge(repo)
    async with open_session(server(repo), era=era) as session:
        stopped = (await session.call_ok("git_merge", {"revision": "side"})).data
        unresolved = (await session.call_ok("git_merge", {"action": "continue"})).data
        (repo / "notes.txt").write_text("one\nBOTH\nthree\n")
        done = (await session.call_ok("git_merge", {"action": "continue"})).data
    assert stopped["state"] == "conflicts" and stopped["conflicts_total"] == 1
    conflict = stopped["conflicts"][0]
    assert conflict["path"] == "notes.txt" and conflict["kind"] == "both modified"
    assert conflict["hunks"][0]["ours"] == "MAIN" and conflict["hunks"][0]["theirs"] == "SIDE"
    assert "continue" in stopped["next_step"] and "abort" in stopped["next_step"]
    assert unresolved["state"] == "conflicts"  # markers still there: nothing committed
    assert done["state"] == "done"
    assert git(repo, "log", "-1", "--format=%P").split()[1] == side
    assert (repo / "notes.txt").read_text() == "one\nBOTH\nthree\n"


async def test_abort_returns_to_where_the_merge_started_and_skip_is_refused(repo, era):
    before, _ = diverge(repo)
    async with open_session(server(repo), era=era) as session:
        await session.call_ok("git_merge", {"revision": "side"})
        skip = await session.call_error("git_merge", {"action": "skip"})
        aborted = (await session.call_ok("git_merge", {"action": "abort"})).data
        nothing = await session.call_error("git_merge", {"action": "abort"})
    assert "cannot skip" in skip
    assert aborted["state"] == "aborted" and head(repo) == before
    assert (repo / "notes.txt").read_text() == "one\nMAIN\nthree\n"
    assert "nothing is in progress" in nothing


async def test_the_conflict_report_is_bounded_and_says_so(repo):
    (repo / "big.txt").write_text("".join(f"line {i}\n" for i in range(200)))
    git(repo, "add", "big.txt")
    git(repo, "commit", "-qm", "big")
    git(repo, "checkout", "-qb", "side")
    (repo / "big.txt").write_text(
        "".join(f"side {i} {'x' * 3000}\n\n\n\n" if i % 4 == 0 else f"line {i}\n" for i in range(200))
    )
    git(repo, "commit", "-qam", "side")
    git(repo, "checkout", "-q", "main")
    (repo / "big.txt").write_text(
        "".join(f"main {i}\n\n\n\n" if i % 4 == 0 else f"line {i}\n" for i in range(200))
    )
    git(repo, "commit", "-qam", "main")
    async with open_session(server(repo)) as session:
        result = (await session.call_ok("git_merge", {"revision": "side"})).data
    conflict = result["conflicts"][0]
    assert result["truncated"] and conflict["hunks_total"] > len(conflict["hunks"]) == 10
    assert conflict["hunks"][0]["cut"] and len(conflict["hunks"][0]["theirs"]) <= 2000
    assert "more hunks" in conflict["note"]


async def test_uncommitted_changes_and_option_like_or_huge_arguments_are_refused(repo, era):
    async with open_session(server(repo), era=era) as session:
        injected = await session.call_error("git_merge", {"revision": "--upload-pack=touch /tmp/x"})
        picked = await session.call_error("git_cherry_pick", {"commits": ["-n"]})
        huge = await session.call_error("git_revert", {"commits": ["a" * 100_000]})
        missing = await session.call_error("git_merge", {})
        (repo / "README.md").write_text("dirty\n")
        dirty = await session.call_error("git_merge", {"revision": "HEAD~1"})
    assert "may not start with '-'" in injected and "may not start with '-'" in picked
    assert "not a valid revision" in huge and "needs revision" in missing
    assert dirty.startswith("Error (conflict)") and "uncommitted changes" in dirty


async def test_rebasing_published_commits_asks_the_user_and_a_refusal_changes_nothing(tmp_path, era):
    origin = make_repo(tmp_path / "origin")
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(origin), str(work))
    git(work, "config", "user.name", "Ada Lovelace")
    git(work, "config", "user.email", "ada@example.com")
    (work / "mine.txt").write_text("mine\n")
    git(work, "add", "mine.txt")
    git(work, "commit", "-qm", "mine")
    git(work, "push", "-q", "origin", "HEAD:refs/heads/mine")
    git(work, "fetch", "-q", "origin")
    git(origin, "commit", "-q", "--allow-empty", "-m", "upstream moved")
    git(work, "fetch", "-q", "origin")
    before = head(work)
    asked: list[str] = []
    root = make_server(tmp_path, exposure=Exposure().enabling("merging"))
    async with open_session(root, era=era, elicit=lambda message: None) as session:
        declined = await session.call_error("git_rebase", {"onto": "origin/main", "repo_path": str(work)})
    assert "declined" in declined and head(work) == before

    def accept(message: str):
        asked.append(message)
        return {"confirm": True}

    async with open_session(root, era=era, elicit=accept) as session:
        done = (await session.call_ok("git_rebase", {"repo_path": str(work)})).data
    assert len(asked) == 1 and "already on a remote" in asked[0]
    assert (
        done["state"] == "done"
        and git(work, "log", "-1", "--format=%s", "HEAD~1").strip() == "upstream moved"
    )


async def test_an_unpublished_rebase_cherry_pick_skip_and_revert(repo, era):
    _, side = diverge(repo)
    async with open_session(server(repo), era=era, elicit=lambda message: None) as session:
        picked = (await session.call_ok("git_cherry_pick", {"commits": [side]})).data
        skipped = (await session.call_ok("git_cherry_pick", {"action": "skip"})).data
        reverted = (await session.call_ok("git_revert", {"commits": ["HEAD"]})).data
        git(repo, "checkout", "-q", "side")
        rebased = (await session.call_ok("git_rebase", {"onto": "main"})).data
    assert picked["state"] == "conflicts" and "skip" in picked["next_step"]
    assert skipped["state"] == "done"
    assert reverted["state"] == "done" and reverted["commits"][0]["subject"].startswith('Revert "')
    # main's change to line 2 was reverted, so side's replays cleanly onto it
    assert rebased["state"] == "done" and git(repo, "merge-base", "--is-ancestor", "main", "HEAD") == ""


HOSTILE_KEYS = {
    "merge.evil.driver": "touch {m}/merge-driver",
    "core.editor": "touch {m}/editor",
    "sequence.editor": "touch {m}/sequence-editor",
    "gpg.program": "touch {m}/gpg",
    "commit.gpgSign": "true",
    "rerere.enabled": "true",
    "rebase.autoStash": "true",
    "core.hooksPath": ".git/hooks",
}
HOOKS = ("pre-merge-commit", "prepare-commit-msg", "commit-msg", "post-merge", "post-commit", "post-rewrite",
         "post-checkout", "pre-rebase", "pre-commit", "reference-transaction")  # fmt: skip


def plant(repo: Path, markers: Path) -> None:
    (repo / ".gitattributes").write_text("* merge=evil\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attributes")
    for key, value in HOSTILE_KEYS.items():
        git(repo, "config", key, value.format(m=markers))
    for hook in HOOKS:
        path = repo / ".git" / "hooks" / hook
        path.write_text(f"#!/bin/sh\ntouch {markers}/{hook}\n")
        path.chmod(0o755)


async def test_no_editor_hook_driver_or_signing_program_of_the_repository_runs(repo, tmp_path, era):
    markers = tmp_path / "markers"
    markers.mkdir()
    diverge(repo)
    plant(repo, markers)
    # Plain git runs what was planted (a copy, so the server's repository is untouched).
    plain = tmp_path / "plain"
    shutil.copytree(repo, plain, symlinks=True)
    git(plain, "config", "merge.evil.driver", f"touch {markers}/merge-driver; false")
    git(plain, "config", "commit.gpgSign", "false")
    git(plain, "config", "core.hooksPath", str(plain / ".git" / "hooks"))
    git(plain, "merge", "--no-edit", "side", check=False)
    assert {"merge-driver"} <= {p.name for p in markers.iterdir()}
    shutil.rmtree(markers)
    markers.mkdir()
    async with open_session(server(repo), era=era) as session:
        stopped = (await session.call_ok("git_merge", {"revision": "side"})).data
        (repo / "notes.txt").write_text("one\nBOTH\nthree\n")
        merged = (await session.call_ok("git_merge", {"action": "continue"})).data
        git(repo, "-c", "core.hooksPath=/dev/null", "checkout", "-q", "side")  # the test's own git
        rebased = (await session.call_ok("git_rebase", {"onto": "main~1"})).data
        await session.call_ok("git_rebase", {"action": "abort"})
        reverted = (await session.call_ok("git_revert", {"commits": ["HEAD"]})).data
    assert sorted(p.name for p in markers.iterdir()) == []
    # The driver was replaced by git's own text merge: real conflict markers, both sides shown.
    assert stopped["conflicts"][0]["hunks"][0]["theirs"] == "SIDE"
    assert merged["state"] == "done" and reverted["state"] == "done"
    assert rebased["state"] in ("conflicts", "done")


async def test_a_planted_exec_step_or_strategy_is_never_continued(repo, tmp_path, era):
    markers = tmp_path / "markers"
    markers.mkdir()
    diverge(repo)
    git(repo, "checkout", "-q", "side")
    git(repo, "rebase", "main", check=False)  # stops on the conflict
    todo = repo / ".git" / "rebase-merge" / "git-rebase-todo"
    todo.write_text(f"exec touch {markers}/exec\n")
    (repo / "notes.txt").write_text("one\nBOTH\nthree\n")
    async with open_session(server(repo), era=era) as session:
        refused = await session.call_error("git_rebase", {"action": "continue"})
        todo.write_text("")
        (repo / ".git" / "rebase-merge" / "strategy").write_text("evil\n")
        strategy = await session.call_error("git_rebase", {"action": "continue"})
        (repo / ".git" / "rebase-merge" / "strategy").unlink()
        outside = tmp_path / "outside-todo"
        outside.write_text("SECRET-WORD and more\n")
        todo.unlink()
        todo.symlink_to(outside)
        linked = await session.call_error("git_rebase", {"action": "continue"})
        todo.unlink()
        todo.write_text("")
        aborted = (await session.call_ok("git_rebase", {"action": "abort"})).data
    assert "an 'exec' step" in refused and "names 'evil', not one of git's" in strategy
    assert "leads outside" in linked and "SECRET" not in linked
    assert aborted["state"] == "aborted" and list(markers.iterdir()) == []


async def test_merging_over_stdio(repo):
    git(repo, "checkout", "-qb", "feature")
    git(repo, "commit", "-q", "--allow-empty", "-m", "empty feature")
    git(repo, "checkout", "-q", "main")
    launch = Launch("dockyard-git", ("--root", str(repo), "--toolsets", "default,merging"))
    async with open_session(launch) as session:
        result = (await session.call_ok("git_merge", {"revision": "feature", "fast_forward": "only"})).data
    assert result["state"] == "done" and result["commits"][0]["subject"] == "empty feature"


async def test_a_refused_fast_forward_says_what_to_do_and_changes_nothing(repo, era):
    before, _ = diverge(repo)
    async with open_session(server(repo), era=era) as session:
        refused = await session.call_error("git_merge", {"revision": "side", "fast_forward": "only"})
    assert "nothing was changed" in refused and "fast_forward='allow'" in refused
    assert head(repo) == before


async def test_every_merging_tool_refuses_a_repository_reading_outside_the_roots(tmp_path, era):
    from tests.git.test_safety import plant_reader, secret_repository

    private, secret = secret_repository(tmp_path / "private")
    planted = tmp_path / "root" / "planted"
    plant_reader(planted, private, secret, "commondir")
    make_repo(tmp_path / "root" / "normal")
    calls = [
        ("git_merge", {"revision": secret}),
        ("git_rebase", {"onto": secret}),
        ("git_cherry_pick", {"commits": [secret]}),
        ("git_revert", {"action": "abort"}),
        ("git_worktrees", {}),
        ("git_worktree_add", {"path": "../wt", "branch": "main"}),
        ("git_tag_create", {"name": "t", "message": "m"}),
        ("git_tag_verify", {"name": "t"}),
    ]
    exposure = Exposure().enabling("merging").enabling("worktrees").enabling("tags")
    async with open_session(make_server(tmp_path / "root", exposure=exposure), era=era) as session:
        errors = [await session.call_error(name, {**args, "repo_path": str(planted)}) for name, args in calls]
    assert all(e.startswith("Error (permission_denied)") and "TOP SECRET" not in e for e in errors), errors
    assert not (tmp_path / "root" / "wt").exists()


async def test_a_conflicted_file_replaced_by_a_link_out_of_the_roots_is_never_read_or_staged(tmp_path, era):
    repo = make_repo(tmp_path / "root" / "project")
    secret = tmp_path / "secret.txt"
    secret.write_text("<<<<<<< ours\nTOP SECRET\n=======\nx\n>>>>>>> theirs\n")
    diverge(repo)
    async with open_session(server(tmp_path / "root"), era=era) as session:
        await session.call_ok("git_merge", {"revision": "side"})
        (repo / "notes.txt").unlink()
        (repo / "notes.txt").symlink_to(secret)
        refused = await session.call_error("git_merge", {"action": "continue"})
        aborted = (await session.call_ok("git_merge", {"action": "abort"})).data
    assert refused.startswith("Error (permission_denied)") and "TOP SECRET" not in refused
    assert aborted["state"] == "aborted" and secret.read_text().startswith("<<<<<<< ours")


async def test_a_merge_driver_without_a_command_gets_gits_text_merge_instead_of_failing(repo, era):
    diverge(repo)
    (repo / ".gitattributes").write_text("* merge=lazy\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attributes")
    git(repo, "config", "merge.lazy.name", "a driver with no command line")
    plain = git(repo, "merge", "--no-edit", "side", check=False)
    assert head(repo) == git(repo, "rev-parse", "main").strip() and "Merge" not in plain  # plain git dies
    async with open_session(server(repo), era=era) as session:
        stopped = (await session.call_ok("git_merge", {"revision": "side"})).data
        await session.call_ok("git_merge", {"action": "abort"})
    assert stopped["state"] == "conflicts" and stopped["conflicts"][0]["hunks"][0]["theirs"] == "SIDE"


async def test_a_modify_delete_conflict_is_named_and_resolved_by_deleting(repo, era):
    git(repo, "checkout", "-qb", "side")
    (repo / "src" / "app.py").write_text("changed on side\n")
    git(repo, "commit", "-qam", "side edits app")
    git(repo, "checkout", "-q", "main")
    git(repo, "rm", "-q", "src/app.py")
    git(repo, "commit", "-qm", "main deletes app")
    async with open_session(server(repo), era=era) as session:
        stopped = (await session.call_ok("git_merge", {"revision": "side"})).data
        (repo / "src" / "app.py").unlink()
        done = (await session.call_ok("git_merge", {"action": "continue"})).data
    assert stopped["conflicts"][0]["kind"] == "deleted by us" and stopped["conflicts"][0]["hunks"] == []
    assert done["state"] == "done" and "src/app.py" not in git(repo, "ls-files")


async def test_a_rebase_conflict_is_resolved_and_continued_to_the_end(repo, era):
    diverge(repo)
    git(repo, "checkout", "-q", "side")
    git(repo, "commit", "-q", "--allow-empty", "-m", "after the conflict")
    async with open_session(server(repo), era=era) as session:
        stopped = (await session.call_ok("git_rebase", {"onto": "main"})).data
        (repo / "notes.txt").write_text("one\nBOTH\nthree\n")
        done = (await session.call_ok("git_rebase", {"action": "continue"})).data
    assert stopped["state"] == "conflicts" and stopped["conflicts"][0]["hunks"][0]["ours"] == "MAIN"
    assert done["state"] == "done"
    assert git(repo, "log", "--format=%s", "-3").split("\n")[:3] == [
        "after the conflict",
        "side changes two",
        "main changes two",
    ]
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "side"
