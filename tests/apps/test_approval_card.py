"""The approval card in headless Chromium (the ext-apps SDK's AppBridge as host): a destructive sqlite call
from a host that renders views but cannot ask renders the card; the card shows what will happen as text
(a hostile table name does not run), and Approve performs the drop once, as an MCP client sees afterwards."""

from __future__ import annotations

import sqlite3
import time

import pytest

from tests.apps.fixtures import OpenView
from tests.harness import open_session
from tests.sqlite.helpers import make_server, rows

HOSTILE = '<img src=x onerror="window.__pwned=1">orders'


@pytest.fixture
def shop(tmp_path):
    path = tmp_path / "shop.db"
    connection = sqlite3.connect(path)
    quoted = '"' + HOSTILE.replace('"', '""') + '"'
    connection.executescript(
        f"CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO people(name) VALUES ('ann');"
        f"CREATE TABLE {quoted} (id INTEGER PRIMARY KEY, total REAL); INSERT INTO {quoted}(total) VALUES (1.5);"
    )
    connection.commit()
    connection.close()
    return path, f"DROP TABLE {quoted}"


def tables(path) -> set[str]:
    return {name for (name,) in rows(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}


async def test_the_card_shows_the_drop_as_text_and_approve_drops_it_once(open_view: OpenView, shop, era):
    path, drop = shop
    server = make_server(path, allow_write=True)
    view = await open_view(server, "execute", {"sql": drop}, era=era)
    assert view.tool_result["isError"] is True  # pending: nothing done yet
    await view.wait_for("body[data-state='pending']")
    action = await view.text("#action")
    assert HOSTILE in action and "it drops" in action  # the hostile name, shown as text
    assert await view.count("#action img") == 0
    assert await view.evaluate("() => window.__pwned") is None
    assert tables(path) == {"people", HOSTILE}  # shown, not done
    await view.screenshot(f"approval-card-pending-{era}")

    await view.click("#approve")
    await view.wait_for("body[data-state='approved']")
    calls = await view.tool_calls()
    assert [call["name"] for call in calls] == ["resolve_approval"]
    assert calls[0]["arguments"]["decision"] == "approve"
    assert "rows_affected" in await view.text("#result")
    assert await view.text("#title") == "Approved" and "ran once" in await view.text("#lead")
    assert await view.attribute("#approve", "disabled") is not None  # no second click
    await view.screenshot(f"approval-card-approved-{era}")
    assert await view.evaluate("() => window.__pwned") is None
    view.assert_no_errors()

    # Through an MCP client afterwards: the table is gone, the rest is as it was.
    async with open_session(server, era=era) as session:
        listed = (await session.call_ok("list_tables")).text
    assert HOSTILE not in listed and "people" in listed
    assert tables(path) == {"people"}


async def test_reject_on_the_card_changes_nothing(open_view: OpenView, shop):
    path, drop = shop
    view = await open_view(make_server(path, allow_write=True), "execute", {"sql": drop})
    await view.wait_for("body[data-state='pending']")
    await view.click("#reject")
    await view.wait_for("body[data-state='rejected']")
    assert "nothing was done" in await view.text("#status")
    assert tables(path) == {"people", HOSTILE}
    view.assert_no_errors()


async def test_a_call_that_needed_no_approval_shows_its_result(open_view: OpenView, shop):
    path, _ = shop
    view = await open_view(
        make_server(path, allow_write=True),
        "execute",
        {"sql": "INSERT INTO people(name) VALUES ('<b>bo</b>')"},
    )
    await view.wait_for("body[data-state='done']")
    assert "rows_affected" in await view.text("#result")
    assert await view.count("#card:not([hidden])") == 0
    view.assert_no_errors()


async def test_an_expired_approval_says_so_on_the_card_and_nothing_runs(
    open_view: OpenView, shop, monkeypatch
):
    from dockyard_shared import approvals

    clock = [time.time()]  # the card counts down on the browser's clock: it still shows time left
    monkeypatch.setattr(approvals, "_now", lambda: clock[0])
    path, drop = shop
    view = await open_view(make_server(path, allow_write=True), "execute", {"sql": drop})
    await view.wait_for("body[data-state='pending']")
    clock[0] += approvals.LIFETIME_S + 1
    await view.click("#approve")
    await view.wait_for("body[data-state='failed']")
    assert "expired" in await view.text("#result") and await view.text("#title") == "Not done"
    assert tables(path) == {"people", HOSTILE}


async def test_the_card_stops_offering_approve_once_its_time_is_up(open_view: OpenView, shop, monkeypatch):
    from dockyard_shared import approvals

    monkeypatch.setattr(approvals, "_now", lambda: time.time() - approvals.LIFETIME_S - 5)  # issued long ago
    path, drop = shop
    view = await open_view(make_server(path, allow_write=True), "execute", {"sql": drop})
    await view.wait_for_text("#expiry", "Expired")
    assert await view.attribute("#approve", "disabled") is not None
    assert tables(path) == {"people", HOSTILE}
