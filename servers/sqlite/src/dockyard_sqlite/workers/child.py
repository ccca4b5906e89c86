"""The process that runs this server's SQLite statements, so that any one of them can be stopped.

SQLite checks the time limit (its progress handler) only between VM steps, and a thread cannot be
stopped from outside. Compiling a statement is not a VM step — a kilobyte of nested CTEs doubles
prepare time and memory per level — and neither is one function call: ``trim(x, y)`` of two long
texts, LIKE against a 16 MiB text, ``printf('%.*c', 2147483647, 'x')`` each run for seconds to hours
inside one step. So every statement runs here, in a worker process that the server (:mod:`.process`,
:mod:`.pool`) kills when the statement outlives its deadline by a margin or its request is cancelled,
and replaces:

- The address space is capped (``RLIMIT_AS``) and so is SQLite's heap (``PRAGMA hard_heap_limit``,
  which makes a runaway compile fail with "out of memory" long before the address-space cap).
- No application function is registered — no Python ``regexp``, no Python replacements — so no
  schema expression (a view, a generated column, an index) can reach Python code, and a database
  whose schema names an unknown function still opens: only the objects using it fail, and say so.
- Every connection gets the authorizer (:mod:`..safety`) and SQLite's own limits (:data:`.protocol.LIMITS`).
- Pages are read and cut here (:mod:`..rows`), so only a bounded page leaves this process.

It imports only the standard library, pydantic-core and this package's lean modules, so it starts in
about a tenth of a second and its resident size is small (measured: ~25 MB).

The messages and their framing are in :mod:`.protocol`.
"""

from __future__ import annotations

import os
import resource
import sqlite3
import sys
import threading
import time
from collections import OrderedDict
from typing import Any
from urllib.parse import quote

from ..csv_rows import csv_chunk
from ..rows import json_chars, read_page, skip_rows
from ..safety import AuthorizerLog, authorizer
from .protocol import HEADER, LIMITS, MAX_ATTACHED, MEMORY, frame, loads, write_message

__all__ = ["PROGRESS_STEPS", "main"]

# SQLite calls the progress handler (the deadline check, a Python call) every this many VM
# instructions: ~0.1 ms of work apart; a full scan of a million rows pays ~1,000 Python calls
# (measured: under 1% of an aggregate over the bench's 1,000,000 rows).
PROGRESS_STEPS = 10_000
# How many databases one worker keeps open (each holds up to 2 MB of page cache).
_KEPT_CONNECTIONS = 8
# The most one read of the requests takes from the pipe (a larger buffer is mapped and unmapped on
# every read: see MALLOC_MMAP_THRESHOLD_ in .process).
_READ_BYTES = 1 << 16
# Cursors one lease may keep open (the catalog code nests at most two).
_KEPT_CURSORS = 16


# -- connections -----------------------------------------------------------------------------


class _Connection(sqlite3.Connection):
    auth_log: AuthorizerLog
    write_pages: int  # how many pages one statement may add to the file (0: read-only)

    def limit_growth(self) -> None:
        """Let the next statement grow the file by at most ``write_pages`` pages ("database or disk
        is full" past that): max_page_count is the connection's own setting, not the file's."""
        with self.auth_log.own_statement():
            pages = self.execute("PRAGMA page_count").fetchone()[0]
            self.execute(f"PRAGMA max_page_count = {pages + self.write_pages}")


