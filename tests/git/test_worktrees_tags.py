"""Linked worktrees and annotated tags through the protocol: confined, consent where work or a tag is lost,
hostile repository config neutralised in a new worktree too, signature verification only when enabled."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from dockyard_git.settings import TagSignatures
from dockyard_shared.toolsets import Exposure
from tests.git.helpers import git, make_repo, make_server
from tests.harness import open_session


def server(root: Path, **extra):
    return make_server(root, exposure=Exposure().enabling("worktrees").enabling("tags"), **extra)


def accept(asked: list[str]):
    def answer(message: str):
        asked.append(message)
        return {"confirm": True}

    return answer


async def test_a_new_worktree_is_served_and_used_as_repo_path(tmp_path, era):
    repo = make_repo(tmp_path / "project")
    target = tmp_path / "project-feature"
    async with open_session(server(tmp_path), era=era) as session:
        added = (
            await session.call_ok(
                "git_worktree_add",
                {"path": "../project-feature", "branch": "feature", "create": True, "repo_path": str(repo)},
            )
        ).data
        status = (await session.call_ok("git_status", {"repo_path": str(target)})).data
        listed = (await session.call_ok("git_worktrees", {"repo_path": str(repo)})).data
        twice = await session.call_error(
            "git_worktree_add", {"path": "../wt-main", "branch": "main", "repo_path": str(target)}
        )
        git(repo, "branch", "other")
        existing = (
            await session.call_ok(
                "git_worktree_add",
                {"path": str(tmp_path / "wt-other"), "branch": "other", "repo_path": str(repo)},
            )
        ).data
    assert added["worktree"]["served"] and str(target) in added["next_step"]
    assert status["branch"] == "feature" and status["repository"] == str(target)
    assert [w["branch"] for w in listed["worktrees"]] == ["main", "feature"]
    assert listed["worktrees"][0]["main"] and all(w["served"] for w in listed["worktrees"])
    assert "already" in twice and existing["worktree"]["branch"] == "other"


async def test_worktree_paths_outside_the_roots_option_like_or_in_the_git_dir_are_refused(tmp_path, era):
    repo = make_repo(tmp_path / "root" / "project")
    outside = tmp_path / "elsewhere"
    calls = {
        "outside": {"path": str(outside), "branch": "x", "create": True},
        "relative out": {"path": "../../escape", "branch": "x", "create": True},
        "option": {"path": "--upload-pack=touch /tmp/pwn", "branch": "x", "create": True},
        "git dir": {"path": ".git/wt", "branch": "x", "create": True},
        "branch option": {"path": "../wt", "branch": "-b", "create": True},
        "huge": {"path": "a" * 100_000, "branch": "x", "create": True},
    }
    async with open_session(server(tmp_path / "root"), era=era) as session:
        errors = {name: await session.call_error("git_worktree_add", args) for name, args in calls.items()}
    assert "outside the folders" in errors["outside"] and "outside the folders" in errors["relative out"]
    assert "not starting with '-'" in errors["option"] and "may not start with '-'" in errors["branch option"]
    assert "git directory" in errors["git dir"] and "1,000 characters" in errors["huge"]
    assert not outside.exists() and not (tmp_path / "escape").exists()
    assert git(repo, "worktree", "list").count("\n") == 1


async def test_a_dirty_worktree_is_removed_only_with_consent_and_prune_forgets_deleted_ones(tmp_path, era):
    repo = make_repo(tmp_path / "project")
    clean, dirty, gone = (tmp_path / name for name in ("clean", "dirty", "gone"))
    for folder in (clean, dirty, gone):
        git(repo, "worktree", "add", "-q", "-b", folder.name, str(folder))
    (dirty / "work.txt").write_text("unsaved\n")
    shutil.rmtree(gone)
    asked: list[str] = []
    async with open_session(server(tmp_path), era=era, elicit=lambda message: None) as session:
        declined = await session.call_error(
            "git_worktree_remove", {"path": str(dirty), "repo_path": str(repo)}
        )
        main = await session.call_error("git_worktree_remove", {"path": str(repo), "repo_path": str(repo)})
        listed = (await session.call_ok("git_worktrees", {"repo_path": str(repo)})).data
        pruned = (await session.call_ok("git_worktree_prune", {"repo_path": str(repo)})).data
        removed = (
            await session.call_ok("git_worktree_remove", {"path": str(clean), "repo_path": str(repo)})
        ).data
    async with open_session(server(tmp_path), era=era, elicit=accept(asked)) as session:
        await session.call_ok("git_worktree_remove", {"path": str(dirty), "repo_path": str(repo)})
    assert "declined" in declined and "main worktree" in main
    assert [w["prunable"] for w in listed["worktrees"]] == [False, False, False, True]
    assert "gone" in " ".join(pruned["pruned"]) and "Removed" in removed["message"]
    assert len(asked) == 1 and "work.txt" in asked[0]
    assert not clean.exists() and not dirty.exists()
    assert git(repo, "branch", "--list", "dirty").strip()  # the branch stays


async def test_a_new_worktree_runs_no_hook_filter_or_fsmonitor_of_the_repository(tmp_path, era):
    repo = make_repo(tmp_path / "project")
    markers = tmp_path / "markers"
    markers.mkdir()
    (repo / ".gitattributes").write_text("* filter=evil\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attributes")
    for key, value in {
        "filter.evil.smudge": f"sh -c 'touch {markers}/smudge; cat'",
        "filter.evil.required": "true",
        "core.fsmonitor": f"touch {markers}/fsmonitor",
        "core.hooksPath": str(repo / ".git" / "hooks"),
    }.items():
        git(repo, "config", key, value)
    for hook in ("post-checkout", "reference-transaction"):
        (repo / ".git" / "hooks" / hook).write_text(f"#!/bin/sh\ntouch {markers}/{hook}\n")
        (repo / ".git" / "hooks" / hook).chmod(0o755)
    target = tmp_path / "wt"
    async with open_session(server(tmp_path), era=era) as session:
        await session.call_ok(
            "git_worktree_add",
            {"path": str(target), "branch": "side", "create": True, "repo_path": str(repo)},
        )
        git(
            target,
            "-c",
            "core.hooksPath=/dev/null",
            "config",
            "--worktree",
            "core.fsmonitor",
            "x",
            check=False,
        )
        status = (await session.call_ok("git_status", {"repo_path": str(target)})).data
    assert list(markers.iterdir()) == [] and status["branch"] == "side"
    assert (target / "README.md").exists()


async def test_annotated_tags_are_created_and_deleted_only_with_consent(repo, era):
    asked: list[str] = []
    async with open_session(server(repo), era=era, elicit=lambda message: None) as session:
        created = (
            await session.call_ok("git_tag_create", {"name": "v2.0", "message": "second release"})
        ).data
        again = await session.call_error("git_tag_create", {"name": "v2.0", "message": "again"})
        bad = await session.call_error("git_tag_create", {"name": "-d", "message": "x"})
        spaced = await session.call_error("git_tag_create", {"name": "a b", "message": "x"})
        declined = await session.call_error("git_tag_delete", {"name": "v2.0"})
    async with open_session(server(repo), era=era, elicit=accept(asked)) as session:
        deleted = (await session.call_ok("git_tag_delete", {"name": "v2.0"})).data
        missing = await session.call_error("git_tag_delete", {"name": "v2.0"})
    assert created["commit"] == git(repo, "rev-parse", "HEAD").strip() and "already exists" in again
    assert "may not start with '-'" in bad and "not a valid tag name" in spaced
    assert "declined" in declined and len(asked) == 1 and "v2.0" in asked[0]
    assert deleted["tag"] == "v2.0" and "There is no tag" in missing


async def test_verifying_a_signature_is_refused_until_the_operator_enables_it(repo, tmp_path, era):
    markers = tmp_path / "markers"
    markers.mkdir()
    git(repo, "config", "gpg.program", f"touch {markers}/gpg")
    git(repo, "config", "gpg.ssh.program", f"touch {markers}/ssh")
    async with open_session(server(repo), era=era) as session:
        refused = await session.call_error("git_tag_verify", {"name": "v1.0"})
    assert "--tag-signatures" in refused and list(markers.iterdir()) == []


@pytest.mark.skipif(not shutil.which("ssh-keygen"), reason="needs ssh-keygen")
async def test_an_ssh_signed_tag_verifies_against_the_operators_allowed_signers(repo, tmp_path, era):
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    signers = tmp_path / "allowed_signers"
    signers.write_text(f"ada@example.com {(tmp_path / 'key.pub').read_text()}")
    git(repo, "-c", "gpg.format=ssh", "-c", f"user.signingkey={key}", "tag", "-s", "v3", "-m", "signed")
    markers = tmp_path / "markers"
    markers.mkdir()
    git(repo, "config", "gpg.ssh.program", f"touch {markers}/ssh")
    git(repo, "config", "gpg.ssh.allowedSignersFile", "/dev/null")
    signatures = TagSignatures(("ssh",), None, str(signers))
    async with open_session(server(repo, tag_signatures=signatures), era=era) as session:
        signed = (await session.call_ok("git_tag_verify", {"name": "v3"})).data
        unsigned = (await session.call_ok("git_tag_verify", {"name": "v1.0"})).data
    async with open_session(server(repo, tag_signatures=TagSignatures(("gpg",))), era=era) as session:
        other = await session.call_error("git_tag_verify", {"name": "v3"})
    assert "signed with ssh" in other and "--tag-signatures ssh" in other
    assert signed["valid"] and signed["format"] == "ssh" and "<untrusted-data" in signed["details"]
    assert "ada@example.com" in signed["details"]
    assert not unsigned["valid"] and "not signed" in unsigned["details"]
    assert list(markers.iterdir()) == []


async def test_a_linked_worktrees_own_config_is_neutralised_like_the_main_one(tmp_path, era):
    repo = make_repo(tmp_path / "project")
    target = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(target))
    markers = tmp_path / "markers"
    markers.mkdir()
    git(repo, "config", "extensions.worktreeConfig", "true")
    (repo / ".git" / "worktrees" / "wt" / "config.worktree").write_text(
        f"[core]\n\tfsmonitor = touch {markers}/fsmonitor\n\thooksPath = {markers}\n"
    )
    (target / "README.md").write_text("changed\n")
    git(target, "status", "--porcelain")  # plain git runs the worktree's fsmonitor
    assert [p.name for p in markers.iterdir()] == ["fsmonitor"]
    (markers / "fsmonitor").unlink()
    async with open_session(server(tmp_path), era=era) as session:
        status = (await session.call_ok("git_status", {"repo_path": str(target)})).data
        listed = (await session.call_ok("git_worktrees", {"repo_path": str(target)})).data
    assert status["branch"] == "side" and [c["path"] for c in status["unstaged"]] == ["README.md"]
    assert len(listed["worktrees"]) == 2 and list(markers.iterdir()) == []


async def test_a_worktree_made_inside_a_served_repository_after_the_scan_is_served_by_its_path(repo, era):
    async with open_session(server(repo), era=era) as session:
        await session.call_ok("git_status")  # the repositories are scanned and kept
        git(repo, "worktree", "add", "-q", "-b", "inner", str(repo / ".worktrees" / "inner"))
        status = (await session.call_ok("git_status", {"repo_path": ".worktrees/inner"})).data
    assert status["branch"] == "inner" and status["repository"] == str(repo / ".worktrees" / "inner")


ODD_VALUES = [
    "",
    " ",
    "\x00",
    "\n",
    "a\x00b",
    "é" * 50,
    "\ud800",
    "x" * 200_000,
    "../" * 50,
    "HEAD~99999",
    "@{-1}",
]
STRING_ARGUMENTS = {
    "git_worktree_add": ("path", "branch", "start_point"),
    "git_worktree_remove": ("path",),
    "git_merge": ("revision", "message"),
    "git_rebase": ("onto",),
    "git_tag_create": ("name", "message", "revision"),
    "git_tag_delete": ("name",),
    "git_tag_verify": ("name",),
}
BASE = {
    "git_worktree_add": {"path": "../x", "branch": "fresh", "create": True},
    "git_worktree_remove": {"path": "../x"},
    "git_merge": {"revision": "HEAD"},
    "git_rebase": {"onto": "HEAD"},
    "git_tag_create": {"name": "t", "message": "m"},
    "git_tag_delete": {"name": "v1.0"},
    "git_tag_verify": {"name": "v1.0"},
}


async def test_odd_strings_in_every_argument_get_a_model_facing_answer_never_an_internal_error(tmp_path):
    repo = make_repo(tmp_path / "project")
    exposure = Exposure().enabling("merging").enabling("worktrees").enabling("tags")
    async with open_session(make_server(tmp_path, exposure=exposure), elicit=lambda message: None) as session:
        for tool, names in STRING_ARGUMENTS.items():
            for name in names:
                for value in ODD_VALUES:
                    arguments = {**BASE[tool], name: value, "repo_path": str(repo)}
                    outcome = await session.call(tool, arguments)
                    assert "internal" not in outcome.text.lower()[:40] and "Traceback" not in outcome.text, (
                        tool,
                        name,
                        value[:20],
                        outcome.text[:300],
                    )
        for tool in ("git_cherry_pick", "git_revert"):
            for commits in ([], ["HEAD"] * 51, ["x" * 300], ["\x00"], ["-x"]):
                outcome = await session.call(tool, {"commits": commits, "repo_path": str(repo)})
                assert outcome.is_error and "internal" not in outcome.text.lower()[:40], outcome.text[:300]
    assert git(repo, "status", "--porcelain") == ""
    # A valid odd value may make a worktree (a branch named 'ééé…' is valid); never outside the root.
    assert all(line.startswith(str(tmp_path)) for line in git(repo, "worktree", "list").splitlines())


async def test_parallel_agents_merge_in_their_own_worktrees_without_touching_the_main_one(tmp_path, era):
    repo = make_repo(tmp_path / "project")
    exposure = Exposure().enabling("worktrees").enabling("merging")
    async with open_session(make_server(tmp_path, exposure=exposure), era=era) as session:
        for name in ("a", "b"):
            await session.call_ok(
                "git_worktree_add",
                {
                    "path": f"../agent-{name}",
                    "branch": f"agent-{name}",
                    "create": True,
                    "repo_path": str(repo),
                },
            )
            (tmp_path / f"agent-{name}" / f"{name}.txt").write_text(f"{name}\n")
            git(tmp_path / f"agent-{name}", "add", f"{name}.txt")
            git(tmp_path / f"agent-{name}", "commit", "-qm", f"work of {name}")
        merged = (
            await session.call_ok(
                "git_merge", {"revision": "agent-a", "repo_path": str(tmp_path / "agent-b")}
            )
        ).data
    assert merged["state"] == "done" and (tmp_path / "agent-b" / "a.txt").exists()
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main" and not (repo / "a.txt").exists()
