"""Every dockyard-git tool, resource, completion and prompt through a client session (both eras)."""

from __future__ import annotations

import mcp.types as mt
import pytest

from dockyard_shared import missing_description_sections
from tests.git.helpers import LOOKUPS, git, make_repo, make_server
from tests.git.tool_names import READ_TOOLS, WRITE_TOOLS
from tests.harness import open_session


async def test_read_only_by_default_and_every_description_is_complete(repo, era):
    async with open_session(make_server(repo), era=era) as session:
        tools = await session.list_tools()
    assert {t.name for t in tools} == READ_TOOLS
    for tool in tools:
        assert missing_description_sections(tool.description) == [], tool.name
        assert tool.annotations.read_only_hint


async def test_write_tools_only_with_allow_write(repo, era):
    async with open_session(make_server(repo, allow_write=True), era=era) as session:
        tools = {t.name: t for t in await session.list_tools()}
    assert set(tools) == READ_TOOLS | WRITE_TOOLS
    assert tools["git_checkout"].annotations.destructive_hint
    for name in WRITE_TOOLS:
        assert missing_description_sections(tools[name].description) == [], name


async def test_repositories_lists_every_repository_under_a_folder_root(tmp_path, era):
    make_repo(tmp_path / "a")
    make_repo(tmp_path / "group" / "b")
    (tmp_path / "a" / "new.txt").write_text("x")
    async with open_session(make_server(tmp_path), era=era) as session:
        listing = (await session.call_ok("git_repositories")).data["repositories"]
        ambiguous = await session.call_error("git_status")
        status = (await session.call_ok("git_status", {"repo_path": "group/b"})).data
    assert {(r["name"], r["branch"], r["dirty"]) for r in listing} == {
        ("a", "main", True),
        ("b", "main", False),
    }
    assert "2 repositories are served" in ambiguous
    assert status["branch"] == "main" and status["untracked"] == []


async def test_status_reports_staged_unstaged_untracked(repo, era):
    (repo / "README.md").write_text("changed\n")
    (repo / "src" / "app.py").write_text("staged\n")
    git(repo, "add", "src/app.py")
    (repo / "notes.txt").write_text("new")
    async with open_session(make_server(repo), era=era) as session:
        status = (await session.call_ok("git_status")).data
    assert [c["path"] for c in status["staged"]] == ["src/app.py"]
    assert [c["path"] for c in status["unstaged"]] == ["README.md"]
    assert status["untracked"] == ["notes.txt"] and status["conflicted"] == []
    assert len(status["head"]) == 40


async def test_log_filters_and_pages(repo, era):
    async with open_session(make_server(repo), era=era) as session:
        first = (await session.call_ok("git_log", {"max_count": 2})).data
        rest = (await session.call_ok("git_log", {"max_count": 2, "skip": first["next_skip"]})).data
        grep = (await session.call_ok("git_log", {"grep": "number 1"})).data
        by_path = (
            await session.call_ok(
                "git_log", {"paths": ["src/app.py"], "author": "Ada", "fields": ["email", "subject"]}
            )
        ).data
        ranged = (await session.call_ok("git_log", {"revision_range": "HEAD~2..HEAD"})).data
        unbounded = (await session.call_ok("git_log", {"max_count": -1})).data
    assert [c["subject"] for c in first["commits"]] == ["change number 2", "change number 1"]
    # next_skip alone says more match: no truncated flag, no note restating it.
    assert first["next_skip"] == 2 and set(first) == {"commits", "next_skip"}
    assert [c["subject"] for c in rest["commits"]] == ["change number 0"] and set(rest) == {"commits"}
    assert [c["subject"] for c in grep["commits"]] == ["change number 1"]
    assert len(by_path["commits"]) == 3 and by_path["commits"][0]["email"] == "ada@example.com"
    assert len(ranged["commits"]) == 2
    assert len(unbounded["commits"]) == 3


