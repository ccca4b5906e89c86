"""A listing that reaches a row this server cannot read (SQLite keeps whatever a file holds) leaves that row
out, serves the rest and names the rows it left out in its note (a bounded list); get_task of such a row
is the error naming its value. Through the protocol, both eras."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest

from dockyard_tasks.store import TaskDraft, TaskStore
from tests.harness import ERAS, open_session
from tests.tasks.helpers import make_server

# How a hostile or broken writer may leave a task, the list sort that reads that value for its order, and
# whether a compact row (id, title, status, priority, assignee, due) holds it.
BREAKAGES = {
    "due_date": ("due_date = 'garbage'", "due", True),
    "updated_at": ("updated_at = 'yesterday'", "updated", False),
    "priority": ("priority = 99", "priority", True),
    "status": ("status = 'weird'", "created", True),
    "title": ("title = x'ff00fe'", "created", True),
}
READABLE = ["WEB-1", "WEB-2", "WEB-4", "WEB-5"]


def _database(tmp_path, count: int, broken: dict[int, str]) -> str:
    """A tracker of ``count`` tasks WEB-1…, with the ``broken`` numbers set as each assignment says."""
    path = tmp_path / "tasks.db"
    url = f"sqlite:///{path}"
    store = TaskStore(url)
    store.create_project("WEB", "Web", actor="setup")
    store.create_tasks(
        [TaskDraft("WEB", f"task {n}", due=f"2030-01-{n % 28 + 1:02d}") for n in range(1, count + 1)],
        actor="setup",
    )
    store.close()
    with closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA ignore_check_constraints = ON")  # as a hostile writer of the file may
        for number, assignment in broken.items():
            connection.execute(f"UPDATE tasks SET {assignment} WHERE number = ?", (number,))
        connection.commit()
    return url


async def _every_page(session, arguments: dict) -> tuple[list[str], list[str]]:
    """The task ids of every page, one per page, and every page's note."""
    ids, notes, cursor = [], [], ""
    while True:
        page = (await session.call_ok("list_tasks", {**arguments, "cursor": cursor})).data
        ids += [task["id"] for task in page["tasks"]]
        notes.append(page.get("note") or "")
        if not page["has_more"]:
            return ids, notes
        cursor = page["next_cursor"]


@pytest.mark.parametrize("breakage", list(BREAKAGES))
@pytest.mark.parametrize("era", ERAS)
async def test_a_listing_leaves_out_a_row_it_cannot_read_and_names_it(tmp_path, breakage, era):
    assignment, sort, in_compact_rows = BREAKAGES[breakage]
    url = _database(tmp_path, 5, {3: assignment})
    async with open_session(make_server(url), era=era) as session:
        page = (await session.call_ok("list_tasks", {"sort": sort, "fields": "full"})).data
        assert sorted(t["id"] for t in page["tasks"]) == READABLE
        assert page["count"] == 4 and page["has_more"] is False
        assert "Left out 1 task whose stored values this server cannot read: WEB-3." in page["note"]
        assert "get_task" in page["note"]
        compact = (await session.call_ok("list_tasks", {"sort": sort})).data
        if in_compact_rows:
            assert sorted(t["id"] for t in compact["tasks"]) == READABLE and "WEB-3" in compact["note"]
        else:  # the value is not part of a compact row: the row is served
            assert len(compact["tasks"]) == 5 and compact.get("note") is None
        # Page by page, across the bad row: every readable task once, the bad one named where it was met.
        ids, notes = await _every_page(session, {"sort": sort, "limit": 1, "fields": "full"})
        assert sorted(ids) == READABLE and len(set(ids)) == 4
        assert sum("cannot read: WEB-3." in note for note in notes) >= 1
        # The task itself is the clear error, naming the value; its neighbours read as ever.
        text = await session.call_error("get_task", {"task_id": "WEB-3"})
        assert text.startswith("Error (upstream_unavailable)") and "cannot read: WEB-3 (" in text, text
        assert (await session.call_ok("get_task", {"task_id": "WEB-4"})).data["title"] == "task 4"


@pytest.mark.parametrize("era", ERAS)
async def test_the_rows_left_out_are_named_in_a_bounded_list(tmp_path, era):
    url = _database(tmp_path, 40, {n: "due_date = 'garbage'" for n in range(1, 31)})
    async with open_session(make_server(url), era=era) as session:
        page = (await session.call_ok("list_tasks", {"limit": 200})).data
        assert [t["id"] for t in page["tasks"]] == [f"WEB-{n}" for n in range(31, 41)]
        note = page["note"]
        assert "Left out 30 tasks" in note and "and 10 more" in note
        assert "WEB-19, WEB-20 and 10 more" in note and "WEB-21" not in note and len(note) < 600


@pytest.mark.parametrize("era", ERAS)
async def test_a_page_of_only_unreadable_rows_still_leads_to_the_next(tmp_path, era):
    url = _database(tmp_path, 6, {n: "priority = 99" for n in (1, 2, 3)})
    async with open_session(make_server(url), era=era) as session:
        first = (await session.call_ok("list_tasks", {"limit": 3})).data
        assert first["tasks"] == [] and first["has_more"] is True
        assert "cannot read: WEB-1, WEB-2, WEB-3." in first["note"]
        rest = (await session.call_ok("list_tasks", {"limit": 3, "cursor": first["next_cursor"]})).data
        assert [t["id"] for t in rest["tasks"]] == ["WEB-4", "WEB-5", "WEB-6"] and rest.get("note") is None
