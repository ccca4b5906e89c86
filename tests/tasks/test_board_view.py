"""The board view (``ui://tasks/board``) in headless Chromium, rendered by the test host (the ext-apps SDK's
AppBridge, tests/apps): it draws a project, a click moves a card through update_task_status (seen by
get_task over MCP), a stale card shows the conflict and the fresh board, and a hostile title stays text."""

from __future__ import annotations

import pytest
from fastmcp import FastMCP

from tests.apps import fixtures
from tests.apps.fixtures import OpenView
from tests.harness import open_session
from tests.tasks.helpers import make_server

# The view harness's fixtures (tests/apps/fixtures.py), made visible to this module's tests.
view_page_url, view_artifacts, view_browser, view_host, open_view = (
    fixtures.view_page_url,
    fixtures.view_artifacts,
    fixtures.view_browser,
    fixtures.view_host,
    fixtures.open_view,
)

HOSTILE = '<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=2</script>'


@pytest.fixture
def tracker(sqlite_url) -> FastMCP:
    return make_server(sqlite_url, demo=True)


def card(task_id: str) -> str:
    return f".card[data-id='{task_id}']"


async def test_the_board_draws_a_project_and_a_click_moves_a_card(open_view: OpenView, tracker, era):
    view = await open_view(tracker, "show_board", {"project": "TASK"}, era=era, viewport=(1200, 700))
    await view.wait_for_text("section[data-status='todo']", "Fix broken links on /pricing")
    assert await view.text("#heading") == "TASK · Website relaunch"
    assert not await view.locator("#signin").is_visible()  # the /board page's sign-in, not a host's
    assert await view.text(f"section[data-status='in_progress'] {card('TASK-3')}")
    assert "Waits on TASK-3" in await view.text(card("TASK-4"))
    await view.screenshot(f"tasks-board-{era}")

    await view.click(f"{card('TASK-7')} button[data-to='in_progress']")
    await view.wait_for(f"section[data-status='in_progress'] {card('TASK-7')}")
    moved = await view.peer.call_tool("get_task", {"task_id": "TASK-7"})
    assert moved["structuredContent"]["status"] == "in_progress"
    assert moved["structuredContent"]["version"] == 2
    # A card dragged to another column moves too.
    await view.drag(card("TASK-8"), "section[data-status='blocked']")
    await view.wait_for(f"section[data-status='blocked'] {card('TASK-8')}")
    calls = [c["arguments"] for c in await view.tool_calls() if c["name"] == "update_task_status"]
    assert calls == [
        {"task_id": "TASK-7", "new_status": "in_progress", "expected_version": 1},
        {"task_id": "TASK-8", "new_status": "blocked", "expected_version": 1},
    ]
    view.assert_no_errors()


async def test_a_stale_card_shows_the_conflict_and_the_fresh_board(open_view: OpenView, tracker):
    view = await open_view(tracker, "show_board", {"project": "TASK"}, viewport=(1200, 700))
    await view.wait_for(card("TASK-5"))
    # Someone else moves TASK-5 meanwhile; the host then shows the board it had (version 1) again, which
    # also restarts the view's 5 s refresh timer, so the click below is made on the stale card.
    await view.peer.call_tool("update_task_status", {"task_id": "TASK-5", "new_status": "blocked"})
    await view.send_tool_result(view.tool_result)
    await view.click(f"{card('TASK-5')} button[data-to='done']")
    error = await view.wait_for_text("#error", "someone changed TASK-5")
    assert "version 2, not 1" in error
    await view.wait_for(f"section[data-status='blocked'] {card('TASK-5')}")  # the fresh state
    assert await view.evaluate("(s) => document.querySelector(s).dataset.version", card("TASK-5")) == "2"
    after = await view.peer.call_tool("get_task", {"task_id": "TASK-5"})
    assert after["structuredContent"]["status"] == "blocked"  # the stale click changed nothing
    await view.screenshot("tasks-board-conflict")


async def test_a_hostile_title_is_shown_as_text_in_a_dark_host(open_view: OpenView, sqlite_url):
    tracker = make_server(sqlite_url, demo=True)
    async with open_session(tracker) as session:
        await session.call_ok("create_task", {"project": "TASK", "title": HOSTILE, "assignee": HOSTILE[:90]})
    view = await open_view(
        tracker, "show_board", {"project": "TASK"}, host_context={"theme": "dark"}, viewport=(1200, 700)
    )
    assert await view.wait_for_text(f"{card('TASK-10')} .title", "<img") == HOSTILE
    assert await view.locator("img").count() == 0
    assert await view.locator("script").count() == 2  # the bridge and the board's own, nothing injected
    assert await view.evaluate("() => window.__pwned") is None
    background = await view.evaluate("() => getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(13, 17, 23)"  # the dark palette, readable on a dark host
    await view.screenshot("tasks-board-dark-hostile")
    # Live: a change made elsewhere shows without a click (the view re-reads show_board while visible).
    await view.peer.call_tool("update_task_status", {"task_id": "TASK-10", "new_status": "blocked"})
    await view.wait_for(f"section[data-status='blocked'] {card('TASK-10')}")
    view.assert_no_errors()
