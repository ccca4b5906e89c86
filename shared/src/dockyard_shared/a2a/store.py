"""Where an agent keeps its A2A tasks: the served server's own PostgreSQL database, else this process's memory.

A server names its database through :attr:`~dockyard_shared.runner.ServerEntry.database` (the a2a layer never
imports a server). On PostgreSQL the tasks (state, history, artifacts) live in the table ``a2a_tasks_NAME``
(``a2a_tasks_tasks``, ``a2a_tasks_name_origin``): apart from the server's own tables and from each other
agent's, created at start, so any replica of ``dockyard a2a`` answers ``tasks/get`` for a task another one
ran. A call waiting for its ``input-required`` answer stays in the process that started it.

SQLite is not used for A2A tasks (it would need an async SQLite driver; the in-memory store serves one
process as well), nor is any other database.
"""

from __future__ import annotations

import logging
import re
import warnings
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

from ..runner import StartupRefused

if TYPE_CHECKING:
    from a2a.server.tasks import TaskStore

__all__ = ["table_name", "task_store"]

log = logging.getLogger("dockyard.a2a")

# One table model per name per process (the a2a-sdk declares each on its shared metadata, which refuses a
# second): a store is made once per table and reused by every later `serving` of this process on that URL.
_stores: dict[str, tuple[str, TaskStore]] = {}


def table_name(agent: str) -> str:
    """The table of ``agent``'s A2A tasks: ``a2a_tasks_`` and the agent's name as an identifier."""
    return "a2a_tasks_" + re.sub(r"[^a-z0-9_]", "_", agent.lower())


def _postgres_url(url: str | None) -> str | None:
    """``url`` pointed at psycopg 3's async driver when it names PostgreSQL, else None."""
    if not url:
        return None
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return None  # the server's own build reports a URL it cannot read
    if parsed.get_backend_name() not in ("postgresql", "postgres"):
        return None
    return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)


async def task_store(agent: str, database: str | None, stack: AsyncExitStack) -> TaskStore:
    """``agent``'s task store: its table in ``database`` when that is PostgreSQL (created now, so a database
    that cannot hold it stops the start), else a new in-memory store."""
    from a2a.server.tasks import InMemoryTaskStore

    url = _postgres_url(database)
    if url is None:
        return InMemoryTaskStore()
    from a2a.server.tasks import DatabaseTaskStore
    from sqlalchemy.engine import make_url
    from sqlalchemy.ext.asyncio import create_async_engine

    table = table_name(agent)
    known = _stores.get(table)
    if known is not None and known[0] != url:
        raise StartupRefused(
            f"dockyard-{agent}'s A2A tasks are already kept in another database by this process; "
            "start a separate dockyard a2a process for this one."
        )
    shown = make_url(url).render_as_string(hide_password=True)
    if known is None:
        engine = create_async_engine(url, pool_pre_ping=True)
        with warnings.catch_warnings():
            # Each table's model is a class named TaskModel: SQLAlchemy warns that the second replaces the
            # first in its by-name lookup, which the SDK never uses (checked on a2a-sdk 1.3.0).
            warnings.filterwarnings("ignore", message="This declarative base already contains a class")
            store = DatabaseTaskStore(engine, table_name=table)
        _stores[table] = (url, store)
    else:
        store = known[1]
    # Pooled connections belong to this event loop: closed when serving ends (the pool reconnects on reuse).
    stack.push_async_callback(store.engine.dispose)
    try:
        try:
            await store.initialize()
        except Exception:
            # A replica starting at the same moment may have created the table between the check and the
            # CREATE: the second look finds it.
            await store.initialize()
    except Exception as error:
        raise StartupRefused(
            f"dockyard-{agent}'s A2A tasks cannot be kept in {shown} (table {table}): "
            f"{type(error).__name__}. Check the database is running and the user may create tables."
        ) from None
    log.info("A2A tasks of dockyard-%s kept in %s (table %s)", agent, shown, table)
    return store
