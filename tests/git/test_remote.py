"""The remote toolset through the protocol: which tools exist, fetch, fast-forward pull, push with the
user's confirmation where it replaces or protects, against a bare repository inside the roots (file)."""

from __future__ import annotations

import os

import pytest

from dockyard_git.__main__ import entry
from dockyard_shared import InvalidArgument
from tests.git.helpers import git
from tests.git.remote_setup import commit, head_of, remote_server
from tests.harness import open_session

REMOTE_READS = {"git_remotes", "git_fetch"}
REMOTE_WRITES = {"git_pull", "git_push"}


def accept(asked: list[str]):
    def answer(message: str):
        asked.append(message)
        return {"confirm": True}

    return answer


def build(remotes, *flags: str):
    return entry.build(entry.parser(with_runner=False).parse_args(["--root", str(remotes.root), *flags]))


# -- which tools exist ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "present", "absent"),
    [
        ((), set(), REMOTE_READS | REMOTE_WRITES),
        (("--allow-remote",), REMOTE_READS, REMOTE_WRITES | {"git_commit"}),
        (("--toolsets", "default,remote"), REMOTE_READS, REMOTE_WRITES),
        (("--allow-remote", "--allow-write"), REMOTE_READS | REMOTE_WRITES, set()),
        (("--allow-remote", "--allow-write", "--read-only"), {"git_remotes"}, REMOTE_WRITES | {"git_fetch"}),
        (("--allow-write", "--tools", "git_push"), {"git_push"}, REMOTE_READS | {"git_pull"}),
    ],
)
async def test_the_remote_toolset_is_off_by_default_and_pushes_only_with_writes(
    remotes, era, flags, present, absent
):
    async with open_session(build(remotes, *flags), era=era) as session:
        names = await session.tool_names()
    assert present <= names and not (absent & names)


def test_push_named_without_the_write_toolset_is_refused_at_start(remotes):
    with pytest.raises(InvalidArgument, match="git_push is served only together with the write toolset"):
        build(remotes, "--allow-remote", "--tools", "git_push")


def test_a_token_variable_that_is_not_set_is_refused_at_start(remotes, monkeypatch):
    monkeypatch.delenv("DOCKYARD_TEST_NO_SUCH_TOKEN", raising=False)
    with pytest.raises(InvalidArgument, match="DOCKYARD_TEST_NO_SUCH_TOKEN"):
        build(remotes, "--allow-remote", "--remote-token-env", "DOCKYARD_TEST_NO_SUCH_TOKEN")


async def test_remote_tools_have_complete_descriptions_and_annotations(remotes):
    async with open_session(remote_server(remotes)) as session:
        tools = {tool.name: tool for tool in await session.list_tools()}
    for name in REMOTE_READS | REMOTE_WRITES:
        description = tools[name].description
        assert all(section in description for section in ("Use when:", "Not for:", "Returns:", "Limits:"))
        assert len(description) <= 2048
    assert tools["git_remotes"].annotations.read_only_hint is True
    assert tools["git_remotes"].annotations.open_world_hint is False
    assert tools["git_fetch"].annotations.open_world_hint is True
    assert tools["git_push"].annotations.destructive_hint is True


# -- git_remotes -----------------------------------------------------------------------------------


async def test_remotes_lists_urls_without_credentials_and_tracking_after_a_fetch(remotes, era):
    git(remotes.work, "remote", "add", "hub", "https://ada:s3cret-pass@example.com/team/project.git")
    git(remotes.work, "remote", "add", "tok", "https://ghp_tokenlike123@example.com/x.git")
    git(remotes.work, "remote", "add", "helper", "ext::sh -c true")
    commit(remotes.others, "theirs.txt")
    git(remotes.others, "push", "-q", "origin", "main")
    commit(remotes.work, "mine.txt")
    async with open_session(remote_server(remotes), era=era) as session:
        before = (await session.call_ok("git_remotes")).data
        await session.call_ok("git_fetch")
        after = (await session.call_ok("git_remotes")).data
        text = (await session.call_ok("git_remotes")).text
    by_name = {remote["name"]: remote for remote in before["remotes"]}
    assert by_name["hub"]["fetch_url"] == "https://example.com/team/project.git"
    assert by_name["tok"]["push_urls"] == ["https://example.com/x.git"]
    assert by_name["origin"]["default_branch"] == "main" and by_name["origin"]["refused"] is None
    assert "transport helper" in by_name["helper"]["refused"]
    assert "s3cret" not in text and "ghp_tokenlike" not in text
    assert before["last_fetch"] is None and after["last_fetch"]
    main_before = next(b for b in before["branches"] if b["branch"] == "main")
    main_after = next(b for b in after["branches"] if b["branch"] == "main")
    assert (main_before["ahead"], main_before["behind"]) == (1, 0)
    assert (main_after["upstream"], main_after["ahead"], main_after["behind"]) == ("origin/main", 1, 1)


