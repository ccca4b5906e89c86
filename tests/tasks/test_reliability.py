"""No lost update and no half-written batch, against real server processes over HTTP.

* 20 clients update the same tasks at once, each with the version it read: every call succeeds or gets
  a conflict, and the final state and the history equal exactly the successful calls — one server on
  SQLite, and two replicas sharing one PostgreSQL database.
* A server killed with SIGKILL in the middle of a batch leaves the batch wholly absent (or, had it
  committed, wholly present) and the database sound.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from collections import defaultdict

import anyio
import psycopg
import pytest

from dockyard_tasks.store import TaskDraft, TaskFilter, TaskStore
from tests.harness import MODERN, http_server, open_session
from tests.postgres import libpq_url
from tests.tasks.helpers import tasks_launch

pytestmark = pytest.mark.slow

CLIENTS = 20
ROUNDS = 3
TASKS = 4


def seeded(url: str) -> list[str]:
    store = TaskStore(url)
    store.create_project("RACE", "Race", actor="setup")
    created = store.create_tasks([TaskDraft("RACE", f"task {i}") for i in range(TASKS)], actor="setup")
    store.close()
    return [item.id for item in created.created]


async def race(urls: list[str], task_ids: list[str]) -> list[dict]:
    """Every client reads a task's version and updates its title with it, ROUNDS times."""
    outcomes: list[dict] = []

    async def client(number: int) -> None:
        async with open_session(urls[number % len(urls)], era=MODERN) as session:
            for round_ in range(ROUNDS):
                task_id = task_ids[(number + round_) % len(task_ids)]
                version = (await session.call_ok("get_task", {"task_id": task_id})).data["version"]
                title = f"client {number} round {round_}"
                outcome = await session.call(
                    "update_task", {"task_id": task_id, "title": title, "expected_version": version}
                )
                outcomes.append(
                    {
                        "task": task_id,
                        "title": title,
                        "ok": not outcome.is_error,
                        "text": outcome.text,
                        "version": None if outcome.is_error else outcome.data["version"],
                    }
                )

    async with anyio.create_task_group() as group:
        for number in range(CLIENTS):
            group.start_soon(client, number)
    return outcomes


def check_no_lost_update(url: str, task_ids: list[str], outcomes: list[dict]) -> None:
    assert len(outcomes) == CLIENTS * ROUNDS
    for outcome in outcomes:
        assert outcome["ok"] or outcome["text"].startswith("Error (conflict)"), outcome["text"]
    won = defaultdict(list)
    for outcome in outcomes:
        if outcome["ok"]:
            won[outcome["task"]].append(outcome)
    assert set(won) == set(task_ids)  # each task was won at least once
    store = TaskStore(url)
    history = defaultdict(list)
    cursor = None
    while True:
        page = store.changes_since(cursor, project="RACE", limit=200)
        for change in page.changes:
            if change.field == "title":
                history[change.task].append((change.version, change.new))
        cursor = page.next_cursor
        if not page.has_more:
            break
    for task_id in task_ids:
        successes = sorted((o["version"], o["title"]) for o in won[task_id])
        assert history[task_id] == successes, task_id  # every success recorded once, in version order
        assert [v for v, _ in successes] == list(range(2, 2 + len(successes)))
        detail = store.get_task(task_id)
        assert detail.version == 1 + len(successes)
        assert detail.title == successes[-1][1]
    store.close()


async def test_twenty_clients_on_one_server_lose_no_update(sqlite_url, log_dir):
    task_ids = seeded(sqlite_url)
    with http_server(tasks_launch(sqlite_url), log_dir=log_dir) as server:
        outcomes = await race([server.url()], task_ids)
    check_no_lost_update(sqlite_url, task_ids, outcomes)


async def test_twenty_clients_on_two_postgresql_replicas_lose_no_update(postgres_url, log_dir):
    task_ids = seeded(postgres_url)
    with (
        http_server(tasks_launch(postgres_url), log_dir=log_dir) as one,
        http_server(tasks_launch(postgres_url), log_dir=log_dir) as two,
    ):
        outcomes = await race([one.url(), two.url()], task_ids)
    check_no_lost_update(postgres_url, task_ids, outcomes)


