"""A SQLite file at the newest revision holding a value this server cannot read (a due date 'garbage', a
priority written with the checks off, a title stored as bytes): a call about that task says which task and
which value, not an internal error; a listing leaves it out and says so; every other call is served."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import pytest

from dockyard_tasks.store import TaskDraft, TaskStore
from tests.harness import ERAS, open_session
from tests.tasks.helpers import make_server

BROKEN = {
    "due_date": ("UPDATE tasks SET due_date = 'garbage' WHERE number = 2", "WEB-2 (due_date 'garbage')"),
    "priority": ("UPDATE tasks SET priority = 99 WHERE number = 2", "WEB-2 (priority '99')"),
    "title": ("UPDATE tasks SET title = x'ff00fe' WHERE number = 2", "WEB-2 (title \"X'FF00FE'\")"),
    "created_at": (
        "UPDATE tasks SET created_at = 'yesterday' WHERE number = 2",
        "WEB-2 (created_at 'yesterday')",
    ),
}


@pytest.fixture
def broken_url(tmp_path, request) -> tuple[str, str]:
    path = tmp_path / "tasks.db"
    url = f"sqlite:///{path}"
    store = TaskStore(url)
    store.create_project("WEB", "Web", actor="setup")
    for title in ("alpha", "beta", "gamma"):
        store.create_task(TaskDraft("WEB", title), actor="setup")
    store.close()
    statement, named = BROKEN[request.param]
    with closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA ignore_check_constraints = ON")  # as a hostile writer of the file may
        connection.execute(statement)
        connection.commit()
    return url, named


@pytest.mark.parametrize("broken_url", list(BROKEN), indirect=True)
@pytest.mark.parametrize("era", ERAS)
async def test_a_task_that_cannot_be_read_is_named_and_the_rest_is_served(broken_url, era):
    url, named = broken_url
    async with open_session(make_server(url), era=era) as session:
        listed = (await session.call_ok("list_tasks", {"fields": "full"})).data
        assert [t["id"] for t in listed["tasks"]] == ["WEB-1", "WEB-3"]
        assert "cannot read: WEB-2." in listed["note"], listed
        for tool, arguments in (
            ("get_task", {"task_id": "WEB-2"}),
            ("export_project", {"project": "WEB"}),
        ):
            text = await session.call_error(tool, arguments)
            assert text.startswith("Error (upstream_unavailable)"), text
            assert f"cannot read: {named}" in text and "Nothing was changed" in text, text
            assert "internal" not in text, text
        assert (await session.call_ok("get_task", {"task_id": "WEB-1"})).data["title"] == "alpha"
        narrowed = (await session.call_ok("list_tasks", {"text": "gamma"})).data
        assert [t["id"] for t in narrowed["tasks"]] == ["WEB-3"]
        summary = json.loads(await session.read_resource("project://tasks/summary"))
        assert summary["total"] == 3
        await session.call_ok("add_comment", {"task_id": "WEB-1", "body": "still writable"})