async def test_log_returns_the_fields_asked_for(repo, era):
    # A subject holding git_log's field separator must stay whole and not shift the other fields.
    git(repo, "commit", "-q", "--allow-empty", "-m", "odd \x1f subject")
    head, parent = git(repo, "rev-parse", "HEAD", "HEAD~1").split()
    async with open_session(make_server(repo), era=era) as session:
        default = (await session.call_ok("git_log", {"max_count": 1})).data
        lean = (await session.call_ok("git_log", {"max_count": 1, "fields": ["subject"]})).data
        full = (
            await session.call_ok(
                "git_log",
                {"max_count": 1, "fields": ["parents", "subject", "email", "author", "date", "sha"]},
            )
        ).data
        root = (await session.call_ok("git_log", {"skip": 3, "fields": ["parents"]})).data
        unknown = await session.call_error("git_log", {"fields": ["sha", "password"]})
    (entry,) = default["commits"]
    assert set(entry) == {"sha", "date", "author", "subject"} and entry["sha"] == head
    assert entry["author"] == "Ada Lovelace" and entry["date"].startswith("20")
    assert lean["commits"] == [{"sha": head, "subject": "odd \x1f subject"}]
    assert full["commits"][0]["parents"] == [parent] and full["commits"][0]["email"] == "ada@example.com"
    assert full["commits"][0]["subject"] == "odd \x1f subject"
    assert root["commits"][0]["parents"] == [] and set(root["commits"][0]) == {"sha", "parents"}
    assert "fields" in unknown


async def test_diff_modes_and_revisions(repo, era):
    (repo / "README.md").write_text("# Project\n\nversion 99\n")
    async with open_session(make_server(repo), era=era) as session:
        patch = (await session.call_ok("git_diff")).data
        stat = (await session.call_ok("git_diff", {"mode": "stat"})).data
        between = (
            await session.call_ok("git_diff", {"base": "HEAD~2", "target": "HEAD", "mode": "name_only"})
        ).data
        staged = (await session.call_ok("git_diff", {"staged": True})).data
    assert "-version 2" in patch["patch"] and "+version 99" in patch["patch"] and not patch["truncated"]
    assert stat["files"] == [{"path": "README.md", "status": "M", "additions": 1, "deletions": 1}]
    assert {f["path"] for f in between["files"]} == {"README.md", "src/app.py"}
    assert staged["files"] == [] and staged["patch"] == ""


async def test_a_huge_diff_is_cut_per_file_with_a_note_saying_how_to_narrow(repo, era):
    (repo / "big.txt").write_text("".join(f"line {i}\n" for i in range(50_000)))
    (repo / "small.txt").write_text("small\n")
    git(repo, "add", "-A")
    async with open_session(make_server(repo), era=era) as session:
        diff = (await session.call_ok("git_diff", {"staged": True})).data
    assert diff["truncated"] and len(diff["patch"]) < 70_000
    assert "big.txt: diff cut here" in diff["patch"] and "+small" in diff["patch"]
    assert "paths=" in diff["note"] and {f["path"] for f in diff["files"]} == {"big.txt", "small.txt"}


async def test_show_a_commit_and_a_file_at_a_revision(repo, era):
    async with open_session(make_server(repo), era=era) as session:
        commit = (await session.call_ok("git_show", {"revision": "HEAD~1"})).data
        old = (await session.call_ok("git_show", {"revision": "HEAD~2:README.md"})).data
        by_path = (await session.call_ok("git_show", {"revision": "v1.0", "path": "src/app.py"})).data
        missing = await session.call_error("git_show", {"revision": "HEAD", "path": "nope.txt"})
    # A commit's reply is its commit and whole patch: no kind, no file list the patch repeats, no nulls.
    assert set(commit) == {"commit", "patch"} and commit["commit"]["subject"] == "change number 1"
    assert set(commit["commit"]) == {"sha", "author", "date", "subject", "parents"}
    assert "+version 1" in commit["patch"] and "--- a/README.md\n+++ b/README.md\n" in commit["patch"]
    assert "index " not in commit["patch"] and "diff --git" not in commit["patch"]
    assert old["kind"] == "file" and old["content"] == "# Project\n\nversion 0\n"
    assert "return 8" in by_path["content"]
    assert missing.startswith("Error (not_found)")


