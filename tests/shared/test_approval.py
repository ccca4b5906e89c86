"""The approval card: a client that renders MCP Apps but cannot ask its user gets a pending approval, not a
refusal; the card's resolve_approval runs the call once, for the session that was asked, within 10 minutes.
Clients with elicitation, and clients with neither, behave as before."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from dockyard_shared import approvals
from dockyard_shared.apps import UI_MIME
from tests.harness import LEGACY, MODERN, open_session
from tests.shared.approval_sessions import views_session
from tests.shared.toy_server import entry
from tests.sqlite.helpers import file_digest, make_server, rows


def toy(*argv: str):
    return entry.build(entry.parser(with_runner=False).parse_args(["--toolsets", "all", *argv]))


async def ask(session, tool="forget", arguments=None) -> dict:
    """Call a destructive tool; it must answer pending. Returns the approval the card gets."""
    outcome = await session.call(tool, arguments if arguments is not None else {"name": "beta"})
    assert outcome.is_error, "a pending approval must not read as the action done"
    assert "nothing has been done yet" in outcome.text and "approval card" in outcome.text
    approval = outcome.structured["approval"]
    assert approval["status"] == "pending" and approval["tool"] == tool
    assert approval["id"] not in outcome.text  # the id is for the card, not the model's text
    return approval


async def resolve(session, approval_id: str, decision: str = "approve"):
    return await session.call("resolve_approval", {"approval_id": approval_id, "decision": decision})


async def test_a_views_client_without_elicitation_gets_a_pending_approval_and_nothing_changes(era):
    async with views_session(toy(), era=era) as session:
        outcome = await session.call("forget", {"name": "beta"})
        approval = await ask(session)
        await session.call_ok("word", {"name": "beta"})  # still there
    assert approval["action"] == "Forget the word 'beta'?"
    assert len(approval["id"]) == 43  # 32 random bytes, URL-safe base64
    assert outcome.structured["approval"]["id"] != approval["id"]  # a new id per request


async def test_approve_runs_the_call_once_and_a_second_use_is_refused(era):
    async with views_session(toy(), era=era) as session:
        approval = await ask(session)
        done = await resolve(session, approval["id"])
        again = await resolve(session, approval["id"])
        rejected_after = await resolve(session, approval["id"], "reject")
        gone = await session.call_error("word", {"name": "beta"})
    assert not done.is_error and done.data == ["alpha", "gamma", "delta"]  # the tool's own result
    assert (
        again.is_error and "already used (approved)" in again.text and "Nothing more was done" in again.text
    )
    assert rejected_after.is_error and "already used" in rejected_after.text
    assert "no word 'beta'" in gone


async def test_two_clicks_at_once_run_the_call_once(era):
    async with views_session(toy(), era=era) as session:
        approval = await ask(session)
        outcomes = await asyncio.gather(*(resolve(session, approval["id"]) for _ in range(3)))
    assert sorted(outcome.is_error for outcome in outcomes) == [False, True, True]
    assert all("already used" in outcome.text for outcome in outcomes if outcome.is_error)


async def test_reject_changes_nothing_and_the_id_is_spent(era):
    async with views_session(toy(), era=era) as session:
        approval = await ask(session)
        rejected = await resolve(session, approval["id"], "reject")
        approve_after = await resolve(session, approval["id"])
        await session.call_ok("word", {"name": "beta"})
    assert not rejected.is_error and "rejected it; nothing was done" in rejected.text
    assert rejected.structured["approval"]["status"] == "rejected"
    assert approve_after.is_error and "already used (rejected)" in approve_after.text


async def test_an_id_from_another_session_is_refused_like_an_unknown_one():
    server = toy()
    async with views_session(server, era=LEGACY) as first, views_session(server, era=LEGACY) as second:
        approval = await ask(first)
        foreign = await resolve(second, approval["id"])
        unknown = await resolve(second, "x" * 43)
        # Nor from a 2026-07-28 request (no session there): the id belongs to the session that was asked.
        async with views_session(server, era=MODERN) as modern:
            other_era = await resolve(modern, approval["id"])
        await first.call_ok("word", {"name": "beta"})
        mine = await resolve(first, approval["id"])  # the refusals did not spend it
    for refused in (foreign, unknown, other_era):
        assert refused.is_error and refused.text.startswith("Error (not_found): No approval awaits")
    assert foreign.text == unknown.text  # nothing tells a stranger the id exists
    assert not mine.is_error and "beta" not in mine.text


async def test_an_expired_approval_is_refused(era, monkeypatch):
    clock = [1_000_000.0]
    monkeypatch.setattr(approvals, "_now", lambda: clock[0])
    async with views_session(toy(), era=era) as session:
        approval = await ask(session)
        clock[0] += approvals.LIFETIME_S + 1
        expired = await resolve(session, approval["id"])
        await session.call_ok("word", {"name": "beta"})
    assert expired.is_error and "expired" in expired.text and "Nothing was done" in expired.text


async def test_a_client_with_elicitation_is_still_asked_through_elicitation(era):
    asked = []

    def accept(message):
        asked.append(message)
        return {"confirm": True}

    async with views_session(toy(), era=era, elicit=accept) as session:
        outcome = await session.call_ok("forget", {"name": "beta"})
    assert asked == ["Forget the word 'beta'?"]
    assert "beta" not in outcome.text and outcome.structured.get("approval") is None


async def test_a_client_with_neither_views_nor_elicitation_is_refused_as_before(era):
    async with views_session(toy(), era=era, views=False) as session:
        text = await session.call_error("forget", {"name": "beta", "confirm": True})
        await session.call_ok("word", {"name": "beta"})
    assert text.startswith("Error (permission_denied)") and "cannot ask the user" in text


async def test_the_models_confirm_true_gets_the_card_not_a_shortcut(era):
    async with views_session(toy(), era=era) as session:
        await ask(session, arguments={"name": "beta", "confirm": True})
        await session.call_ok("word", {"name": "beta"})


async def test_the_card_and_its_tool_are_listed_for_hosts(era):
    async with views_session(toy(), era=era) as session:
        tools = {tool.name: tool for tool in await session.list_tools()}
        html = await session.read_resource(approvals.APPROVAL_URI)
        resources = {str(resource.uri): resource for resource in await session.list_resources()}
    async with open_session(toy(), era=era) as plain:  # no views: the lists a model reads are as they were
        plain_tools = {tool.name: tool for tool in await plain.list_tools()}
        plain_resources = {str(resource.uri) for resource in await plain.list_resources()}
    assert "resolve_approval" not in plain_tools and "forget" in plain_tools
    assert approvals.APPROVAL_URI not in plain_resources
    assert tools["forget"].meta["ui"] == {
        "resourceUri": approvals.APPROVAL_URI,
        "visibility": ["model", "app"],
    }
    assert tools["resolve_approval"].meta["ui"]["visibility"] == ["app"]  # hosts keep it from the model
    assert tools["resolve_approval"].annotations.destructive_hint is True
    assert "ui" not in (tools["add"].meta or {})  # a tool that never asks shows no card
    assert resources[approvals.APPROVAL_URI].mime_type == UI_MIME
    assert "dockyardApp" in html and "resolve_approval" in html and "<!--dockyard-app-bridge-->" not in html


async def test_a_server_without_destructive_tools_serves_no_card():
    async with open_session(toy("--read-only"), era=MODERN) as session:
        names = await session.tool_names()
        uris = {str(resource.uri) for resource in await session.list_resources()}
    assert "forget" not in names and "resolve_approval" not in names
    assert approvals.APPROVAL_URI not in uris


# -- sqlite: a DROP through the card -----------------------------------------------------------------------


@pytest.fixture
def shop(tmp_path):
    path = tmp_path / "shop.db"
    connection = sqlite3.connect(path)
    connection.executescript(
        "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT);"
        "INSERT INTO people(name) VALUES ('ann'), ('bob');"
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL);"
        "INSERT INTO orders(total) VALUES (1.5), (2.5);"
    )
    connection.commit()
    connection.close()
    return path


def tables(path) -> list[str]:
    return [
        name for (name,) in rows(path, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    ]


async def test_a_sqlite_drop_waits_for_the_card_and_approve_drops_once(shop, era):
    before = file_digest(shop)
    async with views_session(make_server(shop, allow_write=True), era=era) as session:
        approval = await ask(session, "execute", {"sql": "DROP TABLE orders"})
        untouched = file_digest(shop)
        done = await resolve(session, approval["id"])
        again = await resolve(session, approval["id"])
    assert "it drops orders" in approval["action"] and "DROP TABLE orders" in approval["action"]
    assert untouched == before
    assert not done.is_error, done.text
    assert tables(shop) == ["people"]
    assert again.is_error and "already used" in again.text


async def test_a_rejected_sqlite_delete_leaves_the_rows(shop, era):
    async with views_session(make_server(shop, allow_write=True), era=era) as session:
        approval = await ask(session, "execute", {"sql": "DELETE FROM people"})
        rejected = await resolve(session, approval["id"], "reject")
    assert not rejected.is_error
    assert rows(shop, "SELECT name FROM people ORDER BY id") == [("ann",), ("bob",)]


async def test_an_approved_statement_is_checked_again_when_it_runs(shop, era):
    """Approval covers the question the person saw: if the statement would now do something else (the
    table grew a trigger that rewrites another table), it does not run."""
    async with views_session(make_server(shop, allow_write=True), era=era) as session:
        approval = await ask(session, "execute", {"sql": "DELETE FROM orders"})
        connection = sqlite3.connect(shop)
        connection.execute("CREATE TRIGGER wipe AFTER DELETE ON orders BEGIN DELETE FROM people; END")
        connection.commit()
        connection.close()
        refused = await resolve(session, approval["id"])
    assert refused.is_error and "changed since the user approved it" in refused.text
    assert rows(shop, "SELECT count(*) FROM orders") == [(2,)]
    assert rows(shop, "SELECT count(*) FROM people") == [(2,)]


# -- git: a tag deleted through the card -------------------------------------------------------------------


async def test_a_git_tag_delete_waits_for_the_card(tmp_path, era):
    from dockyard_shared.toolsets import Exposure
    from tests.git.helpers import git, make_repo
    from tests.git.helpers import make_server as make_git_server

    repo = make_repo(tmp_path / "project")
    git(repo, "tag", "-a", "v9", "-m", "nine")
    server = make_git_server(repo, exposure=Exposure().enabling("tags"))
    async with views_session(server, era=era) as session:
        approval = await ask(session, "git_tag_delete", {"name": "v9"})
        still = git(repo, "tag", "--list")
        done = await resolve(session, approval["id"])
    assert "v9" in approval["action"] and "v9" in still
    assert not done.is_error and done.structured["tag"] == "v9", done.text
    assert git(repo, "tag", "--list").split() == ["v1.0"]  # v9 gone, the rest as it was
