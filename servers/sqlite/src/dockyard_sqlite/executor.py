"""Where this server's statements run: a small pool of worker processes that can be killed.

Every statement runs in a worker process (:mod:`.worker`), leased for one call through
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

import contextlib
import os
import pickle
import select
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from dockyard_shared import LimitExceeded

from .worker import loads

__all__ = [
    "KILL_MARGIN_S",
    "QUEUE_GRACE_S",
    "Budget",
    "DatabaseTarget",
    "RemoteConnection",
    "RemoteCursor",
    "StatementStopped",
    "WorkerDied",
    "WorkerLimits",
    "WorkerPool",
    "workers_busy",
]

# How long past its deadline a statement may run before its worker is killed: the progress handler
# normally stops it within a millisecond, so this only matters for a compile or a single long step.
KILL_MARGIN_S = 0.25
# How much longer than its time limit a call may wait for a free worker: the kill margin, and time to
# start a replacement worker (~0.2 s; more on a busy machine).
QUEUE_GRACE_S = 1.0
# How long a new worker may take to start (imports, on a busy machine) before it counts as failed.
_START_TIMEOUT_S = 30.0
_HEADER_SIZE = 4


@dataclass
class Budget:
    """How long one call's statements may run, and whether its caller has gone away.

    :meth:`cancel` (from the event loop, when the request is cancelled) also runs the callbacks
    registered with :meth:`watch`: a lease registers one that kills its worker.
    """

    timeout_ms: int
    deadline: float = 0.0
    cancelled: threading.Event = field(default_factory=threading.Event)
    _watchers: list[Callable[[], None]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        self.deadline = time.monotonic() + self.timeout_ms / 1000

    def expired(self) -> bool:
        return self.cancelled.is_set() or time.monotonic() > self.deadline

    def cancel(self) -> None:
        self.cancelled.set()
        for watcher in list(self._watchers):
            watcher()

    def watch(self, callback: Callable[[], None]) -> None:
        self._watchers.append(callback)

    def unwatch(self, callback: Callable[[], None]) -> None:
        with contextlib.suppress(ValueError):
            self._watchers.remove(callback)


class StatementStopped(sqlite3.OperationalError):
    """The worker running the statement was killed: past its deadline, or the request was cancelled."""

    def __init__(self) -> None:
        super().__init__("interrupted")


class WorkerDied(sqlite3.OperationalError):
    """The worker ended by itself while running the statement (most likely out of memory)."""

    def __init__(self) -> None:
        super().__init__("out of memory (the worker process running the statement ended)")


class OutOfMemory(sqlite3.OperationalError):
    """The statement needed more memory than a worker may use."""


def workers_busy(size: int, waited_ms: int) -> LimitExceeded:
    """Every worker is running another call's statement: retryable, never the statement's fault."""
    return LimitExceeded(
        f"The server is busy: all {size} of its SQLite worker processes are running other calls' "
        f"statements, and none became free within {waited_ms} ms. Nothing is wrong with this statement.",
        next_step="Retry the same call in a few seconds.",
        retryable=True,
    )


@dataclass(frozen=True)
class WorkerLimits:
    """How many workers, and how much memory each may use.

    ``address_space`` caps each worker's whole address space (``RLIMIT_AS``): what it can ever have
    resident. ``heap`` caps SQLite's own allocations within it, so a runaway compile fails with
    "out of memory" while Python still has room to report it.
    """

    size: int
    address_space: int
    heap: int

    @classmethod
    def within(cls, total_mb: int, *, size: int, reserve_mb: int) -> WorkerLimits:
        """Workers sharing ``total_mb`` megabytes less ``reserve_mb`` for the server's own process."""
        share = (total_mb - reserve_mb) * 1024 * 1024 // size
        return cls(size=size, address_space=share, heap=share // 2)


@dataclass(frozen=True)
class DatabaseTarget:
    """A database file, the mode a worker opens it in, and how much one statement may grow it."""

    path: str
    writable: bool
    create: bool
    busy_timeout_ms: int
    max_write_bytes: int

    @property
    def spec(self) -> tuple[str, bool, bool, int, int]:
        return (self.path, self.writable, self.create, self.busy_timeout_ms, self.max_write_bytes)


_ERROR_CLASSES: dict[str, type[Exception]] = {
    name: getattr(sqlite3, name)
    for name in (
        "Warning",
        "Error",
        "InterfaceError",
        "DatabaseError",
        "DataError",
        "OperationalError",
        "IntegrityError",
        "InternalError",
        "ProgrammingError",
        "NotSupportedError",
    )
}


class _Worker:
    """One worker process and the pipes to it."""

    def __init__(self, limits: WorkerLimits) -> None:
        environment = {
            **os.environ,
            "MALLOC_ARENA_MAX": "1",  # no 64 MiB arena reserved per thread
            # Blocks of 1 MiB and more are mapped and unmapped on their own: a freed 16 MiB value
            # gives its address space back instead of fragmenting the heap under RLIMIT_AS.
            "MALLOC_MMAP_THRESHOLD_": str(1024 * 1024),
        }
        # -P: the current directory is not put on sys.path (nothing there can shadow our modules).
        self.process = subprocess.Popen(
            [sys.executable, "-P", "-m", "dockyard_sqlite.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=environment,
            close_fds=True,
        )
        self.pid = self.process.pid
        self._lock = threading.Lock()
        self._alive = True
        self.killed = False
        self.databases: set[tuple] = set()  # opened here already: a lease prefers such a worker
        assert self.process.stdin is not None and self.process.stdout is not None
        self._write_fd = self.process.stdin.fileno()
        self._read_fd = self.process.stdout.fileno()
        try:
            self._send((limits.address_space, limits.heap))
            ready = self._receive(time.monotonic() + _START_TIMEOUT_S)
        except sqlite3.Error:
            ready = None
        if not (isinstance(ready, tuple) and ready[0] == "ready"):
            self.reap()
            raise WorkerDied()

    @property
    def alive(self) -> bool:
        return self._alive

    def kill(self) -> None:
        """Kill the process (from any thread); a no-op once it has been reaped, so never another pid."""
        with self._lock:
            if self._alive:
                self.killed = True
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)

    def reap(self) -> None:
        with self._lock:
            if not self._alive:
                return
            self._alive = False
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                stream.close()  # type: ignore[union-attr]

    def send(self, message: tuple) -> None:
        """Write one request; its reply is read later (:meth:`receive`), so requests can be pipelined."""
        self._send(message)

    def receive(self, stop_at: float) -> tuple[str, Any]:
        """The next reply's status and payload. At ``stop_at`` (a monotonic time) without one the
        process is killed and :class:`StatementStopped` raised."""
        return self._receive(stop_at)

    def _send(self, message: Any) -> None:
        data = pickle.dumps(message, protocol=5)
        view = memoryview(len(data).to_bytes(_HEADER_SIZE, "little") + data)
        try:
            while view:
                view = view[os.write(self._write_fd, view) :]
        except OSError:
            raise self._lost() from None

    def _receive(self, stop_at: float) -> Any:
        header = self._read(_HEADER_SIZE, stop_at)
        return loads(self._read(int.from_bytes(header, "little"), stop_at))

    def _read(self, size: int, stop_at: float) -> bytes:
        chunks = []
        while size:
            remaining = stop_at - time.monotonic()
            if remaining <= 0:
                self.kill()
                raise self._lost()
            ready, _, _ = select.select([self._read_fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self._read_fd, min(size, 1 << 20))
            if not chunk:
                raise self._lost()
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def _lost(self) -> sqlite3.Error:
        self.reap()
        return StatementStopped() if self.killed else WorkerDied()


def _rebuilt(kind: str, text: str) -> sqlite3.Error:
    """The worker's exception, as the same class (``MemoryError`` as :class:`OutOfMemory`)."""
    if kind == "MemoryError":
        return OutOfMemory("out of memory")
    if kind == "OverflowError":
        return sqlite3.DataError(text)
    return _ERROR_CLASSES.get(kind, sqlite3.ProgrammingError)(text)  # type: ignore[return-value]


class WorkerPool:
    """At most ``limits.size`` worker processes, shared by every database of the server."""

    def __init__(self, limits: WorkerLimits) -> None:
        self.limits = limits
        self._condition = threading.Condition()
        self._idle: list[_Worker] = []
        self._workers: set[_Worker] = set()  # started, idle or leased
        self._starting = 0
        self._closed = False
        # The workers end with the pool (a test builds many servers) if not before, with the server.
        weakref.finalize(self, _stop_all, self._workers)

    @property
    def pids(self) -> list[int]:
        """The worker processes alive now (idle or leased)."""
        with self._condition:
            return [w.pid for w in self._workers if w.alive]

    def start(self, count: int = 1) -> None:
        """Start ``count`` workers now rather than on the first calls."""
        started = [self._acquire(None, time.monotonic()) for _ in range(min(count, self.limits.size))]
        for worker in started:
            self._release(worker)

    def close(self) -> None:
        with self._condition:
            self._closed = True
            workers = list(self._workers)
        _stop_all(workers)

    @contextlib.contextmanager
    def lease(self, target: DatabaseTarget, budget: Budget) -> Iterator[RemoteConnection]:
        """A connection to ``target`` in a worker of its own until the block ends.

        Waits up to the budget's time limit plus :data:`QUEUE_GRACE_S` for a free worker — long enough
        for any statement running now to end or be killed, and its worker replaced — then raises
        :func:`workers_busy`. The budget's clock restarts if the wait took any time: the limit is for
        running statements, not for queueing.
        """
        started = time.monotonic()
        worker = self._acquire(target.spec, started + budget.timeout_ms / 1000 + QUEUE_GRACE_S)
        if time.monotonic() - started > 0.001:
            budget.restart()
        connection = RemoteConnection(self, target, worker, budget)
        try:
            yield connection
        finally:
            connection._finish()

    # -- bookkeeping -------------------------------------------------------------------------------

    def _acquire(self, spec: tuple | None, wait_until: float) -> _Worker:
        waited_from = time.monotonic()
        with self._condition:
            while True:
                if self._closed:
                    raise RuntimeError("the worker pool is closed")
                if self._idle:
                    chosen = next((w for w in reversed(self._idle) if spec in w.databases), self._idle[-1])
                    self._idle.remove(chosen)
                    return chosen
                if len(self._workers) + self._starting < self.limits.size:
                    self._starting += 1
                    break
                remaining = wait_until - time.monotonic()
                if remaining <= 0:
                    raise workers_busy(self.limits.size, int((time.monotonic() - waited_from) * 1000))
                self._condition.wait(remaining)
        try:
            worker = _Worker(self.limits)
        finally:
            with self._condition:
                self._starting -= 1
                self._condition.notify()
        with self._condition:
            self._workers.add(worker)
        return worker

    def _release(self, worker: _Worker) -> None:
        with self._condition:
            if worker.alive and not self._closed:
                self._idle.append(worker)
                self._condition.notify()
                return
        self._discard(worker)

    def _discard(self, worker: _Worker) -> None:
        worker.reap()
        with self._condition:
            self._workers.discard(worker)
            self._condition.notify()


def _stop_all(workers: Iterable[_Worker]) -> None:
    for worker in list(workers):
        worker.reap()


class RemoteLog:
    """What the worker's authorizer saw on this lease (see :class:`.safety.AuthorizerLog`), read on
    first use after each statement; :meth:`own_statement` lets the server's own statement through,
    as on a local connection."""

    def __init__(self, connection: RemoteConnection) -> None:
        self._connection = connection
        self._values: dict[str, Any] | None = None
        self.own = False

    def _refresh(self, values: dict[str, Any] | None) -> None:
        self._values = values

    def _get(self, name: str) -> Any:
        if self._values is None:
            self._values = self._connection._request(("log",)) or {}
        return self._values.get(name)

    @property
    def actions(self) -> list[tuple[int, str | None]]:
        return [tuple(a) for a in self._get("actions") or []]  # type: ignore[misc]

    @property
    def deleted(self) -> list[tuple[str, str]]:
        return [tuple(d) for d in self._get("deleted") or []]  # type: ignore[misc]

    @property
    def updated(self) -> list[tuple[str, str]]:
        return [tuple(u) for u in self._get("updated") or []]  # type: ignore[misc]

    @property
    def altered(self) -> list[tuple[str, str]]:
        return [tuple(a) for a in self._get("altered") or []]  # type: ignore[misc]

    @property
    def refused(self) -> str | None:
        return self._get("refused")

    @contextlib.contextmanager
    def own_statement(self) -> Iterator[None]:
        """The statements run in this block are the server's own (see
        :meth:`.safety.AuthorizerLog.own_statement`); never model-written SQL."""
        self.own = True
        try:
            yield
        finally:
            self.own = False


class RemoteConnection:
    """A leased worker's connection to one database: ``execute`` and a few attributes of
    ``sqlite3.Connection``, every statement under the lease's deadline (:meth:`limit_to`).

    Requests are pipelined: ``execute`` sends the statement and returns at once, and the replies are
    read when something needs them (a fetch, a page, ``description``, ``in_transaction``, the end of
    the lease), so ``execute(...).fetchone()`` waits for the worker once, not twice. An error of the
    statement is raised there, as SQLite's own exception class.

    If the worker is killed or dies, the failing call raises; the next statement starts a fresh
    worker (outside a transaction only), so a catalog walk can note one broken object and go on.
    """

    def __init__(self, pool: WorkerPool, target: DatabaseTarget, worker: _Worker, budget: Budget) -> None:
        self._pool = pool
        self._target = target
        self._worker: _Worker | None = worker
        self._fresh = True
        self._budgets: tuple[Budget, ...] = ()
        self._deadline = budget.deadline
        self._state: tuple[bool, int] = (False, 0)
        self._pending: list[Callable[[Any], None] | None] = []  # one per reply not read yet
        self._cursors = 0
        self.auth_log = RemoteLog(self)
        self.limit_to(budget)

    @property
    def in_transaction(self) -> bool:
        self.flush()
        return self._state[0]

    @property
    def total_changes(self) -> int:
        self.flush()
        return self._state[1]

    def limit_to(self, *budgets: Budget) -> None:
        """Stop the statements from now on once any of ``budgets`` expires or is cancelled."""
        for budget in self._budgets:
            budget.unwatch(self._kill)
        self._budgets = budgets
        for budget in budgets:
            budget.watch(self._kill)
        self._deadline = min(b.deadline for b in budgets)

    def execute(
        self, sql: str, parameters: Sequence[Any] | dict[str, Any] = (), /, *, prefetch: bool = False
    ) -> RemoteCursor:
        """Send ``sql``; its reply is read when the cursor is first used. With ``prefetch`` every row
        comes with that reply (for small look-ups: several can be sent before one wait for them all)."""
        control = "own" if self.auth_log.own else None
        params = parameters if isinstance(parameters, dict) else list(parameters)
        self._cursors += 1
        cursor = RemoteCursor(self, self._cursors, prefetch=prefetch)
        message = ("exec", self._target.spec, sql, params, self._deadline, control, cursor.id, prefetch)
        self._send(message, cursor._executed)
        cursor._worker = self._worker
        self.auth_log._refresh(None)
        return cursor

    def flush(self) -> None:
        """Read every reply not read yet, in order; raise the first error among them."""
        first: BaseException | None = None
        while self._pending:
            worker = self._worker
            assert worker is not None
            handler = self._pending.pop(0)
            try:
                status, payload = worker.receive(self._deadline + KILL_MARGIN_S)
            except sqlite3.Error as lost:
                self._lose(worker)
                raise first or lost from None
            if status == "ok":
                if first is None and handler is not None:
                    handler(payload)
                continue
            kind, text, log, state = payload
            if first is None:  # later replies only say the failed statement's cursor is missing
                self._state = state
                self.auth_log._refresh(log or {})
                first = _rebuilt(kind, text)
        if first is not None:
            raise first

    def _request(self, message: tuple) -> Any:
        """One request, and every reply up to its own: its payload."""
        replies: list[Any] = []
        self._send(message, replies.append)
        self.flush()
        return replies[0]

    def _send(self, message: tuple, on_reply: Callable[[Any], None] | None) -> None:
        if any(b.cancelled.is_set() for b in self._budgets):
            raise StatementStopped()
        worker = self._worker
        if worker is None:
            if self._state[0]:  # the transaction was lost with the last worker
                raise WorkerDied()
            worker = self._worker = self._pool._acquire(self._target.spec, self._deadline)
            self._fresh = True
        if message[0] == "exec":
            message = (*message, self._fresh)
            self._fresh = False
        try:
            worker.send(message)
        except sqlite3.Error:
            self._lose(worker)
            raise
        self._pending.append(on_reply)
        worker.databases.add(self._target.spec)

    def _lose(self, worker: _Worker) -> None:
        """The worker was killed or died: what it held (cursors, a transaction, replies) is gone."""
        self._worker = None
        self._pending.clear()
        self._state = (False, self._state[1])
        self.auth_log._refresh({})
        self._pool._discard(worker)

    def _kill(self) -> None:
        worker = self._worker
        if worker is not None:
            worker.kill()

    def _owns(self, worker: _Worker | None) -> bool:
        return worker is not None and worker is self._worker

    def _finish(self) -> None:
        for budget in self._budgets:
            budget.unwatch(self._kill)
        if self._pending:  # the lease ended on an error: read (and drop) what the worker still says
            with contextlib.suppress(sqlite3.Error):
                self.flush()
        worker, self._worker = self._worker, None
        if worker is not None:
            self._pool._release(worker)


class RemoteCursor:
    """A cursor in the worker: rows come over on demand (:meth:`fetchmany`), or as a converted,
    bounded page (:meth:`read_page`). ``description``, ``rowcount`` and ``lastrowid`` wait for the
    statement's reply."""

    def __init__(self, connection: RemoteConnection, cursor_id: int, *, prefetch: bool = False) -> None:
        self._connection = connection
        self.prefetch = prefetch
        self._worker: _Worker | None = None
        self.id = cursor_id
        self._columns: list[str] | None = None
        self._rowcount = -1
        self._lastrowid: int | None = None
        self._prefetched: list[Any] | None = None  # the rows that came with the reply (prefetch)

    def _executed(self, payload: Any) -> None:
        self._columns, self._rowcount, self._lastrowid, self._connection._state, self._prefetched = payload

    @property
    def description(self) -> list[tuple[Any, ...]] | None:
        self._connection.flush()
        return None if self._columns is None else [(c, *([None] * 6)) for c in self._columns]

    @property
    def rowcount(self) -> int:
        self._connection.flush()
        return self._rowcount

    @property
    def lastrowid(self) -> int | None:
        self._connection.flush()
        return self._lastrowid

    def fetchmany(self, size: int = 1) -> list[tuple[Any, ...]]:
        return self._fetch(size)

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self._fetch(1)
        return rows[0] if rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._fetch(-1)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while rows := self._fetch(256):
            yield from rows

    def read_page(
        self, limit: int, *, max_chars: int, max_cell_chars: int, less_names: bool = False
    ) -> tuple[list[list[Any]], bool, str | None]:
        """Up to ``limit`` rows within ``max_chars`` JSON characters (less the column names' own, with
        ``less_names``), converted in the worker (:func:`.rows.read_page`): no raw value larger than a
        page ever reaches this process."""
        rows, more, stopped_by, state = self._call("page", limit, max_chars, max_cell_chars, less_names)
        self._connection._state = state
        return rows, more, stopped_by

    def skip(self, count: int) -> None:
        """Read past ``count`` rows in the worker, keeping none of them (sent now, its reply read with
        the next one)."""
        if count:
            self._check()
            connection = self._connection
            connection._send(("skip", self.id, count, connection._deadline), None)

    def close(self) -> None:
        if not self.prefetch and self._connection._owns(self._worker):
            self._connection._request(("close", self.id))

    def _fetch(self, size: int) -> list[tuple[Any, ...]]:
        if self.prefetch:  # the rows come with the statement's reply: wait for it, then serve them
            self._connection.flush()
            rows = self._prefetched or []
            taken, self._prefetched = (rows, []) if size < 0 else (rows[:size], rows[size:])
            return [tuple(row) for row in taken]
        rows, state = self._call("fetch", size)
        self._connection._state = state
        return [tuple(row) for row in rows]

    def _check(self) -> None:
        if not self._connection._owns(self._worker):  # its worker was replaced: the cursor is gone
            raise StatementStopped()

    def _call(self, op: str, *args: Any) -> Any:
        self._check()
        connection = self._connection
        return connection._request((op, self.id, *args, connection._deadline))