def _open(spec: tuple) -> _Connection:
    path, writable, create, busy_timeout_ms, max_write_bytes, attach = spec
    mode = "rwc" if create else "rw" if writable else "ro"
    connection = sqlite3.connect(
        "file::memory:" if path == MEMORY else f"file:{quote(path)}?mode={mode}",
        uri=True,
        factory=_Connection,
        isolation_level=None,  # autocommit: every call is its own transaction
        timeout=busy_timeout_ms / 1000,
        # Every statement is compiled afresh so the authorizer sees (and logs) each one: a cached
        # statement would skip it, and destructive-write detection reads that log.
        cached_statements=0,
    )
    # Before the authorizer goes on, while these pragmas are still ours to run.
    connection.execute("PRAGMA trusted_schema = OFF")
    connection.execute("PRAGMA foreign_keys = ON")
    if attach:  # query_across: the server's own ATTACHes, read-only, before the limit and authorizer
        connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, MAX_ATTACHED)
        for schema, file in attach:
            connection.execute("ATTACH DATABASE ? AS ?", (f"file:{quote(file)}?mode=ro", schema))
    for limit, value in LIMITS.items():  # ATTACHED 0 from here on: the model attaches nothing
        connection.setlimit(limit, value)
    page_size = connection.execute("PRAGMA page_size").fetchone()[0]
    connection.write_pages = max(1, max_write_bytes // page_size) if writable else 0
    connection.auth_log = AuthorizerLog()
    connection.set_authorizer(authorizer(writable=writable, log=connection.auth_log))
    return connection


def _state(connection: sqlite3.Connection | None) -> tuple[bool, int]:
    if connection is None:
        return False, 0
    return connection.in_transaction, connection.total_changes


def _log(connection: _Connection | None) -> dict[str, Any] | None:
    if connection is None:
        return None
    log = connection.auth_log
    return {
        # Each distinct action once, in the order first seen: a listing reads each table several times.
        "actions": list(dict.fromkeys(log.actions)),
        "refused": log.refused,
        "refused_bookkeeping": log.refused_bookkeeping,
        "deleted": log.deleted,
        "updated": log.updated,
        "altered": log.altered,
    }


class _Worker:
    def __init__(self) -> None:
        self.connections: OrderedDict[tuple, _Connection] = OrderedDict()
        self.connection: _Connection | None = None
        self.cursors: dict[int, sqlite3.Cursor] = {}
        self.deadline = 0.0

    def expired(self) -> int:
        return 1 if time.monotonic() > self.deadline else 0

    def connect(self, spec: tuple) -> _Connection:
        connection = self.connections.pop(spec, None)
        if connection is None:
            connection = _open(spec)
            connection.set_progress_handler(self.expired, PROGRESS_STEPS)
        self.connections[spec] = connection  # most recently used last
        while len(self.connections) > _KEPT_CONNECTIONS:
            _, oldest = self.connections.popitem(last=False)
            oldest.close()
        return connection

    def begin(self, connection: _Connection) -> None:
        """A new lease: nothing of the last one's cursors, log or transaction is left."""
        for cursor in self.cursors.values():
            cursor.close()
        self.cursors.clear()
        connection.auth_log.reset()
        with connection.auth_log.own_statement():
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            if connection.write_pages:
                # TEMP objects are refused to statements; any here are the server's own, left by a
                # checked run that did not finish: none may outlive its call.
                for kind, name in connection.execute("SELECT type, name FROM sqlite_temp_master").fetchall():
                    if kind in ("table", "view", "trigger"):
                        quoted = '"' + name.replace('"', '""') + '"'
                        connection.execute(f"DROP {kind.upper()} IF EXISTS temp.{quoted}")

    def handle(self, request: tuple) -> tuple[str, Any]:
        op = request[0]
        if op == "exec":
            _, spec, sql, params, deadline, control, cursor_id, prefetch, fresh = request
            self.deadline = deadline
            connection = self.connection = self.connect(spec)
            if fresh:
                self.begin(connection)
            if control == "own":
                with connection.auth_log.own_statement():
                    cursor = connection.execute(sql, params)
            else:
                if connection.write_pages:
                    connection.limit_growth()
                cursor = connection.execute(sql, params)
            columns = None if cursor.description is None else [d[0] for d in cursor.description]
            rows = None
            if prefetch:  # every row now, in this reply: the cursor is done
                rows = cursor.fetchall()
                cursor.close()
            else:
                self.cursors[cursor_id] = cursor
                while len(self.cursors) > _KEPT_CURSORS:  # the oldest first: dicts keep insertion order
                    self.cursors.pop(next(iter(self.cursors))).close()
            return "ok", (columns, cursor.rowcount, cursor.lastrowid, _state(connection), rows)
        if op == "fetch":
            _, cursor_id, size, self.deadline = request
            cursor = self._cursor(cursor_id)
            rows = cursor.fetchall() if size < 0 else cursor.fetchmany(size)
            return "ok", (rows, _state(self.connection))
        if op == "page":
            _, cursor_id, limit, max_chars, max_cell_chars, less_names, self.deadline = request
            cursor = self._cursor(cursor_id)
            if less_names and cursor.description is not None:
                max_chars = max(1, max_chars - json_chars([d[0] for d in cursor.description]))
            rows, more, stopped_by = read_page(
                cursor, limit, max_chars=max_chars, max_cell_chars=max_cell_chars
            )
            return "ok", (rows, more, stopped_by, _state(self.connection))
        if op == "skip":
            _, cursor_id, count, self.deadline = request
            skip_rows(self._cursor(cursor_id), count)
            return "ok", _state(self.connection)
        if op == "csv":
            _, cursor_id, delimiter, header, max_bytes, self.deadline = request
            data, rows, neutralised, done = csv_chunk(self._cursor(cursor_id), delimiter, header, max_bytes)
            return "ok", (data, rows, neutralised, done, _state(self.connection))
        if op == "close":
            cursor = self.cursors.pop(request[1], None)
            if cursor is not None:
                cursor.close()
            return "ok", None
        if op == "log":
            return "ok", _log(self.connection)
        raise ValueError(f"unknown request {op!r}")

    def _cursor(self, cursor_id: int) -> sqlite3.Cursor:
        cursor = self.cursors.get(cursor_id)
        if cursor is None:
            raise sqlite3.ProgrammingError("Cannot operate on a closed cursor.")
        return cursor

    def failure(self, error: BaseException) -> tuple[str, Any]:
        message = str(error) or type(error).__name__
        return "error", (type(error).__name__, message, _log(self.connection), _state(self.connection))


# -- the process -----------------------------------------------------------------------------


def _exit_with_parent(parent: int) -> None:
    """End this process soon after the server's: reparenting changes our parent's pid. A thread, as
    the main one may be inside one long SQLite step (sqlite3 releases the GIL around each)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.stack_size(256 * 1024)
    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()


class _Requests:
    """The server's requests, framed as :mod:`.protocol` says, read in large chunks: requests written
    together (a statement and its page) arrive in one read, and :meth:`waiting` says so."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray()

    def _complete(self) -> int | None:
        """The size of the first request in the buffer, when all of it has arrived."""
        if len(self._buffer) < HEADER.size:
            return None
        size = HEADER.size + HEADER.unpack_from(self._buffer)[0]
        return size if len(self._buffer) >= size else None

    def waiting(self) -> bool:
        return self._complete() is not None

    def next(self) -> Any:
        """The next request, or None at the end of the stream."""
        while (size := self._complete()) is None:
            chunk = os.read(self._fd, _READ_BYTES)
            if not chunk:
                return None
            self._buffer += chunk
        try:
            with memoryview(self._buffer) as view:
                body = bytes(view[HEADER.size : size])
            return loads(body)
        finally:  # taken even when it did not fit in memory: the next request starts after it
            del self._buffer[:size]


def _address_space() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def main() -> None:
    parent = os.getppid()
    # The protocol owns the original stdout; anything printed by accident goes to stderr instead.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = _Requests(0)
    config = requests.next()
    if config is None:
        return
    address_space, heap = config
    _exit_with_parent(parent)
    # SQLite's heap limit is process-wide: set once, on a connection of our own.
    sqlite3.connect(":memory:").execute(f"PRAGMA hard_heap_limit = {int(heap)}").close()
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    write_message(replies, ("ready", os.getpid(), _address_space()))
    worker = _Worker()
    while True:
        try:
            request = requests.next()
        except MemoryError:
            request = ("invalid",)
        if request is None:
            return
        try:
            reply = worker.handle(request)
        except (sqlite3.Error, MemoryError, OverflowError, ValueError, TypeError) as error:
            reply = worker.failure(error)
        try:
            replies.write(frame(reply))
        except MemoryError:  # the reply itself did not fit: say so, in a message that does
            replies.write(frame(("error", ("MemoryError", "out of memory", None, _state(None)))))
        # Requests sent together (a statement and its page) are answered together: one write, and
        # one wake-up of the server, once no other request is waiting to be read.
        if not requests.waiting():
            replies.flush()


if __name__ == "__main__":
    sys.exit(main())