# -- git_fetch -------------------------------------------------------------------------------------


async def test_fetch_reports_what_moved_and_how_many_commits(remotes, era):
    commit(remotes.others, "one.txt")
    new_main = commit(remotes.others, "two.txt")
    git(remotes.others, "push", "-q", "origin", "main")
    git(remotes.others, "push", "-q", "origin", "main:refs/heads/feature")
    old_main = head_of(remotes.work, "refs/remotes/origin/main")
    async with open_session(remote_server(remotes), era=era) as session:
        result = (await session.call_ok("git_fetch")).data
        again = (await session.call_ok("git_fetch", {"remote": "origin"})).data
    moved = {ref["ref"]: ref for ref in result["moved"]}
    assert moved["origin/main"] == {
        "ref": "origin/main",
        "change": "updated",
        "old": old_main,
        "new": new_main,
        "commits": 2,
    }
    assert moved["origin/feature"]["change"] == "new" and moved["origin/feature"]["commits"] == 2
    assert result["new_commits"] == 2 and result["url"] == str(remotes.origin)
    assert again["moved"] == [] and again["new_commits"] == 0
    assert head_of(remotes.work, "refs/remotes/origin/main") == new_main
    assert head_of(remotes.work, "refs/heads/main") == old_main  # the local branch is not touched
    assert head_of(remotes.work, "refs/tags/v1.0") is not None


async def test_fetch_prunes_only_when_asked_and_says_a_rewrite_was_forced(remotes, era):
    git(remotes.others, "push", "-q", "origin", "main:refs/heads/doomed")
    async with open_session(remote_server(remotes), era=era) as session:
        await session.call_ok("git_fetch")
        git(remotes.others, "push", "-q", "origin", ":refs/heads/doomed")
        git(remotes.others, "reset", "-q", "--hard", "HEAD~1")
        git(remotes.others, "push", "-q", "--force", "origin", "main")
        kept = (await session.call_ok("git_fetch")).data
        assert head_of(remotes.work, "refs/remotes/origin/doomed") is not None
        pruned = (await session.call_ok("git_fetch", {"prune": True})).data
    assert [(r["ref"], r["change"]) for r in kept["moved"]] == [("origin/main", "forced")]
    assert [(r["ref"], r["change"]) for r in pruned["moved"]] == [("origin/doomed", "deleted")]
    assert head_of(remotes.work, "refs/remotes/origin/doomed") is None


async def test_fetch_names_an_unknown_remote_with_the_known_ones(remotes, era):
    async with open_session(remote_server(remotes), era=era) as session:
        text = await session.call_error("git_fetch", {"remote": "orgin"})
        option = await session.call_error("git_fetch", {"remote": "--upload-pack=touch /tmp/x"})
    assert "not_found" in text and "origin" in text
    assert "invalid_argument" in option


# -- git_pull --------------------------------------------------------------------------------------


async def test_pull_fast_forwards_the_current_branch(remotes, era):
    commit(remotes.others, "one.txt")
    tip = commit(remotes.others, "two.txt")
    git(remotes.others, "push", "-q", "origin", "main")
    async with open_session(remote_server(remotes), era=era) as session:
        result = (await session.call_ok("git_pull")).data
        again = (await session.call_ok("git_pull")).data
    assert result["outcome"] == "fast-forwarded" and result["new"] == tip and result["commit_count"] == 2
    assert [c["subject"] for c in result["commits"]] == ["add two.txt", "add one.txt"]
    assert head_of(remotes.work, "HEAD") == tip and (remotes.work / "two.txt").exists()
    assert again["outcome"] == "up to date"


async def test_pull_refuses_divergence_naming_both_sides_and_the_choices(remotes, era):
    commit(remotes.others, "theirs.txt")
    git(remotes.others, "push", "-q", "origin", "main")
    mine = commit(remotes.work, "mine.txt")
    async with open_session(remote_server(remotes), era=era) as session:
        text = await session.call_error("git_pull")
    assert text.startswith("Error (conflict)")
    assert "1 commit only here, 1 only on the remote" in text
    assert "add mine.txt" in text and "add theirs.txt" in text and "<untrusted-data" in text
    assert "rebase or merge locally" in text
    assert head_of(remotes.work, "HEAD") == mine


