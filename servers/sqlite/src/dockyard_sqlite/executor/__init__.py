"""Where this server's statements run: a small pool of worker processes that can be killed.

Every statement runs in a worker process (:mod:`dockyard_sqlite.worker`), leased for one call through
:meth:`WorkerPool.lease` as a :class:`RemoteConnection` — the few parts of ``sqlite3.Connection`` and
``Cursor`` the catalog, paging and write code use, each a round trip of a pickled tuple over a pipe
(measured: ~12 µs). What that buys:

- **Time.** A statement past its deadline is interrupted by SQLite's progress handler in the worker;
  one that cannot be (still compiling, or inside one long function call) is killed when its deadline
  plus :data:`KILL_MARGIN_S` has passed, and the worker replaced. A cancelled request kills its
  worker at once, so it stops burning CPU.
- **Memory.** Each worker's address space is capped, and SQLite's heap within it; the pool never runs
  more than ``size`` workers, so the server's memory has a bound (:class:`WorkerLimits`).
- **Availability.** The event loop never waits on SQLite; when every worker is busy a call waits up to
  its time limit for one, then fails with a retryable "busy" problem (:func:`workers_busy`).

Errors come back as the same ``sqlite3`` exception classes (with SQLite's message), so the code that
turns them into problems is the same as for an in-process connection; a killed worker is
:class:`StatementStopped` ("interrupted"), one that died by itself :class:`WorkerDied`.
"""

from __future__ import annotations

from .errors import OutOfMemory, StatementStopped, WorkerDied, workers_busy
from .limits import KILL_MARGIN_S, QUEUE_GRACE_S, Budget, DatabaseTarget, WorkerLimits
from .pool import WorkerPool
from .remote import RemoteConnection, RemoteCursor

__all__ = [
    "KILL_MARGIN_S",
    "QUEUE_GRACE_S",
    "Budget",
    "DatabaseTarget",
    "OutOfMemory",
    "RemoteConnection",
    "RemoteCursor",
    "StatementStopped",
    "WorkerDied",
    "WorkerLimits",
    "WorkerPool",
    "workers_busy",
]
