"""Guarded SQLite connections: how every statement of this server reaches SQLite.

SQLAlchemy is the pool only (an engine per database and mode); the statements run on the pooled
``sqlite3`` connection, so a result can stream from its cursor and every statement runs under a
:class:`Budget` (a deadline and a cancellation flag checked by SQLite's progress handler).

Besides the authorizer (:mod:`..safety`), every connection caps the length of any one string, blob or
stored row at :data:`MAX_VALUE_BYTES`, so no statement can build a gigabyte value (``printf('%.*c',
900000000, 'x')``) in SQLite's memory and then again in Python's.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.pool import QueuePool

from dockyard_shared import InvalidArgument, Problem

from ..safety import REPLACED_FUNCTIONS, AuthorizerLog, authorizer, install_functions, refuse_slow_functions
from ..settings import Limits

__all__ = [
    "MAX_LIKE_PATTERN_BYTES",
    "MAX_VALUE_BYTES",
    "PROGRESS_STEPS",
    "Budget",
    "GuardedConnection",
    "Params",
    "bind",
    "checkout",
    "connect",
    "engine",
    "one_statement",
    "quote_identifier",
    "quote_literal",
]

Params = dict[str, Any] | list[Any] | None

# The longest string or blob, and the largest stored row, any statement may make or read
# (SQLITE_LIMIT_LENGTH). Far above what a reply shows (a text value is cut at max_cell_chars, a blob is
# a 32-byte preview), so it only bounds memory: without it printf('%.*c', 900000000, 'x') builds ~1 GB
# in SQLite and again in Python. The price, paid knowingly: a value stored larger than this cannot be
# read at all (not even with substr(); length() of a blob still works), a row holding one cannot be
# UPDATEd, and in write mode no INSERT can store a value (or row) this large — zeroblob(n) included.
MAX_VALUE_BYTES = 16 * 1024 * 1024
# The longest LIKE/GLOB pattern. One LIKE is a single VM step, out of the time limit's reach, and costs
# text length × pattern length: measured against a 16 MiB text, ~15 ms per pattern byte (2 s at 128
# bytes; SQLite's default limit, 50,000 bytes, would be ~12 minutes per row).
MAX_LIKE_PATTERN_BYTES = 128
# SQLite calls the progress handler (the time limit and cancellation check, a Python call) every this
# many VM instructions: ~0.1 ms of work apart, so a limit is kept to well under a millisecond, and a
# full scan of a million rows pays ~1,000 Python calls instead of ~10,000 (measured: 1000 steps cost
# 2-3% of an aggregate over the bench's 1,000,000 rows, 10,000 steps under 1%).
PROGRESS_STEPS = 10_000


@dataclass
class Budget:
    """How long one statement may run, and whether its caller has gone away."""

    timeout_ms: int
    deadline: float = 0.0
    cancelled: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.timeout_ms / 1000

    def expired(self) -> bool:
        return self.cancelled.is_set() or time.monotonic() > self.deadline


class GuardedConnection(sqlite3.Connection):
    """A sqlite3 connection that remembers what its authorizer saw.

    printf/format, instr and replace are Python functions here (:func:`..safety.install_functions`),
    and with ``trusted_schema`` OFF SQLite refuses an application function inside a view, trigger,
    generated column or index expression ("unsafe use of replace()"): Python's sqlite3 cannot mark
    one innocuous. So a statement refused only for that runs again with ``trusted_schema`` ON for
    this checkout (:func:`checkout` turns it off again): the schema then gets the same bounded
    functions as the statement, and the authorizer still checks every function a view or trigger calls.
    """

    auth_log: AuthorizerLog
    schema_trusted: bool = False

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:  # type: ignore[override]
        try:
            return super().execute(sql, parameters)
        except sqlite3.DatabaseError as error:  # "malformed database schema" for a generated column
            if self.schema_trusted or not _unsafe_use_of_replaced_function(str(error)):
                raise
        self.set_trusted_schema(True)
        return super().execute(sql, parameters)

    def set_trusted_schema(self, on: bool) -> None:
        with self.auth_log.trust_control():
            super().execute(f"PRAGMA trusted_schema = {'ON' if on else 'OFF'}")
        self.schema_trusted = on

    def limit_to(self, *budgets: Budget) -> None:
        """Interrupt the running statement once any of ``budgets`` expires."""
        if len(budgets) == 1:
            (only,) = budgets
            self.set_progress_handler(lambda: 1 if only.expired() else 0, PROGRESS_STEPS)
        else:
            self.set_progress_handler(lambda: 1 if any(b.expired() for b in budgets) else 0, PROGRESS_STEPS)


def _unsafe_use_of_replaced_function(message: str) -> bool:
    return any(f"unsafe use of {name}()" in message.lower() for name in REPLACED_FUNCTIONS)


def connect(path: Path, *, writable: bool, create: bool, limits: Limits) -> GuardedConnection:
    mode = "rwc" if create else "rw" if writable else "ro"
    uri = f"file:{quote(str(path))}?mode={mode}"
    connection = sqlite3.connect(
        uri,
        uri=True,
        factory=GuardedConnection,
        check_same_thread=False,  # pooled: used by one worker thread at a time, not always the same one
        isolation_level=None,  # autocommit: every call is its own transaction
        timeout=limits.busy_timeout_ms / 1000,
        # Every statement is compiled afresh so the authorizer sees (and logs) each one: a cached
        # statement would skip it, and destructive-write detection reads that log.
        cached_statements=0,
    )
    # Before the authorizer goes on, while these pragmas are still ours to run.
    connection.execute("PRAGMA trusted_schema = OFF")
    connection.execute("PRAGMA foreign_keys = ON")
    connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    connection.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, MAX_LIKE_PATTERN_BYTES)
    connection.auth_log = AuthorizerLog()
    install_functions(connection, connection.auth_log, max_length=MAX_VALUE_BYTES)
    connection.set_authorizer(authorizer(writable=writable, log=connection.auth_log))
    return connection


def engine(path: Path, *, writable: bool, create: bool, limits: Limits) -> Engine:
    """A pool of guarded connections to ``path`` in one mode."""
    pool = create_engine(
        f"sqlite:///{path}",
        creator=lambda: connect(path, writable=writable, create=create, limits=limits),
        poolclass=QueuePool,
        pool_size=4,
        max_overflow=16,
        pool_timeout=limits.timeout_ms / 1000,
    )
    # Listeners run in the order they were added: this one after the dialect's, which registers regexp.
    event.listen(
        pool, "connect", lambda connection, _: refuse_slow_functions(connection, connection.auth_log)
    )
    return pool


@contextmanager
def checkout(
    pool: Engine,
    *,
    budget: Budget | None,
    problem: Callable[[BaseException, GuardedConnection | None], Problem],
) -> Iterator[GuardedConnection]:
    """A pooled connection under ``budget``, put back clean: SQLite errors become ``problem(...)``.

    Clean means: no progress handler, ``trusted_schema`` off, no open transaction (only a trial run
    opens one; it never reaches the pool) — a connection that cannot be made so is closed instead.
    """
    try:
        pooled = pool.raw_connection()
    except Exception as error:
        raise problem(error, None) from None
    connection: GuardedConnection = pooled.driver_connection  # type: ignore[assignment]
    connection.auth_log.reset()
    if budget is not None:
        connection.limit_to(budget)
    try:
        yield connection
    except sqlite3.Error as error:
        raise problem(error, connection) from None
    finally:
        connection.set_progress_handler(None, 0)
        if connection.schema_trusted:
            try:
                connection.set_trusted_schema(False)
            except sqlite3.Error:
                pooled.invalidate()
        if connection.in_transaction:
            try:
                with connection.auth_log.transaction_control():
                    connection.execute("ROLLBACK")
            except sqlite3.Error:
                pooled.invalidate()  # closed instead of pooled: SQLite rolls back on close
        pooled.close()


def bind(params: Params) -> Sequence[Any] | dict[str, Any]:
    if params is None:
        return ()
    if isinstance(params, dict):
        return {str(k).lstrip(":@$"): v for k, v in params.items()}
    return list(params)


def one_statement(sql: str) -> str:
    text = sql.strip()
    if not text:
        raise InvalidArgument("The SQL is empty.", next_step="Pass one SQL statement.")
    # A trailing semicolon is fine; anything after it is a second statement, which sqlite3 refuses
    # itself ("one statement at a time") when the statement runs.
    return text


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