async def test_pull_refuses_when_uncommitted_changes_would_be_overwritten(remotes, era):
    commit(remotes.others, "README.md", "theirs\n")
    git(remotes.others, "push", "-q", "origin", "main")
    (remotes.work / "README.md").write_text("my unsaved work\n")
    async with open_session(remote_server(remotes), era=era) as session:
        text = await session.call_error("git_pull")
    assert text.startswith("Error (conflict)") and "git_stash" in text
    assert (remotes.work / "README.md").read_text() == "my unsaved work\n"


async def test_a_local_branch_ahead_of_its_remote_is_left_alone(remotes, era):
    mine = commit(remotes.work, "mine.txt")
    async with open_session(remote_server(remotes), era=era) as session:
        result = (await session.call_ok("git_pull")).data
    assert result["outcome"] == "ahead" and head_of(remotes.work, "HEAD") == mine


# -- git_push --------------------------------------------------------------------------------------


async def test_push_a_new_branch_and_make_it_the_upstream(remotes, era):
    git(remotes.work, "checkout", "-q", "-b", "feature")
    tip = commit(remotes.work, "feature.txt")
    async with open_session(remote_server(remotes), era=era) as session:
        result = (await session.call_ok("git_push", {"set_upstream": True})).data
        listed = (await session.call_ok("git_remotes")).data
    assert result["outcome"] == "new branch" and result["upstream_set"] is True
    assert head_of(remotes.origin, "refs/heads/feature") == tip
    feature = next(b for b in listed["branches"] if b["branch"] == "feature")
    assert (feature["upstream"], feature["ahead"], feature["behind"]) == ("origin/feature", 0, 0)
    assert head_of(remotes.origin, "refs/tags/v1.0") is not None  # the clone had it; nothing new


async def test_push_sends_tags_only_when_named(remotes, era):
    git(remotes.work, "checkout", "-q", "-b", "feature")
    commit(remotes.work, "feature.txt")
    git(remotes.work, "tag", "v2.0")
    git(remotes.work, "tag", "v2.1")
    async with open_session(remote_server(remotes), era=era) as session:
        await session.call_ok("git_push")
        assert head_of(remotes.origin, "refs/tags/v2.0") is None
        await session.call_ok("git_push", {"tags": ["v2.1"]})
        missing = await session.call_error("git_push", {"tags": ["v9"]})
    assert head_of(remotes.origin, "refs/tags/v2.1") is not None
    assert head_of(remotes.origin, "refs/tags/v2.0") is None
    assert "not_found" in missing


async def test_a_non_fast_forward_push_is_a_conflict_and_changes_nothing(remotes, era):
    git(remotes.others, "push", "-q", "origin", "main:refs/heads/shared")
    git(remotes.work, "fetch", "-q", "origin")
    git(remotes.work, "checkout", "-q", "-b", "shared", "origin/shared")
    theirs = commit(remotes.others, "theirs.txt")
    git(remotes.others, "push", "-q", "origin", "main:refs/heads/shared")
    commit(remotes.work, "mine.txt")
    async with open_session(remote_server(remotes), era=era) as session:
        text = await session.call_error("git_push")
    assert text.startswith("Error (conflict)") and "was rejected" in text
    assert "force_with_lease" in text
    assert head_of(remotes.origin, "refs/heads/shared") == theirs


async def test_force_with_lease_replaces_the_remote_branch_when_the_user_accepts(remotes, era):
    git(remotes.work, "checkout", "-q", "-b", "topic")
    commit(remotes.work, "draft.txt")
    git(remotes.work, "push", "-q", "-u", "origin", "topic")
    git(remotes.work, "commit", "-q", "--amend", "-m", "a better draft")
    amended = head_of(remotes.work, "HEAD")
    asked: list[str] = []
    async with open_session(remote_server(remotes), era=era, elicit=accept(asked)) as session:
        plain = await session.call_error("git_push")
        result = (await session.call_ok("git_push", {"force_with_lease": True})).data
    assert plain.startswith("Error (conflict)")
    assert len(asked) == 1 and "Force-push topic" in asked[0]
    assert result["outcome"] == "forced with lease" and head_of(remotes.origin, "refs/heads/topic") == amended


