"""The task board through the protocol (both eras) and the store: ``ui://tasks/board`` is listed and read as
an MCP Apps view, ``show_board`` names it and still answers a host without Apps in full, and the board is
bounded, ordered and names each card's open blockers (on SQLite and PostgreSQL)."""

from __future__ import annotations

import json

from dockyard_shared.apps import UI_MIME
from dockyard_tasks.board import BLOCKERS_SHOWN, BOARD_URI
from dockyard_tasks.rules import STATUSES
from dockyard_tasks.store import TaskDraft
from tests.apps.host import apps_client
from tests.harness import open_session
from tests.tasks.helpers import make_server

HOSTILE = '<img src=x onerror="window.__pwned=1">'


async def test_the_view_is_listed_and_read_as_an_app_and_show_board_names_it(sqlite_url, era):
    async with open_session(make_server(sqlite_url, demo=True), era=era) as session:
        views = [r for r in await session.list_resources() if str(r.uri).startswith("ui://")]
        assert [(str(r.uri), r.mime_type) for r in views] == [(BOARD_URI, UI_MIME)]
        assert views[0].meta["ui"]["csp"] == {"connectDomains": [], "resourceDomains": []}
        contents = await session.raw.read_resource(BOARD_URI)
        assert [c.mime_type for c in contents] == [UI_MIME]
        html = contents[0].text
        # Self-contained: the bridge inlined, nothing fetched from elsewhere, values drawn as text only.
        assert "window.dockyardApp" in html and "<!--dockyard-app-bridge-->" not in html
        for outside in ("<link", "@import", 'src="http', "src='http", "//cdn", "fonts.googleapis"):
            assert outside not in html, outside
        assert ".innerHTML" not in html and "insertAdjacentHTML" not in html and "eval(" not in html
        tools = {tool.name: tool for tool in await session.list_tools()}
        assert tools["show_board"].meta["ui"] == {"resourceUri": BOARD_URI, "visibility": ["model", "app"]}
        others = {
            name: tool.meta["ui"]["resourceUri"]
            for name, tool in tools.items()
            if name != "show_board" and (tool.meta or {}).get("ui")
        }
        # list_tasks & co. stay plain: no view opens on a filtered search; only the tool that asks the
        # user names the approval card (dockyard_shared.approvals).
        assert others == {"delete_task": "ui://dockyard/approval"}


async def test_show_board_answers_a_host_without_apps_in_full(sqlite_url, era):
    server = make_server(sqlite_url, demo=True)
    async with open_session(server, era=era) as session:
        await session.call_ok("create_task", {"project": "TASK", "title": HOSTILE, "priority": "urgent"})
        outcome = await session.call_ok("show_board", {"project": "TASK"})
    async with apps_client(server, era=era) as host:  # a client that declares the UI extension
        shown = await host.call_tool("show_board", {"project": "TASK"})
    assert shown.structured_content == outcome.structured  # the same answer whether the client shows views
    board = json.loads(outcome.text)  # the text alone is the whole board, for a client that ignores _meta
    assert board == outcome.structured
    assert [c["status"] for c in board["columns"]] == list(STATUSES)
    todo = board["columns"][0]
    assert HOSTILE in [c["title"] for c in todo["tasks"]]  # verbatim data; the view draws it as text
    assert todo["total"] == len(todo["tasks"]) + todo["more"]
    assert board["moves"]["cancelled"] == ["todo"] and board["revision"] > 0 and board["can_move"] is True
    waiting = {c["id"]: c for column in board["columns"] for c in column["tasks"]}["TASK-4"]
    assert waiting["open_blockers"] == ["TASK-3"] and waiting["open_blockers_total"] == 1


async def test_show_board_of_an_unknown_project_says_which_exist_and_columns_are_capped(sqlite_url, era):
    async with open_session(make_server(sqlite_url, demo=True), era=era) as session:
        text = await session.call_error("show_board", {"project": "TAKS"})
        too_many = await session.call_error("show_board", {"project": "TASK", "per_column": 26})
    assert "TASK" in text and "not_found" in text
    assert "25" in too_many  # a board stays under a list page's ~60,000 characters


async def test_a_read_only_server_shows_the_board_without_moves(sqlite_url, era):
    async with open_session(make_server(sqlite_url, demo=True, read_only=True), era=era) as session:
        board = (await session.call_ok("show_board", {"project": "TASK"})).data
    assert board["can_move"] is False and board["columns"][0]["tasks"]


async def test_without_the_read_toolset_there_is_neither_view_nor_tool(sqlite_url):
    async with open_session(make_server(sqlite_url, toolsets=("write",))) as session:
        assert "show_board" not in await session.tool_names()
        assert not [r for r in await session.list_resources() if str(r.uri).startswith("ui://")]


def test_columns_are_bounded_ordered_and_count_the_rest(store):
    store.create_project("WEB", "Web", actor="ann")
    priorities = ["low", "urgent", "medium", "high", "urgent", "low", "medium"]
    store.create_tasks(
        [TaskDraft(project="WEB", title=f"t{i}", priority=p) for i, p in enumerate(priorities)], actor="ann"
    )
    for n in (1, 2, 3):
        store.set_status(f"WEB-{n}", "done", actor="ann")
    board = store.board("WEB", 2)
    by_status = {column.status: column for column in board.columns}
    todo, done = by_status["todo"], by_status["done"]
    assert [c.id for c in todo.tasks] == ["WEB-5", "WEB-4"]  # urgent, then high (WEB-2 is done)
    assert (todo.total, todo.more) == (4, 2)
    assert [c.id for c in done.tasks] == ["WEB-3", "WEB-2"] and done.more == 1  # newest first
    assert all(c.version >= 1 for c in todo.tasks + done.tasks)
    assert board.note and "list_tasks project=WEB" in board.note
    assert by_status["blocked"].total == 0 and by_status["blocked"].tasks == []


def test_a_card_names_its_first_open_blockers_and_counts_them(store):
    store.create_project("OPS", "Ops", actor="ann")
    store.create_tasks([TaskDraft(project="OPS", title=f"blocker {i}") for i in range(6)], actor="ann")
    store.set_status("OPS-6", "done", actor="ann")  # a closed blocker no longer holds anyone up
    store.create_task(
        TaskDraft(project="OPS", title="waits", blocked_by=[f"OPS-{n}" for n in range(1, 7)]), actor="ann"
    )
    cards = {c.id: c for column in store.board("OPS", 30).columns for c in column.tasks}
    assert cards["OPS-7"].open_blockers == ["OPS-1", "OPS-2", "OPS-3"][:BLOCKERS_SHOWN]
    assert cards["OPS-7"].open_blockers_total == 5
    assert cards["OPS-1"].open_blockers == [] and cards["OPS-1"].open_blockers_total == 0
