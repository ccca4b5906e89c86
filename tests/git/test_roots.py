"""Without --root, dockyard-git serves the folders the client shares as MCP roots (both protocol eras)."""

from __future__ import annotations

from pathlib import Path

import mcp.types as mt
import pytest

from dockyard_git.context import ClientRoots
from tests.git.helpers import make_repo, make_server
from tests.harness import LEGACY, MODERN, open_session


@pytest.fixture
def two(tmp_path) -> tuple[Path, Path]:
    return make_repo(tmp_path / "alpha"), make_repo(tmp_path / "beta")


async def names(session) -> set[str]:
    return {r["name"] for r in (await session.call_ok("git_repositories")).data["repositories"]}


async def test_the_clients_roots_are_served_and_nothing_else(two, era):
    alpha, beta = two
    async with open_session(make_server(), era=era, roots=[alpha.as_uri()]) as session:
        served = await names(session)
        status = (await session.call_ok("git_status")).data
        outside = await session.call_error("git_status", {"repo_path": str(beta)})
        escape = await session.call_error("git_show", {"path": "../beta/README.md"})
    assert served == {"alpha"} and status["branch"] == "main"
    assert outside.startswith("Error (permission_denied)") and "outside the folders" in outside
    assert escape.startswith("Error (permission_denied)")


async def test_a_folder_root_serves_the_repositories_under_it(two, era):
    alpha, _ = two
    async with open_session(make_server(), era=era, roots=[alpha.parent.as_uri()]) as session:
        assert await names(session) == {"alpha", "beta"}
        log = (await session.call_ok("git_log", {"repo_path": "beta", "max_count": 1})).data
    assert log["commits"][0]["subject"] == "change number 2"


@pytest.mark.parametrize(
    ("roots", "reason"),
    [
        (None, "the client does not share MCP roots"),
        ([], "the client shares no roots"),
        (
            ["file://elsewhere/src", "file:///no/such/folder"],
            "none of the client's roots is an existing local folder",
        ),
    ],
)
async def test_no_root_and_no_usable_client_root_is_a_clear_problem(two, era, roots, reason):
    async with open_session(make_server(), era=era, roots=roots) as session:
        text = await session.call_error("git_repositories")
    assert text.startswith("Error (not_found)") and "started without --root" in text and reason in text
    assert "--root <repository or folder>" in text and "shares it as a root" in text


async def test_with_root_the_clients_roots_are_ignored(two, era):
    alpha, beta = two
    async with open_session(make_server(alpha), era=era, roots=[beta.as_uri()]) as session:
        assert await names(session) == {"alpha"}


async def test_resources_and_prompts_serve_the_clients_roots(two, era):
    alpha, _ = two
    async with open_session(make_server(), era=era, roots=[alpha.as_uri()]) as session:
        status = await session.read_resource("git://alpha/status")
        (summary,) = await session.get_prompt("summarize_changes", {"since": "1 year ago"})
        with pytest.raises(Exception, match="No served repository is named 'beta'"):
            await session.read_resource("git://beta/status")
    assert '"branch":"main"' in status.replace(" ", "")
    assert "alpha" in summary and "change number 1" in summary


@pytest.mark.filterwarnings("ignore:The roots capability is deprecated")  # the client's own warning
async def test_a_2025_session_follows_roots_list_changed(two):
    alpha, beta = two
    shared = [alpha.as_uri()]
    async with open_session(make_server(), era=LEGACY, roots=lambda: list(shared)) as session:
        before = await names(session)
        shared[:] = [beta.as_uri()]
        await session.roots_changed()
        after = await names(session)
    assert before == {"alpha"} and after == {"beta"}


async def test_a_2026_request_carries_the_roots_of_the_moment(two):
    alpha, beta = two
    shared = [alpha.as_uri()]
    async with open_session(make_server(), era=MODERN, roots=lambda: list(shared)) as session:
        before = await names(session)
        shared[:] = [alpha.as_uri(), beta.as_uri()]
        after = await names(session)
    assert before == {"alpha"} and after == {"alpha", "beta"}


async def test_completions_use_the_roots_a_2025_session_shares(two):
    alpha, _ = two
    ref = mt.ResourceTemplateReference(type="ref/resource", uri="git://{repo}/status")
    async with open_session(make_server(), era=LEGACY, roots=[alpha.parent.as_uri()]) as session:
        assert await session.complete(ref, "repo", "al") == ["alpha"]
    # A 2026-07-28 completion request cannot ask for roots: it offers nothing rather than guessing.
    async with open_session(make_server(), era=MODERN, roots=[alpha.parent.as_uri()]) as session:
        assert await session.complete(ref, "repo", "al") == []


def test_only_existing_local_folders_named_by_file_uris_are_roots(tmp_path):
    folder = tmp_path / "my repos"
    folder.mkdir()
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "link").symlink_to(folder)
    roots = ClientRoots.from_uris(
        [
            folder.as_uri(),  # percent-encoded space
            f"file://localhost{folder}",
            (tmp_path / "link").as_uri(),  # resolved, so the same folder
            (tmp_path / "file.txt").as_uri(),
            (tmp_path / "missing").as_uri(),
            "file://server/share",
            "file:relative/path",
            "vscode-remote://ssh/home",
        ]
    )
    assert roots.folders == (folder.resolve(),)
    assert ClientRoots.from_uris([]).folders == () and "no roots" in ClientRoots.from_uris([]).why_none
