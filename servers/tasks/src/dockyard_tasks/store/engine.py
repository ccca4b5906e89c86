"""Connections: one SQLAlchemy engine for SQLite or PostgreSQL, with each one's settings for safe sharing.

SQLite: WAL (readers never wait for the writer), a busy timeout (writers queue instead of failing),
foreign keys on, and write transactions opened with ``BEGIN IMMEDIATE`` — a deferred transaction that
reads and then writes fails outright (SQLITE_BUSY_SNAPSHOT) when another process wrote in between,
which the busy timeout cannot help with.

PostgreSQL (psycopg 3): writes lock the rows they compare (``SELECT … FOR UPDATE``), so concurrent
replicas serialise per task rather than per database. Every session runs with ``statement_timeout``
and ``lock_timeout`` (``--statement-timeout``, 10 s by default) and ``idle_in_transaction_session_timeout``:
a statement that waits on a lock or a stalled server is cancelled by PostgreSQL itself, its transaction
rolled back, so a call answers within the bound and a write it reports as failed never commits later.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import ArgumentError

from dockyard_shared import InvalidArgument

__all__ = [
    "BUSY_TIMEOUT_MS",
    "STATEMENT_TIMEOUT_S",
    "WRITE",
    "is_postgres",
    "make_engine",
    "normalise_url",
    "shown_url",
]

BUSY_TIMEOUT_MS = 10_000
STATEMENT_TIMEOUT_S = 10.0  # PostgreSQL: statement_timeout and lock_timeout (--statement-timeout)
# Execution option marking a connection whose transaction will write (see the module docstring).
WRITE = "dockyard_write"


def normalise_url(url: str) -> str:
    """``postgresql://`` and ``postgres://`` use psycopg 3; ``sqlite:///path`` as is; others refused."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise InvalidArgument(
            "The database URL is not a URL.",
            next_step="Use sqlite:///path/to/tasks.db or postgresql://user@host/dbname.",
        ) from None
    backend = parsed.get_backend_name()
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    if backend == "sqlite" and parsed.get_driver_name() in ("pysqlite", "sqlite", ""):
        if not parsed.database or parsed.database == ":memory:":
            raise InvalidArgument(
                "An in-memory SQLite database would vanish with the process and cannot be shared.",
                next_step="Give a file: sqlite:///path/to/tasks.db.",
            )
        return parsed.set(drivername="sqlite").render_as_string(hide_password=False)
    raise InvalidArgument(
        f"Databases of kind {backend!r} are not supported.",
        next_step="Use sqlite:///path/to/tasks.db or postgresql://user@host/dbname.",
    )


def shown_url(url: str) -> str:
    """The URL with any password masked, for logs and messages."""
    return make_url(url).render_as_string(hide_password=True)


def is_postgres(engine: Engine) -> bool:
    return engine.dialect.name == "postgresql"


def make_engine(url: str, *, pool_size: int = 5, statement_timeout_s: float = STATEMENT_TIMEOUT_S) -> Engine:
    url = normalise_url(url)
    if url.startswith("sqlite"):
        path = Path(make_url(url).database or "")
        path.parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
            pool_size=pool_size,
            max_overflow=10,
        )
        _configure_sqlite(engine)
        return engine
    engine = create_engine(
        url,
        pool_size=pool_size,
        max_overflow=10,
        pool_pre_ping=True,
        connect_args={"connect_timeout": 10},
    )
    _configure_postgres(engine, statement_timeout_s)
    return engine


def _configure_postgres(engine: Engine, statement_timeout_s: float) -> None:
    timeout_ms = max(1, round(statement_timeout_s * 1000))
    # Sent with the connection's start-up packet (no round trip), after any options the URL holds.
    settings = (
        f"-c statement_timeout={timeout_ms} -c lock_timeout={timeout_ms} "
        f"-c idle_in_transaction_session_timeout={max(60_000, 6 * timeout_ms)}"
    )

    @event.listens_for(engine, "do_connect")
    def on_do_connect(_dialect, _record, _cargs, cparams: dict) -> None:
        cparams["options"] = f"{cparams['options']} {settings}" if cparams.get("options") else settings


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def on_connect(dbapi_connection: sqlite3.Connection, _record) -> None:
        # We issue BEGIN ourselves (below); the driver's own implicit transactions would get in the way.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")  # first: the next statement may wait
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        # WAL with synchronous=NORMAL is durable against a process crash (a SIGKILL), which is what a
        # server needs; only power loss may drop the last commits.
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def on_begin(connection: Connection) -> None:
        write = connection.get_execution_options().get(WRITE, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