async def test_show_pages_a_long_file_by_offset(repo, era):
    (repo / "long.txt").write_text("".join(f"row {i:06d}\n" for i in range(20_000)))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "long file")
    async with open_session(make_server(repo), era=era) as session:
        pieces, offset = [], 0
        while True:
            page = (await session.call_ok("git_show", {"path": "long.txt", "offset": offset})).data
            pieces.append(page["content"])
            if not page.get("truncated"):
                break
            offset = page["next_offset"]
    assert "".join(pieces) == (repo / "long.txt").read_text() and len(pieces) > 1


async def test_blame_branches_tags_and_grep(repo, era):
    git(repo, "branch", "feature", "HEAD~1")
    async with open_session(make_server(repo, toolsets=LOOKUPS), era=era) as session:
        blame = (await session.call_ok("git_blame", {"path": "README.md", "start": 3, "end": 3})).data
        branches = (await session.call_ok("git_branches")).data
        containing = (await session.call_ok("git_branches", {"contains": "HEAD"})).data
        tags = (await session.call_ok("git_tags")).data
        grep = (await session.call_ok("git_grep", {"pattern": "def f[0-1]", "paths": ["src"]})).data
        old_grep = (await session.call_ok("git_grep", {"pattern": "version 0", "revision": "HEAD~2"})).data
    assert blame["lines"] == [
        {
            "line": 3,
            "sha": blame["lines"][0]["sha"],
            "author": "Ada Lovelace",
            "date": blame["lines"][0]["date"],
            "summary": "change number 2",
            "text": "version 2",
        }
    ]
    assert {(b["name"], b["current"]) for b in branches["branches"]} == {("main", True), ("feature", False)}
    assert [b["name"] for b in containing["branches"]] == ["main"]
    assert [t["name"] for t in tags["tags"]] == ["v1.0"] and tags["tags"][0]["subject"] == "first release"
    assert [(m["path"], m["line"]) for m in grep["matches"]] == [("src/app.py", 1), ("src/app.py", 3)]
    assert [m["path"] for m in old_grep["matches"]] == ["README.md"]


async def test_write_tools_stage_commit_branch_checkout_and_stash(repo, era):
    async with open_session(make_server(repo, allow_write=True), era=era) as session:
        (repo / "feature.txt").write_text("new feature\n")
        added = (await session.call_ok("git_add", {"paths": ["feature.txt"]})).data
        assert [c["path"] for c in added["status"]["staged"]] == ["feature.txt"]
        unstaged = (await session.call_ok("git_unstage", {"paths": ["feature.txt"]})).data
        assert unstaged["status"]["staged"] == [] and unstaged["status"]["untracked"] == ["feature.txt"]
        await session.call_ok("git_add", {"paths": ["."]})
        committed = (
            await session.call_ok(
                "git_commit", {"message": "add the feature file", "type": "feat", "scope": "core"}
            )
        ).data
        assert committed["commit"]["subject"] == "feat(core): add the feature file"
        assert "Nothing is staged" in await session.call_error("git_commit", {"message": "again"})
        await session.call_ok("git_create_branch", {"name": "topic", "start_point": "HEAD~1"})
        assert "already exists" in await session.call_error("git_create_branch", {"name": "topic"})
        (repo / "README.md").write_text("work in progress\n")
        refused = await session.call_error("git_checkout", {"branch": "topic"})
        assert "uncommitted changes" in refused and (repo / "README.md").read_text() == "work in progress\n"
        await session.call_ok("git_stash", {"action": "push", "message": "wip"})
        assert "wip" in (await session.call_ok("git_stash", {"action": "list"})).data["stashes"][0]
        switched = (await session.call_ok("git_checkout", {"branch": "topic"})).data
        assert switched["status"]["branch"] == "topic"
        await session.call_ok("git_checkout", {"branch": "main"})
        await session.call_ok("git_stash", {"action": "pop"})
        assert (repo / "README.md").read_text() == "work in progress\n"
        assert "no local branch" in await session.call_error("git_checkout", {"branch": "mian"})
    assert git(repo, "log", "-1", "--format=%s").strip() == "feat(core): add the feature file"


