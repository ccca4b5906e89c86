"""A file larger than a git_show page comes back with a resource link to the whole file (both eras), beside
the bounded page a host without resource links keeps using."""

from __future__ import annotations

from tests.git.helpers import git, make_server
from tests.harness import open_session


def links(outcome) -> list:
    return [block for block in outcome.content if getattr(block, "type", None) == "resource_link"]


async def test_a_file_longer_than_a_page_links_to_a_resource_holding_all_of_it(repo, era):
    text = "".join(f"row {i:06d}\n" for i in range(20_000))  # 220,000 characters: four pages
    (repo / "docs").mkdir()
    (repo / "docs" / "long file.txt").write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "long file")
    sha = git(repo, "rev-parse", "HEAD").strip()
    async with open_session(make_server(repo), era=era) as session:
        first = await session.call_ok("git_show", {"path": "docs/long file.txt"})
        (link,) = links(first)
        whole = await session.read_resource(str(link.uri))
        short = await session.call_ok("git_show", {"path": "README.md"})
        commit = await session.call_ok("git_show", {"revision": "HEAD"})

    page = first.data
    assert page["truncated"] and page["next_offset"] and text.startswith(page["content"])  # still paged
    assert page["path"] == "docs/long file.txt" and page["revision_sha"] == sha
    assert str(link.uri) == f"git://project/file/{sha}/docs/long%20file.txt"
    assert link.name == "docs/long file.txt" and link.mime_type == "text/plain" and link.size == len(text)
    assert whole == text
    assert links(short) == [] and links(commit) == []  # one page, or a commit: nothing to link
