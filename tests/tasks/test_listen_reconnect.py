"""On PostgreSQL, a replica whose LISTEN connection drops loses the notices sent meanwhile: once it
listens again it tells its subscribers to catch up, and says so on stderr."""

from __future__ import annotations

import logging

import anyio
import psycopg
from sqlalchemy.engine import make_url

from dockyard_tasks.drafts import TaskChanges
from dockyard_tasks.notify import channel_for_schema
from dockyard_tasks.store import TaskStore
from tests.harness import open_session
from tests.postgres import libpq_url
from tests.tasks.helpers import Inbox, make_server


def schema_of(url: str) -> str:
    return make_url(url).query["options"].removeprefix("-csearch_path=")


def listen_backends(url: str) -> list[int]:
    """The backends LISTENing on this test's channel (its schema's: no other test's)."""
    query = "SELECT pid FROM pg_stat_activity WHERE query = %s"
    with psycopg.connect(libpq_url(url), autocommit=True) as connection:
        rows = connection.execute(query, (f'LISTEN "{channel_for_schema(schema_of(url))}"',)).fetchall()
    return [pid for (pid,) in rows]


async def wait_for_backends(url: str, *, other_than: set[int] = frozenset()) -> list[int]:
    with anyio.fail_after(30):
        while not (pids := [p for p in listen_backends(url) if p not in other_than]):
            await anyio.sleep(0.05)
    return pids


async def test_subscribers_are_told_to_catch_up_after_the_listen_connection_is_cut(postgres_url, era, caplog):
    caplog.set_level(logging.WARNING, logger="dockyard_tasks.notify")
    replica = make_server(postgres_url, demo=True)
    other = TaskStore(postgres_url)  # another replica's writes: heard only through NOTIFY
    inbox = Inbox()
    try:
        async with (
            open_session(replica, era=era, message_handler=inbox.handle) as session,
            inbox.subscribed(session, ["task://TASK-4", "project://tasks/summary"]),
        ):
            cursor = str(other.revision())
            (listener,) = await wait_for_backends(postgres_url)
            with psycopg.connect(libpq_url(postgres_url), autocommit=True) as admin:
                assert admin.execute("SELECT pg_terminate_backend(%s)", (listener,)).fetchone()[0]
            # Made while the replica is not listening (it waits a second before reconnecting), or just
            # after: either way its subscribers must hear of it.
            other.update_task("TASK-4", TaskChanges(priority="urgent"), actor="bob")
            await wait_for_backends(postgres_url, other_than={listener})
            await inbox.wait_for("task://TASK-4", "project://tasks/summary", list_changed=1)
            page = (await session.call_ok("changes_since", {"cursor": cursor})).data
        assert [(c["task"], c["field"]) for c in page["changes"]] == [("TASK-4", "priority")]
        assert "change-notice connection restored" in caplog.text
        assert "telling every subscriber to catch up" in caplog.text
    finally:
        other.close()


async def test_the_listen_connection_ends_with_the_server(postgres_url, era):
    """The LISTEN thread belongs to the running server: once its last session ends (the lifespan closes)
    the connection is gone, instead of reconnecting for ever to a database the server no longer serves;
    a later session starts hearing changes again."""
    replica = make_server(postgres_url, demo=True)
    for _ in range(2):
        inbox = Inbox()
        async with (
            open_session(replica, era=era, message_handler=inbox.handle) as session,
            inbox.subscribed(session, ["task://TASK-4"]),
        ):
            await wait_for_backends(postgres_url)
        with anyio.fail_after(30):
            while listen_backends(postgres_url):
                await anyio.sleep(0.05)
