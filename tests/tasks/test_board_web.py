"""``/board`` on ``dockyard-tasks --transport http`` (the real console script, real HTTP): the board as a web
page in headless Chromium (signed in with an actor's token: it renders, moves a card as that actor, shows a
conflict, keeps hostile text as text), read-only without a token, the Host/Origin rules of the MCP
endpoint, the write budget, sign-in scopes, and a page that shows no data and runs only its own scripts."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from fastmcp.server.auth import AccessToken
from starlette.applications import Starlette
from starlette.routing import Route

from dockyard_shared.apps import load_view
from dockyard_tasks.board_web import BoardPage
from dockyard_tasks.demo import seed_demo
from dockyard_tasks.store import TaskStore
from tests.apps.host import chromium_path, missing_tools
from tests.harness import ERAS, HttpServer, http_server, open_session
from tests.tasks.helpers import tasks_launch

ALICE, BOB = "alice-token-0123456789", "bob-token-0123456789ab"
HOSTILE = '<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=2</script>'
MOVE = {"task_id": "TASK-7", "new_status": "in_progress", "expected_version": 1}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def tracker(tmp_path_factory: pytest.TempPathFactory, log_dir: Path) -> Iterator[HttpServer]:
    """One server with actor tokens for the module (each test touches tasks of its own)."""
    folder = tmp_path_factory.mktemp("board-web")
    actors = folder / "actors.json"
    actors.write_text(json.dumps({ALICE: "alice", BOB: "bob"}))
    launch = tasks_launch(f"sqlite:///{folder / 'tasks.db'}", "--demo", "--actors", str(actors))
    with http_server(launch, log_dir=log_dir) as server:
        yield server


@pytest.fixture
async def browser() -> AsyncIterator:
    reason = missing_tools()
    if reason is not None:
        pytest.skip(f"the /board page test needs headless Chromium: {reason}")
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=chromium_path(), headless=True)
        try:
            yield launched
        finally:
            await launched.close()


def artifacts(tmp_path: Path) -> Path:
    import os

    base = os.environ.get("DOCKYARD_TEST_ARTIFACTS")
    folder = Path(base) / "views" if base else tmp_path / "views"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def open_page(browser, url: str) -> tuple:
    """The page, on a fake clock: its refresh timer fires only when a test runs the clock on."""
    page = await browser.new_page(viewport={"width": 1200, "height": 760})
    await page.clock.install()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
    # Console errors but the browser's own "Failed to load resource" lines (the 409 of a conflict, the
    # favicon's 404): a CSP violation or a script error shows here.
    page.on(
        "console",
        lambda m: (
            errors.append(m.text) if m.type == "error" and "Failed to load resource" not in m.text else None
        ),
    )
    await page.goto(url)
    return page, errors


async def test_signed_in_the_page_renders_moves_as_the_actor_and_shows_a_conflict(tracker, browser, tmp_path):
    async with open_session(tracker.url(), headers=bearer(BOB)) as session:
        await session.call_ok("create_task", {"project": "TASK", "title": HOSTILE, "assignee": "bob"})
    page, errors = await open_page(browser, tracker.url(f"/board?project=TASK#token={ALICE}"))
    card = page.locator(".card[data-id='TASK-10'] .title")
    await card.wait_for()
    assert await card.inner_text() == HOSTILE
    assert await page.locator("img").count() == 0
    assert await page.evaluate("() => window.__pwned") is None
    assert "signed in as alice" in await page.locator("#status").inner_text()
    assert await page.evaluate("() => location.hash") == ""  # the token leaves the address bar
    await page.screenshot(path=str(artifacts(tmp_path) / "tasks-board-web.png"))

    await page.locator(".card[data-id='TASK-7'] button[data-to='in_progress']").click()
    await page.locator("section[data-status='in_progress'] .card[data-id='TASK-7']").wait_for()
    for era in ERAS:  # the change is the tracker's, as any MCP client sees it
        async with open_session(tracker.url(), era=era, headers=bearer(BOB)) as session:
            task = (await session.call_ok("get_task", {"task_id": "TASK-7"})).data
        assert task["status"] == "in_progress" and task["version"] == 2
        assert task["history"][-1]["actor"] == "alice"

    async with open_session(tracker.url(), headers=bearer(BOB)) as session:
        await session.call_ok("update_task_status", {"task_id": "TASK-5", "new_status": "blocked"})
    await page.locator(".card[data-id='TASK-5'] button[data-to='done']").click()  # still version 1 here
    await page.locator("#error").filter(has_text="someone changed TASK-5").wait_for()
    await page.locator("section[data-status='blocked'] .card[data-id='TASK-5']").wait_for()

    # Live: a change made elsewhere shows at the next refresh, 5 s after the last change seen.
    async with open_session(tracker.url(), headers=bearer(BOB)) as session:
        await session.call_ok("update_task_status", {"task_id": "TASK-8", "new_status": "cancelled"})
    await page.clock.run_for(6_000)
    await page.locator("section[data-status='cancelled'] .card[data-id='TASK-8']").wait_for()
    assert errors == []


async def test_http_rules_read_needs_a_token_writes_need_an_actor_and_the_origin_is_checked(tracker):
    base = tracker.base_url
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        page = await http.get("/board")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        policy = page.headers["content-security-policy"]
        assert "script-src 'sha256-" in policy and "unsafe-inline" not in policy
        assert "connect-src 'self'" in policy and "frame-ancestors 'none'" in policy
        assert "Relaunch the website" not in page.text  # the page holds no data; /board/data does

        assert (await http.get("/board/data?project=TASK")).status_code == 401
        assert (await http.get("/board/data?project=TASK", headers=bearer("x" * 20))).status_code == 401
        read = await http.get("/board/data?project=TASK", headers=bearer(ALICE))
        assert read.status_code == 200 and read.json()["can_write"] is True
        assert read.headers["cache-control"] == "no-store"
        capped = await http.get("/board/data?project=TASK&per_column=26", headers=bearer(ALICE))
        assert capped.status_code == 400 and "25" in capped.json()["message"]
        listing = (await http.get("/board/data", headers=bearer(ALICE))).json()
        assert listing["projects"] == [{"key": "TASK", "name": "Website relaunch"}]

        change = {"task_id": "TASK-9", "new_status": "todo", "expected_version": 1}
        refused = await http.post("/board/status", json=change)
        assert refused.status_code == 401
        missing = await http.post(
            "/board/status", json={**change, "expected_version": None}, headers=bearer(ALICE)
        )
        assert missing.status_code == 400 and "expected_version" in missing.json()["message"]
        plain = await http.post(
            "/board/status",
            content=json.dumps(change),
            headers={**bearer(ALICE), "Content-Type": "text/plain"},
        )
        assert plain.status_code == 400
        rebound = await http.get(
            "/board/data?project=TASK", headers={**bearer(ALICE), "Host": "evil.example"}
        )
        assert rebound.status_code == 421
        assert (await http.get("/board", headers={"Host": "evil.example"})).status_code == 421
        foreign = await http.post(
            "/board/status", json=change, headers={**bearer(ALICE), "Origin": "http://evil.example"}
        )
        assert foreign.status_code == 403
        huge = await http.post("/board/status", json={**change, "pad": "x" * 10_000}, headers=bearer(ALICE))
        assert huge.status_code == 400
        board = (await http.get("/board/data?project=TASK", headers=bearer(ALICE))).json()["board"]
        cancelled = board["columns"][-1]["tasks"]
        assert ("TASK-9", 1) in [(c["id"], c["version"]) for c in cancelled]  # none of those changed it
        stale = await http.post(
            "/board/status", json={**change, "expected_version": 7}, headers=bearer(ALICE)
        )
        assert stale.status_code == 409 and "version 1" in stale.json()["message"]


async def test_an_open_server_shows_a_read_only_board(tmp_path, log_dir, browser):
    launch = tasks_launch(f"sqlite:///{tmp_path / 'tasks.db'}", "--demo")
    with http_server(launch, log_dir=log_dir) as server:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
            read = await http.get("/board/data?project=TASK")
            assert read.status_code == 200 and read.json()["can_write"] is False
            wrote = await http.post("/board/status", json=MOVE, headers=bearer(ALICE))
            assert wrote.status_code == 401 and "read-only" in wrote.json()["message"]
        page, errors = await open_page(browser, server.url("/board?project=TASK"))
        await page.locator(".card[data-id='TASK-7']").wait_for()
        assert "read-only" in await page.locator("#status").inner_text()
        assert await page.locator(".card button").count() == 0  # nothing offers a move
        await page.screenshot(path=str(artifacts(tmp_path) / "tasks-board-web-read-only.png"))
        assert errors == []


async def test_board_writes_spend_the_actors_write_budget(tmp_path, log_dir):
    actors = tmp_path / "actors.json"
    actors.write_text(json.dumps({ALICE: "alice"}))
    launch = tasks_launch(
        f"sqlite:///{tmp_path / 'tasks.db'}",
        "--demo",
        "--actors",
        str(actors),
        "--max-writes-per-minute",
        "1",
    )
    with http_server(launch, log_dir=log_dir) as server:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
            assert (await http.post("/board/status", json=MOVE, headers=bearer(ALICE))).status_code == 200
            again = {**MOVE, "new_status": "blocked", "expected_version": 2}
            refused = await http.post("/board/status", json=again, headers=bearer(ALICE))
            assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
            assert "nothing was changed" in refused.json()["message"]


class ScopedTokens:
    """A stand-in for ``--auth jwt``'s verifier: each token an actor with the scopes it names."""

    def __init__(self, tokens: dict[str, tuple[str, list[str]]]) -> None:
        self.tokens = tokens

    async def verify_token(self, token: str):
        if token not in self.tokens:
            return None
        actor, scopes = self.tokens[token]
        return AccessToken(token="[redacted]", client_id=actor, scopes=scopes)


