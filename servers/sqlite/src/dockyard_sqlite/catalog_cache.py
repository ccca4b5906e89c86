"""Catalog answers (table listing, table descriptions, schema DDL) remembered while the file is unchanged.

list_tables counts the rows of every table and describe_table reads columns, keys, indexes, DDL and
sample rows: a few hundred microseconds of SQLite work and a hop to a worker thread, asked again and again
(by one model as it explores, by every client of an HTTP server) while the database does not change.

An answer is kept with a stamp of the files whose content SQLite reads — the database, its ``-wal`` and its
``-journal`` — taken *before* the answer was computed, and is served only while a fresh stamp still
matches. A write by anyone (this server's execute, another process, a WAL checkpoint) changes a file's size
or times, so the next call computes the answer again. Checking costs three ``stat`` calls, cheap enough to
do on the event loop, so a hit needs no worker thread at all.

File times are coarse (a kernel tick): a write in the same tick as the stamp could leave it unchanged. As
git does for its index ("racy git"), an answer is not kept when a file changed less than
:data:`RACY_NS` before its stamp was taken; a later write then always moves the time past the stamp. The
reasoning assumes file times come from this machine's clock (a network file system whose server clock runs
behind could defeat it).

Some answers depend on more than the file: a view using ``random()``, ``datetime('now')`` or
``changes()`` counts and samples differently on every call. :class:`Database` does not keep those (see
:data:`VOLATILE_FUNCTIONS`).
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["RACY_NS", "VOLATILE_FUNCTIONS", "CatalogCache"]

T = TypeVar("T")

RACY_NS = 100_000_000  # 100 ms: far above any local file system's timestamp granularity

# SQLite's built-in functions whose result can change while the file does not (the date and time
# functions only with 'now', which the authorizer does not show, so all of them count).
VOLATILE_FUNCTIONS = frozenset(
    {
        "random",
        "randomblob",
        "changes",
        "total_changes",
        "last_insert_rowid",
        "date",
        "time",
        "datetime",
        "julianday",
        "unixepoch",
        "strftime",
        "timediff",
        "current_date",
        "current_time",
        "current_timestamp",
    }
)

_Stamp = tuple[int, ...] | None


def _stamp(path: str) -> _Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class CatalogCache:
    """At most ``max_entries`` answers about one database file, each valid while the file is unchanged.

    Thread-safe: looked up on the event loop, filled by worker threads.
    """

    def __init__(self, path: Path, max_entries: int = 64) -> None:
        self._paths = (str(path), f"{path}-wal", f"{path}-journal")
        self._max_entries = max_entries
        self._entries: OrderedDict[Hashable, tuple[tuple[_Stamp, ...], Any]] = OrderedDict()
        self._lock = threading.Lock()

    def _signature(self) -> tuple[_Stamp, ...]:
        return tuple(_stamp(path) for path in self._paths)

    def get(self, key: Hashable) -> Any | None:
        """The answer kept for ``key`` if the files are unchanged since it was computed, else ``None``."""
        return self._kept(key, self._signature())

    def _kept(self, key: Hashable, signature: tuple[_Stamp, ...]) -> Any | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] != signature:
                return None
            self._entries.move_to_end(key)
            return entry[1]

    def answer(self, key: Hashable, compute: Callable[[], tuple[T, bool]]) -> T:
        """The kept answer for ``key``, or ``compute()``'s, kept when it says it may be and the stamp is sound.

        ``compute`` returns ``(answer, keepable)``; an answer that is partial (a count cut short by the
        time limit) or volatile is returned but not kept. Answers must never be mutated by callers.
        """
        taken = time.time_ns()
        signature = self._signature()
        hit = self._kept(key, signature)
        if hit is not None:
            return hit
        value, keepable = compute()
        racy = taken - RACY_NS
        if keepable and not any(stamp is not None and max(stamp[3], stamp[4]) >= racy for stamp in signature):
            with self._lock:
                self._entries[key] = (signature, value)
                self._entries.move_to_end(key)
                while len(self._entries) > self._max_entries:
                    self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
