"""A read the database could not serve is never worded as a conflict: nothing was refused, nothing raced."""

from __future__ import annotations

import sqlite3
from contextlib import closing

from sqlalchemy.exc import OperationalError

from dockyard_tasks.store.errors import problem_for


def _busy_error(tmp_path) -> OperationalError:
    """SQLite's own 'database is locked', as SQLAlchemy raises it, from a file another connection holds."""
    path = tmp_path / "held.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as holder:
        holder.execute("CREATE TABLE t (x)")
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        with closing(sqlite3.connect(path, timeout=0)) as reader:
            try:
                reader.execute("SELECT * FROM t").fetchall()
            except sqlite3.OperationalError as error:
                return OperationalError("SELECT * FROM t", {}, error)
    raise AssertionError("the file was not locked")


def test_a_busy_read_is_an_unavailable_database_and_a_busy_write_a_conflict(tmp_path):
    error = _busy_error(tmp_path)
    read = problem_for(error, writing=False, timeout_s=10)
    assert read.category == "upstream_unavailable" and read.retryable, read
    assert "busy" in str(read) and "nothing was changed" in str(read)
    write = problem_for(error, writing=True, timeout_s=10)
    assert write.category == "conflict" and write.retryable
    assert "nothing of this call was saved" in str(write)