async def test_force_with_lease_is_refused_when_the_user_declines_or_cannot_be_asked(remotes, era):
    git(remotes.work, "checkout", "-q", "-b", "topic")
    commit(remotes.work, "draft.txt")
    git(remotes.work, "push", "-q", "-u", "origin", "topic")
    pushed = head_of(remotes.origin, "refs/heads/topic")
    git(remotes.work, "commit", "-q", "--amend", "-m", "a better draft")
    async with open_session(remote_server(remotes), era=era, elicit=lambda message: None) as session:
        declined = await session.call_error("git_push", {"force_with_lease": True})
    async with open_session(remote_server(remotes), era=era) as session:
        unasked = await session.call_error("git_push", {"force_with_lease": True, "confirm": True})
    assert "user declined" in declined and "--trust-model-confirmation" in unasked
    assert head_of(remotes.origin, "refs/heads/topic") == pushed
    async with open_session(remote_server(remotes, trust=True), era=era) as session:
        needs = await session.call_error("git_push", {"force_with_lease": True})
        await session.call_ok("git_push", {"force_with_lease": True, "confirm": True})
    assert "confirm=true" in needs
    assert head_of(remotes.origin, "refs/heads/topic") == head_of(remotes.work, "HEAD")


async def test_force_with_lease_fails_when_the_remote_moved_since_the_last_fetch(remotes, era):
    git(remotes.work, "checkout", "-q", "-b", "topic")
    commit(remotes.work, "draft.txt")
    git(remotes.work, "push", "-q", "-u", "origin", "topic")
    git(remotes.work, "commit", "-q", "--amend", "-m", "a better draft")
    git(remotes.others, "fetch", "-q", "origin")
    git(remotes.others, "checkout", "-q", "-b", "topic", "origin/topic")
    theirs = commit(remotes.others, "theirs.txt")
    git(remotes.others, "push", "-q", "origin", "topic")
    async with open_session(remote_server(remotes), era=era, elicit=accept([])) as session:
        text = await session.call_error("git_push", {"force_with_lease": True})
    assert text.startswith("Error (conflict)") and "lease" in text
    assert head_of(remotes.origin, "refs/heads/topic") == theirs


async def test_a_push_to_the_remotes_default_branch_asks_the_user(remotes, era):
    tip = commit(remotes.work, "mine.txt")
    asked: list[str] = []
    async with open_session(remote_server(remotes), era=era, elicit=lambda message: None) as session:
        declined = await session.call_error("git_push")
    assert "user declined" in declined and head_of(remotes.origin, "refs/heads/main") != tip
    async with open_session(remote_server(remotes), era=era, elicit=accept(asked)) as session:
        result = (await session.call_ok("git_push")).data
    assert "default branch" in asked[0] and result["outcome"] == "fast-forward"
    assert head_of(remotes.origin, "refs/heads/main") == tip


async def test_protected_branches_listed_by_the_operator_replace_the_default(remotes, era):
    git(remotes.work, "checkout", "-q", "-b", "release/1.0")
    commit(remotes.work, "release.txt")
    asked: list[str] = []
    server = remote_server(remotes, protected_branches=("release/*",))
    async with open_session(server, era=era, elicit=accept(asked)) as session:
        await session.call_ok("git_push")
        git(remotes.work, "checkout", "-q", "main")
        commit(remotes.work, "mine.txt")
        await session.call_ok("git_push")
    assert len(asked) == 1 and "release/1.0" in asked[0] and "--protected-branch release/*" in asked[0]
    assert head_of(remotes.origin, "refs/heads/main") == head_of(remotes.work, "main")


# -- limits ----------------------------------------------------------------------------------------


async def test_a_fetch_bigger_than_the_size_limit_is_stopped(remotes, era):
    (remotes.others / "big.bin").write_bytes(os.urandom(3_000_000))  # incompressible
    git(remotes.others, "add", "big.bin")
    git(remotes.others, "commit", "-q", "-m", "a big file")
    git(remotes.others, "push", "-q", "origin", "main")
    async with open_session(remote_server(remotes, max_fetch_bytes=1_000_000), era=era) as session:
        text = await session.call_error("git_fetch")
    assert text.startswith("Error (limit_exceeded)") and "--max-fetch-bytes" in text
    packs = list((remotes.work / ".git" / "objects" / "pack").iterdir())
    assert all(pack.stat().st_size < 1_000_000 for pack in packs)
    assert not [pack for pack in packs if pack.name.startswith("tmp_")]  # the partial pack was removed
    assert head_of(remotes.work, "refs/remotes/origin/main") != head_of(remotes.others, "HEAD")
    async with open_session(remote_server(remotes), era=era) as session:
        fetched = (await session.call_ok("git_fetch")).data
    assert fetched["new_commits"] == 1