async def test_resources_read_status_log_and_files(repo, era):
    async with open_session(make_server(repo), era=era) as session:
        templates = {t.uri_template for t in await session.list_resource_templates()}
        status = await session.read_resource("git://project/status")
        log = await session.read_resource("git://project/log")
        content = await session.read_resource("git://project/file/HEAD~2/README.md")
        nested = await session.read_resource("git://project/file/v1.0/src/app.py")
    assert templates == {"git://{repo}/status", "git://{repo}/log", "git://{repo}/file/{rev}/{path*}"}
    assert '"branch":"main"' in status.replace(" ", "")
    assert "change number 2" in log
    assert content == "# Project\n\nversion 0\n" and "def f4" in nested


async def test_completions_for_repository_branch_and_path(repo, era):
    git(repo, "branch", "feature/login")
    file_ref = mt.ResourceTemplateReference(type="ref/resource", uri="git://{repo}/file/{rev}/{path*}")
    review = mt.PromptReference(type="ref/prompt", name="review_branch")
    async with open_session(make_server(repo), era=era) as session:
        repos = await session.complete(file_ref, "repo", "pro")
        revs = await session.complete(file_ref, "rev", "fea", context={"repo": "project"})
        paths = await session.complete(file_ref, "path", "src/", context={"repo": "project"})
        branches = await session.complete(review, "branch", "ma")
    assert repos == ["project"] and revs == ["feature/login"]
    assert paths == ["src/app.py"] and branches == ["main"]


async def test_prompts_embed_the_staged_diff_the_history_and_the_branch_review(repo, era):
    git(repo, "checkout", "-q", "-b", "topic")
    (repo / "topic.txt").write_text("topic work\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "topic work")
    (repo / "staged.txt").write_text("staged line\n")
    git(repo, "add", "staged.txt")
    async with open_session(make_server(repo), era=era) as session:
        assert {p.name for p in await session.list_prompts()} == {
            "commit_message",
            "summarize_changes",
            "review_branch",
        }
        (message,) = await session.get_prompt("commit_message")
        (summary,) = await session.get_prompt("summarize_changes", {"since": "1 year ago"})
        (review,) = await session.get_prompt("review_branch", {"branch": "topic", "base": "main"})
    assert "+staged line" in message and "conventional-commit" in message
    assert "topic work" in summary and "change number 0" in summary
    assert "+topic work" in review and "topic.txt" in review


@pytest.mark.parametrize("bad", ["nope", "HEAD~99"])
async def test_unknown_revisions_are_not_found(repo, era, bad):
    async with open_session(make_server(repo), era=era) as session:
        text = await session.call_error("git_show", {"revision": bad})
    assert text.startswith("Error (not_found)") and "git_branches" in text


async def test_a_shown_commit_patch_still_applies_with_git_apply(repo, tmp_path, era):
    """git_show leaves out index lines and the diff --git line of a plain change (the ---/+++ lines name the
    file); a new, deleted and renamed file keep their git header, and git apply takes the whole patch."""
    (repo / "gone.txt").write_text("soon gone\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a file to delete")
    (repo / "README.md").write_text("# Project\n\nversion 3\n")
    (repo / "added.txt").write_text("new\n")
    git(repo, "mv", "src/app.py", "src/main.py")
    git(repo, "rm", "-q", "gone.txt")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "mixed change")
    async with open_session(make_server(repo), era=era) as session:
        shown = (await session.call_ok("git_show", {"revision": "HEAD"})).data
    patch = shown["patch"]
    assert "\nindex " not in patch and not patch.startswith("index ")
    assert patch.startswith("--- a/README.md\n+++ b/README.md\n@@")
    assert "diff --git a/src/app.py b/src/main.py\nsimilarity index 100%" in patch
    assert "diff --git a/added.txt b/added.txt\nnew file mode" in patch
    assert "diff --git a/gone.txt b/gone.txt\ndeleted file mode" in patch
    copy = tmp_path / "copy"
    git(tmp_path, "clone", "-q", str(repo), str(copy))
    git(copy, "checkout", "-q", "HEAD~1")
    (tmp_path / "shown.patch").write_text(patch)
    git(copy, "apply", "--index", str(tmp_path / "shown.patch"))
    assert git(copy, "diff", "--cached", "origin/main").strip() == ""  # the index is now the commit
    assert git(copy, "status", "--short").count("\n") >= 3
