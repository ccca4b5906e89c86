"""Every read of the store runs in a worker thread (the store's methods block): get_task waiting for the
database does not hold up the event loop."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time

import pytest

from dockyard_tasks.demo import seed_demo
from dockyard_tasks.server import create_server
from dockyard_tasks.settings import Settings
from dockyard_tasks.store import TaskStore
from tests.harness import ERAS, open_session


@pytest.mark.parametrize("era", ERAS)
async def test_a_task_read_waiting_for_a_locked_database_does_not_hold_up_the_event_loop(sqlite_url, era):
    store = TaskStore(sqlite_url)
    seed_demo(store)
    server = create_server(Settings(database_url=sqlite_url, actor="ann"), store=store)
    async with open_session(server, era=era) as session:
        expected = (await session.call_ok("list_tasks", {"project": "TASK"})).data
        # Another connection holds the file exclusively (possible once this store's pool is closed):
        # get_task waits for the lock in a worker thread, and the event loop serves other requests.
        store.engine.dispose()
        holder = sqlite3.connect(
            sqlite_url.removeprefix("sqlite:///"), isolation_level=None, check_same_thread=False
        )
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("UPDATE projects SET name = name")
        holder.execute("COMMIT")
        threading.Timer(0.5, holder.close).start()
        started = time.monotonic()
        done: dict[str, float] = {}

        async def read_task():
            outcome = await session.call_ok("get_task", {"task_id": "TASK-2"})
            done["get_task"] = time.monotonic() - started
            return outcome

        async def list_prompts():
            await session.list_prompts()
            done["prompts"] = time.monotonic() - started

        task, _ = await asyncio.gather(read_task(), list_prompts())
        assert done["prompts"] < done["get_task"] and done["get_task"] >= 0.4
        assert task.data["id"] == "TASK-2" and task.data["title"] in str(expected)
    store.close()
