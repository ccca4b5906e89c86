"""export_project: a project bigger than a page comes with a resource link to its whole export, one
document a host can save or attach (both eras); the pages stay as they were for hosts without links."""

from __future__ import annotations

import json

import pytest

from dockyard_tasks.resources import EXPORT_RESOURCE_CHARS
from dockyard_tasks.store import TaskDraft, TaskStore
from tests.harness import open_session
from tests.tasks.helpers import make_server


def links(outcome) -> list:
    return [block for block in outcome.content if getattr(block, "type", None) == "resource_link"]


async def pages_of(session, key: str) -> list:
    outcomes, cursor = [], None
    while True:
        outcome = await session.call_ok(
            "export_project", {"project": key, **({"cursor": cursor} if cursor else {})}
        )
        outcomes.append(outcome)
        cursor = outcome.data.get("next_cursor")
        if not cursor:
            return outcomes


def seed(url: str, key: str, comments: int, size: int) -> None:
    store = TaskStore(url)
    store.create_project(key, "Project", actor="ann")
    store.create_tasks(
        [TaskDraft(project=key, title="one"), TaskDraft(project=key, title="two")], actor="ann"
    )
    for number in range(comments):
        store.add_comment(f"{key}-2", f"comment {number} " + "x" * size, actor="bob")
    store.close()


async def test_a_multi_page_export_links_to_the_whole_export_in_one_read(sqlite_url, era):
    seed(sqlite_url, "WEB", comments=12, size=9_000)  # ~110,000 characters: two pages
    async with open_session(make_server(sqlite_url), era=era) as session:
        outcomes = await pages_of(session, "WEB")
        (link,) = links(outcomes[0])
        whole = json.loads(await session.read_resource(str(link.uri)))
    assert len(outcomes) >= 2
    assert str(link.uri) == "project://WEB/export" and link.mime_type == "application/json"
    assert all(len(links(outcome)) == 1 for outcome in outcomes[:-1]) and links(outcomes[-1]) == []
    tasks = [task for outcome in outcomes for task in outcome.data["tasks"]]
    assert whole == {
        "format": outcomes[0].data["format"],
        "project": outcomes[0].data["project"],
        "tasks": tasks,
    }


async def test_a_one_page_export_has_no_link_and_a_too_large_one_says_to_page(sqlite_url, era):
    seed(sqlite_url, "ONE", comments=1, size=10)
    seed(sqlite_url, "BIG", comments=30, size=9_500)  # past EXPORT_RESOURCE_CHARS
    async with open_session(make_server(sqlite_url), era=era) as session:
        (only,) = await pages_of(session, "ONE")
        with pytest.raises(Exception) as raised:  # the client raises the server's error reply
            await session.read_resource("project://BIG/export")
    assert links(only) == []
    assert f"{EXPORT_RESOURCE_CHARS:,}" in str(raised.value) and "export_project" in str(raised.value)
