"""A database that refuses writes, is full or hangs: what a client hears, through the protocol.

* A read-only or full database is reported as such — nothing saved, a retry may help once it is fixed —
  never as a conflict of values; reads keep working (SQLite files, PostgreSQL).
* On PostgreSQL a statement waiting on a lock is cancelled by the server's own time limit: the call
  answers within the bound, says nothing was saved, and the write never commits later.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from dockyard_shared.toolsets import Exposure
from dockyard_tasks.server import create_server
from dockyard_tasks.settings import Settings
from dockyard_tasks.store import TaskDraft, TaskStore
from tests.harness import ERAS, open_session
from tests.postgres import libpq_url


def server_on(url: str, *, store: TaskStore | None = None, **settings):
    return create_server(
        Settings(database_url=url, actor="ann", exposure=Exposure(toolsets=("all",)), **settings), store=store
    )


def seed(url: str) -> None:
    store = TaskStore(url)
    store.create_project("WEB", "Web", actor="setup")
    store.create_task(TaskDraft("WEB", "first"), actor="setup")
    store.close()


def assert_refused_writes(text: str, *, what: str) -> None:
    assert text.startswith("Error (upstream_unavailable)"), text
    assert what in text and "nothing of this call was saved" in text, text
    assert "Retry: may succeed" in text and "once" in text, text
    assert "conflict" not in text.lower() and "check the values" not in text.lower(), text


# -- a read-only SQLite file ----------------------------------------------------------------------------


@pytest.fixture
def read_only_file(tmp_path) -> Iterator[Path]:
    """A tasks database the server process cannot write: chmod for a normal user; root ignores modes,
    so there the file is made immutable (chattr +i), and the flag removed afterwards."""
    path = tmp_path / "tasks.db"
    seed(f"sqlite:///{path}")
    if os.geteuid() != 0:
        path.chmod(0o444)
        yield path
        path.chmod(0o644)
        return
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot make a file read-only for root here (chattr: {made.stderr.strip()})")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@pytest.mark.parametrize("era", ERAS)
async def test_a_read_only_sqlite_file_serves_reads_and_says_writes_are_refused(read_only_file, era):
    url = f"sqlite:///{read_only_file}"
    async with open_session(server_on(url), era=era) as session:
        listed = (await session.call_ok("list_tasks", {})).data
        assert [t["id"] for t in listed["tasks"]] == ["WEB-1"]
        text = await session.call_error("create_task", {"project": "WEB", "title": "second"})
        assert_refused_writes(text, what="read-only")
        text = await session.call_error("add_comment", {"task_id": "WEB-1", "body": "hello"})
        assert_refused_writes(text, what="read-only")
        detail = (await session.call_ok("get_task", {"task_id": "WEB-1"})).data
        assert detail["version"] == 1 and detail["comments"] == []


# -- a full SQLite database -----------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_a_full_sqlite_database_says_it_is_full_and_saves_nothing(tmp_path, era):
    url = f"sqlite:///{tmp_path / 'tasks.db'}"
    seed(url)
    store = TaskStore(url)

    # As a full disk does: SQLite may not grow the file past the pages it has (max_page_count).
    @event.listens_for(store.engine, "connect")
    def no_room(dbapi_connection, _record) -> None:
        pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
        dbapi_connection.execute(f"PRAGMA max_page_count={pages}")

    store.engine.dispose()  # every connection from now on is made with the limit
    try:
        async with open_session(server_on(url, store=store), era=era) as session:
            big = {"project": "WEB", "title": "big", "description": "x" * 20_000}
            text = await session.call_error("create_task", big)
            assert_refused_writes(text, what="is full")
            listed = (await session.call_ok("list_tasks", {})).data
            assert [t["id"] for t in listed["tasks"]] == ["WEB-1"]
    finally:
        store.close()


def test_postgresql_disk_full_is_worded_as_a_full_database():
    """No safe way to fill the test server's disk: the SQLSTATE it would answer (53100) is mapped here."""
    from dockyard_tasks.store.errors import problem_for

    error = OperationalError("INSERT …", {}, psycopg.errors.DiskFull("could not extend file: No space left"))
    text = problem_for(error, writing=True).for_model()
    assert_refused_writes(text, what="is full")


# -- PostgreSQL: read-only, and a hung statement -----------------------------------------------------


def with_options(url: str, *options: str) -> str:
    """``url`` with libpq ``-c`` options added to the ones it holds (the test schema's search_path)."""
    parsed = make_url(url)
    held = parsed.query.get("options", "")
    return parsed.update_query_dict({"options": " ".join([held, *options]).strip()}).render_as_string(
        hide_password=False
    )