# -- SIGKILL mid-batch --------------------------------------------------------------------------------

IMPORTED = 2_000


def big_document() -> dict:
    moment = "2026-01-01T00:00:00Z"
    tasks = [
        {
            "id": f"BIG-{n}",
            "title": f"imported task {n}",
            "description": "x" * 200,
            "labels": ["import"],
            "blocked_by": [f"BIG-{n - 1}"] if n > 1 else [],
            "created_at": moment,
            "created_by": "mover",
            "updated_at": moment,
            "comments": [{"author": "mover", "body": "carried over", "created_at": moment}],
            "history": [{"at": moment, "actor": "mover", "action": "created", "new": f"imported task {n}"}],
        }
        for n in range(1, IMPORTED + 1)
    ]
    project = {"key": "BIG", "name": "Big", "created_at": moment, "created_by": "mover", "next_number": 1}
    return {"format": "dockyard-tasks/1", "project": project, "tasks": tasks}


def sqlite_writer_active(path: str) -> bool:
    """Is a write transaction open? (Taking the write lock without waiting fails while one is.)"""
    connection = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        connection.close()


def postgres_writer_active(application: str) -> bool:
    from tests.postgres import postgres_base_url

    with psycopg.connect(libpq_url(postgres_base_url()), autocommit=True) as connection:
        row = connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND xact_start IS NOT NULL"
            " AND state IN ('active', 'idle in transaction')",
            (application,),
        ).fetchone()
    return bool(row and row[0])


async def kill_during_import(url: str, writer_active, log_dir) -> str:
    """Start an import, SIGKILL the server once its transaction is open; what the database holds then."""
    document = big_document()
    with http_server(tasks_launch(url), log_dir=log_dir) as server:

        async def importer() -> None:
            try:
                async with open_session(server.url(), era=MODERN, timeout=30) as session:
                    await session.call("import_project", {"document": document})
            except Exception:  # the server dies under it: expected
                pass

        async with anyio.create_task_group() as group:
            group.start_soon(importer)
            deadline = time.monotonic() + 30
            while not await anyio.to_thread.run_sync(writer_active):
                assert time.monotonic() < deadline, "the import never started"
                await anyio.sleep(0.002)
            os.kill(server.process.pid, signal.SIGKILL)
            server.process.wait()
            group.cancel_scope.cancel()
    store = TaskStore(url)  # opening it again must work: the database is sound
    try:
        if "BIG" not in store.project_keys("BIG"):
            assert store.list_tasks(TaskFilter(text="imported task")).tasks == []
            return "nothing"
        summary = store.summary("BIG")
        assert summary.total == IMPORTED
        assert store.get_task(f"BIG-{IMPORTED}").open_blockers == [f"BIG-{IMPORTED - 1}"]
        return "everything"
    finally:
        store.close()


async def test_a_server_killed_mid_batch_leaves_sqlite_consistent(tmp_path, log_dir):
    outcomes = []
    for attempt in range(3):
        path = tmp_path / f"kill-{attempt}.db"
        url = f"sqlite:///{path}"
        TaskStore(url).close()
        outcomes.append(await kill_during_import(url, lambda p=str(path): sqlite_writer_active(p), log_dir))
        connection = sqlite3.connect(path)
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert connection.execute("PRAGMA foreign_key_check").fetchall() == []
        connection.close()
        if "nothing" in outcomes:
            break
    assert "nothing" in outcomes, f"the kill never landed inside the transaction: {outcomes}"


async def test_a_server_killed_mid_batch_leaves_postgresql_consistent(postgres_url, log_dir):
    application = "dockyard-kill-test"
    url = postgres_url + f"&application_name={application}"
    TaskStore(url).close()
    outcome = await kill_during_import(url, lambda: postgres_writer_active(application), log_dir)
    assert outcome == "nothing"
