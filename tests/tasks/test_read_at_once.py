"""get_task on SQLite is answered on the event loop when it cannot wait (TaskStore.get_task_at_once), and
in a worker thread otherwise, with the same answer."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time

import pytest

from dockyard_tasks.demo import seed_demo
from dockyard_tasks.server import create_server
from dockyard_tasks.settings import Settings
from dockyard_tasks.store import StoreLimits, TaskDraft, TaskStore
from tests.harness import ERAS, open_session


def test_a_task_read_at_once_is_the_task_read_in_a_worker(store: TaskStore):
    seed_demo(store)
    for task_id in ("TASK-1", "TASK-2", "TASK-5", "task-3"):
        at_once = store.get_task_at_once(task_id)
        if store.postgres:
            assert at_once is None  # network round trips and a pool: always a worker thread
        else:
            assert at_once == store.get_task(task_id)


def test_every_part_of_a_task_read_at_once_equals_the_read_through_sqlalchemy(sqlite_url):
    """The at-once read runs the same statements on the driver's connection (store/prepared.py): dates,
    timestamps, counts, related tasks, labels, comments, history and the cut notes must come out equal."""
    store = TaskStore(sqlite_url, limits=StoreLimits(related=3, history=4))
    store.create_project("WEB", "Web", actor="ann")
    store.create_tasks(
        [
            TaskDraft(project="WEB", title="Parent", labels=["ops", "bug"], due="2026-12-01"),
            TaskDraft(project="WEB", title="Blocker", description="x" * 1_500, assignee="bo"),
            *[TaskDraft(project="WEB", title=f"Child {n}", parent="@0", blocked_by=["@1"]) for n in range(5)],
        ],
        actor="ann",
    )
    for n in range(6):
        store.add_comment("WEB-1", f"comment {n}: 'quoted' \"double\" ünïcode", actor="bo")
    store.add_dependency("WEB-1", "WEB-2", actor="ann")
    store.set_status("WEB-2", "in_progress", actor="bo")
    for task_id in [f"WEB-{n}" for n in range(1, 8)]:
        at_once = store.get_task_at_once(task_id)
        assert at_once is not None and at_once == store.get_task(task_id)
    parent = store.get_task_at_once("WEB-1")
    assert parent.due == "2026-12-01" and parent.labels == ["bug", "ops"] and parent.subtasks_total == 5
    assert parent.note and "3 of 5 subtasks" in parent.note and "4 of 6 comments" in parent.note
    assert parent.open_blockers == ["WEB-2"] and parent.created_at.endswith("Z")
    store.close()


def test_a_read_at_once_never_waits_for_another_thread_reading_at_once(sqlite_url):
    store = TaskStore(sqlite_url)
    seed_demo(store)
    assert store.get_task_at_once("TASK-1") is not None
    with store._at_once_lock:  # as while the warm-up reads at once: the caller goes to a worker instead
        assert store.get_task_at_once("TASK-1") is None
    assert store.get_task_at_once("TASK-1") == store.get_task("TASK-1")
    store.close()


def test_an_unknown_task_read_at_once_is_refused_as_in_a_worker(sqlite_url):
    store = TaskStore(sqlite_url)
    seed_demo(store)
    with pytest.raises(Exception) as at_once:
        store.get_task_at_once("TASK-999")
    with pytest.raises(Exception) as in_worker:
        store.get_task("TASK-999")
    assert str(at_once.value) == str(in_worker.value) and "list_tasks" in str(at_once.value)
    store.close()


@pytest.mark.parametrize("era", ERAS)
async def test_a_locked_database_is_read_in_a_worker_while_the_event_loop_serves_others(sqlite_url, era):
    store = TaskStore(sqlite_url)
    seed_demo(store)
    server = create_server(Settings(database_url=sqlite_url, actor="ann"), store=store)
    async with open_session(server, era=era) as session:
        expected = (await session.call_ok("list_tasks", {"project": "TASK"})).data
        # Another connection holds the file exclusively (possible once this store's pool is closed):
        # the read at once is refused in microseconds, and the worker waits for the lock.
        store.engine.dispose()
        holder = sqlite3.connect(
            sqlite_url.removeprefix("sqlite:///"), isolation_level=None, check_same_thread=False
        )
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("UPDATE projects SET name = name")
        holder.execute("COMMIT")
        assert store.get_task_at_once("TASK-2") is None
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
        # Once the file is free again, reads are answered at once.
        assert store.get_task_at_once("TASK-2") is not None
    store.close()