async def test_signed_in_a_read_scope_reads_and_only_the_write_scope_moves(sqlite_url):
    """``--auth jwt``'s scopes, in process (the sign-in itself is tested with its fake issuer elsewhere)."""
    store = TaskStore(sqlite_url)
    seed_demo(store)
    server = type("Server", (), {})()
    server.auth = ScopedTokens(
        {"r" * 20: ("rita", ["tasks:read"]), "w" * 20: ("will", ["tasks:write"]), "n" * 20: ("nobody", [])}
    )
    page = BoardPage(
        server,
        store,
        load_view("dockyard_tasks", "views/board.html"),
        served=("show_board", "update_task_status"),
        signed_in=True,
        scopes=("tasks:read", "tasks:write"),
        writes_per_minute=0,
    )
    app = Starlette(
        routes=[
            Route("/board/data", page.data, methods=["GET"]),
            Route("/board/status", page.status, methods=["POST"]),
        ]
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        reader = await http.get("/board/data?project=TASK", headers=bearer("r" * 20))
        assert reader.status_code == 200 and reader.json()["can_write"] is False
        assert (await http.get("/board/data?project=TASK", headers=bearer("n" * 20))).status_code == 403
        refused = await http.post("/board/status", json=MOVE, headers=bearer("r" * 20))
        assert refused.status_code == 403 and "tasks:write" in refused.json()["message"]
        moved = await http.post("/board/status", json=MOVE, headers=bearer("w" * 20))
        assert moved.status_code == 200 and moved.json()["version"] == 2
    task = store.get_task("TASK-7")
    assert task.status == "in_progress" and task.history[-1].actor == "will"
    store.close()
