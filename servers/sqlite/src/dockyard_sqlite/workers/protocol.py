"""What both sides of the pipe agree on: the framing, the messages, and SQLite's limits on every worker
connection (which the server's error messages quote).

On the worker's stdin/stdout: 4-byte little-endian length, then a pickle of plain values (tuples, lists,
dicts, str, bytes, int, float, bool, None). The server unpickles with a loader that refuses every class
(:func:`loads`), so a compromised worker cannot make it run code. Requests and replies:

    ("exec", spec, sql, params, deadline, control, cursor, prefetch, fresh)
                                       -> ("ok", (columns, rowcount, lastrowid, state, rows))
    ("fetch", cursor, size, deadline)  -> ("ok", (rows, state))     size < 0: all remaining rows
    ("page", cursor, limit, max_chars, max_cell_chars, less_names, deadline)
                                       -> ("ok", (rows, more, stopped_by, state))
    ("skip", cursor, count, deadline)  -> ("ok", state)
    ("csv", cursor, delimiter, header, max_bytes, deadline)
                                       -> ("ok", (data, rows, neutralised, done, state))
    ("close", cursor)                  -> ("ok", None)
    ("log",)                           -> ("ok", log)
    any failure                        -> ("error", (kind, message, log, state))

``spec`` names a database and a mode; ``cursor`` is a number the server picks, so it can send the
statement and its first fetch without waiting in between; ``prefetch`` sends every row with the reply
(``rows``, else None: for the catalog's small look-ups); ``fresh`` starts a new lease (the log, cursors and any
transaction of the last one are dropped); ``deadline`` is a ``time.monotonic()`` value (the same clock
in every process on Linux); ``state`` is ``(in_transaction, total_changes)``.

The first message, before any request, is the worker's memory: ``(address_space, heap)``; the worker
answers ``("ready", pid, address_space_now)``.

Standard library only: the worker process (:mod:`.child`) imports it.
"""

from __future__ import annotations

import io
import pickle
import sqlite3
import struct
from typing import Any, BinaryIO

__all__ = [
    "HEADER",
    "LIMITS",
    "MAX_ATTACHED",
    "MAX_LIKE_PATTERN_BYTES",
    "MAX_VALUE_BYTES",
    "MEMORY",
    "frame",
    "loads",
    "read_message",
    "write_message",
]

# The longest string or blob, and the largest stored row, any statement may make or read
# (SQLITE_LIMIT_LENGTH). Far above what a reply shows (a text value is cut at max_cell_chars, a blob is
# a 32-byte preview), so it only bounds memory. The price, paid knowingly: a value stored larger than
# this cannot be read at all (not even with substr(); length() of a blob still works), a row holding
# one cannot be UPDATEd, and in write mode no INSERT can store a value (or row) this large.
MAX_VALUE_BYTES = 16 * 1024 * 1024
# The longest LIKE/GLOB pattern. One LIKE is a single VM step and costs text length × pattern length:
# measured against a 16 MiB text, ~15 ms per pattern byte (SQLite's default limit, 50,000 bytes, would be
# ~12 minutes per row). The worker is killed at the deadline anyway; this keeps one LIKE short enough
# that the time limit usually stops the statement cleanly, between steps, without a kill.
MAX_LIKE_PATTERN_BYTES = 128
# The path of an empty in-memory main database (a served file's path is always absolute).
MEMORY = ":memory:"
# The most databases one connection attaches for query_across (SQLite's compiled-in ceiling).
MAX_ATTACHED = 10
# SQLite's own limits, set on every connection: the first line, before time and memory.
LIMITS = {
    sqlite3.SQLITE_LIMIT_ATTACHED: 0,  # no ATTACH, no VACUUM INTO: no other file
    sqlite3.SQLITE_LIMIT_LENGTH: MAX_VALUE_BYTES,
    sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH: MAX_LIKE_PATTERN_BYTES,
    sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER: 10_000,  # placeholders per statement (default 250,000)
    sqlite3.SQLITE_LIMIT_TRIGGER_DEPTH: 100,  # recursive triggers (default 1,000 levels)
    sqlite3.SQLITE_LIMIT_WORKER_THREADS: 0,  # no sorter threads: one statement, one thread
}
# Limits that also apply when SQLite parses the schema (SQL_LENGTH, EXPR_DEPTH, COLUMN,
# COMPOUND_SELECT, FUNCTION_ARG) keep their defaults: lowering them makes a database whose schema
# exceeds them unreadable as a whole ("malformed database schema"). VDBE_OP does not help either:
# measured on SQLite 3.40, nested CTEs reach gigabytes with it at 20,000.

# The length prefix of every message.
HEADER = struct.Struct("<I")


def frame(message: Any) -> bytes:
    """One message as it goes over the pipe: its length, then its pickle."""
    data = pickle.dumps(message, protocol=5)
    return HEADER.pack(len(data)) + data


def write_message(stream: BinaryIO, message: Any) -> None:
    stream.write(frame(message))
    stream.flush()


def read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_message(stream: BinaryIO) -> Any:
    """The next message, or None at end of stream."""
    header = read_exactly(stream, HEADER.size)
    if header is None:
        return None
    body = read_exactly(stream, HEADER.unpack(header)[0])
    return None if body is None else loads(body)


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refused: {module}.{name}")


def loads(data: bytes) -> Any:
    """Unpickle plain values only: any class or function reference is refused."""
    return _PlainUnpickler(io.BytesIO(data)).load()