@pytest.mark.parametrize("era", ERAS)
async def test_a_read_only_postgresql_database_serves_reads_and_says_writes_are_refused(postgres_url, era):
    seed(postgres_url)
    url = with_options(postgres_url, "-cdefault_transaction_read_only=on")
    async with open_session(server_on(url), era=era) as session:
        listed = (await session.call_ok("list_tasks", {})).data
        assert [t["id"] for t in listed["tasks"]] == ["WEB-1"]
        text = await session.call_error("update_task", {"task_id": "WEB-1", "title": "renamed"})
        assert_refused_writes(text, what="read-only")


class RowLock:
    """Another session holding a lock on the database until released."""

    def __init__(self, url: str, statement: str) -> None:
        self.connection = psycopg.connect(libpq_url(url))
        self.connection.execute(statement)  # the transaction stays open: the lock is held

    def release(self) -> None:
        self.connection.rollback()
        self.connection.close()


@pytest.mark.parametrize("era", ERAS)
async def test_a_write_waiting_on_a_postgresql_lock_answers_within_the_bound_and_never_commits(
    postgres_url, era
):
    seed(postgres_url)
    lock = RowLock(postgres_url, "SELECT * FROM tasks FOR UPDATE")
    try:
        async with open_session(server_on(postgres_url, statement_timeout_s=1.0), era=era) as session:
            started = time.monotonic()
            outcome = await session.call("update_task", {"task_id": "WEB-1", "title": "renamed"}, timeout=30)
            elapsed = time.monotonic() - started
            assert outcome.is_error, outcome.text
            assert outcome.text.startswith("Error (limit_exceeded)"), outcome.text
            assert "limit of 1 s" in outcome.text and "a lock another transaction holds" in outcome.text
            assert "nothing of this call was saved" in outcome.text and "Retry: may succeed" in outcome.text
            assert elapsed < 6, f"answered after {elapsed:.1f} s, for a bound of 1 s"
            lock.release()
            detail = (await session.call_ok("get_task", {"task_id": "WEB-1"})).data
            assert detail["title"] == "first" and detail["version"] == 1  # rolled back, not committed later
    finally:
        if not lock.connection.closed:
            lock.release()


@pytest.mark.parametrize("era", ERAS)
async def test_a_read_waiting_on_a_postgresql_lock_is_a_time_limit_not_a_conflict(postgres_url, era):
    seed(postgres_url)
    server = server_on(postgres_url, statement_timeout_s=1.0)  # opened (and judged) before the lock
    lock = RowLock(postgres_url, "LOCK TABLE tasks IN ACCESS EXCLUSIVE MODE")
    try:
        async with open_session(server, era=era) as session:
            text = await session.call_error("list_tasks", {})
            assert text.startswith("Error (limit_exceeded)"), text
            assert "nothing was changed" in text and "saved" not in text, text
    finally:
        lock.release()


def test_the_statement_timeout_flag_reaches_the_settings():
    from dockyard_tasks.__main__ import entry

    args = entry.parser().parse_args(["--statement-timeout", "2.5", "--database-url", "sqlite:///x.db"])
    from dockyard_tasks.settings import settings_from

    assert settings_from(args).statement_timeout_s == 2.5
    refused = subprocess.run(
        [str(Path(os.sys.executable).parent / "dockyard-tasks"), "--statement-timeout", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert refused.returncode == 2 and "--statement-timeout" in refused.stderr


def test_a_missing_privilege_on_a_read_is_not_worded_as_a_read_only_database():
    from dockyard_tasks.store.errors import problem_for

    denied = psycopg.errors.InsufficientPrivilege("permission denied for table tasks")
    text = problem_for(OperationalError("SELECT …", {}, denied), writing=False).for_model()
    assert text.startswith("Error (upstream_unavailable)") and "refuses this read" in text, text
    assert "lacks the privilege" in text and "nothing was changed" in text and "saved" not in text, text


def test_a_connection_lost_while_committing_says_the_change_may_have_been_saved():
    from dockyard_tasks.store.errors import problem_for

    lost = psycopg.errors.AdminShutdown("terminating connection due to administrator command")
    error = OperationalError("COMMIT", {}, lost, connection_invalidated=True)
    text = problem_for(error, writing=True, committing=True).for_model()
    assert "may or may not have been saved" in text and "get_task" in text, text
    before = problem_for(error, writing=True).for_model()  # lost before the commit: nothing was saved
    assert "nothing of this call was saved" in before and "may or may not" not in before, before
