"""A leased worker seen from the server: a connection and cursors that stand in for ``sqlite3``'s, each
call a request to the worker (:mod:`.protocol`), pipelined where the reply can wait."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .errors import StatementStopped, WorkerDied, rebuilt
from .limits import KILL_MARGIN_S, QUEUE_GRACE_S, Budget, DatabaseTarget
from .pool import Lease, WorkerPool
from .process import WorkerProcess

__all__ = ["RemoteConnection", "RemoteCursor", "RemoteLog", "lease_connection"]


@contextlib.contextmanager
def lease_connection(pool: WorkerPool, target: DatabaseTarget, budget: Budget) -> Iterator[RemoteConnection]:
    """A connection to ``target`` in a worker of its own until the block ends.

    Waits up to the budget's time limit plus :data:`QUEUE_GRACE_S` for a free worker — long enough
    for any statement running now to end or be killed, and its worker replaced — then raises
    :func:`.errors.workers_busy`. The budget's clock restarts if the wait took any time: the limit is for
    running statements, not for queueing.
    """
    started = time.monotonic()
    lease = pool.lease(target.spec, started + budget.timeout_ms / 1000 + QUEUE_GRACE_S)
    if time.monotonic() - started > 0.001:
        budget.restart()
    connection = RemoteConnection(lease, target, budget)
    try:
        yield connection
    finally:
        connection._finish()


class RemoteLog:
    """What the worker's authorizer saw on this lease (see :class:`dockyard_sqlite.safety.AuthorizerLog`),
    read on first use after each statement; :meth:`own_statement` lets the server's own statement
    through, as on a local connection."""

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
        :meth:`dockyard_sqlite.safety.AuthorizerLog.own_statement`); never model-written SQL."""
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

    def __init__(self, lease: Lease, target: DatabaseTarget, budget: Budget) -> None:
        self._lease = lease  # the worker it holds now (None once lost), and another when needed
        self._target = target
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
        cursor._worker = self._lease.worker
        self.auth_log._refresh(None)
        return cursor

    def flush(self) -> None:
        """Read every reply not read yet, in order; raise the first error among them."""
        first: BaseException | None = None
        while self._pending:
            worker = self._lease.worker
            assert worker is not None
            handler = self._pending.pop(0)
            try:
                status, payload = worker.receive(self._deadline + KILL_MARGIN_S)
            except sqlite3.Error as lost:
                self._lose()
                raise first or lost from None
            if status == "ok":
                if first is None and handler is not None:
                    handler(payload)
                continue
            kind, text, log, state = payload
            if first is None:  # later replies only say the failed statement's cursor is missing
                self._state = state
                self.auth_log._refresh(log or {})
                first = rebuilt(kind, text)
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
        worker = self._lease.worker
        if worker is None:
            if self._state[0]:  # the transaction was lost with the last worker
                raise WorkerDied()
            worker = self._lease.replace(self._deadline)
            self._fresh = True
        if message[0] == "exec":
            message = (*message, self._fresh)
            self._fresh = False
        try:
            worker.send(message)
        except sqlite3.Error:
            self._lose()
            raise
        self._pending.append(on_reply)
        worker.databases.add(self._target.spec)

    def _lose(self) -> None:
        """The worker was killed or died: what it held (cursors, a transaction, replies) is gone."""
        self._lease.lose()
        self._pending.clear()
        self._state = (False, self._state[1])
        self.auth_log._refresh({})

    def _kill(self) -> None:
        worker = self._lease.worker
        if worker is not None:
            worker.kill()

    def _owns(self, worker: WorkerProcess | None) -> bool:
        return worker is not None and worker is self._lease.worker

    def _finish(self) -> None:
        for budget in self._budgets:
            budget.unwatch(self._kill)
        if self._pending:  # the lease ended on an error: read (and drop) what the worker still says
            with contextlib.suppress(sqlite3.Error):
                self.flush()
        self._lease.give_back()


class RemoteCursor:
    """A cursor in the worker: rows come over on demand (:meth:`fetchmany`), or as a converted,
    bounded page (:meth:`read_page`). ``description``, ``rowcount`` and ``lastrowid`` wait for the
    statement's reply."""

    def __init__(self, connection: RemoteConnection, cursor_id: int, *, prefetch: bool = False) -> None:
        self._connection = connection
        self.prefetch = prefetch
        self._worker: WorkerProcess | None = None
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
        ``less_names``), converted in the worker (:func:`dockyard_sqlite.rows.read_page`): no raw value
        larger than a page ever reaches this process."""
        rows, more, stopped_by, state = self._call("page", limit, max_chars, max_cell_chars, less_names)
        self._connection._state = state
        return rows, more, stopped_by

    def read_csv(self, delimiter: str, *, header: bool, max_bytes: int) -> tuple[bytes, int, int, bool]:
        """The next rows as CSV text, formatted in the worker (:func:`dockyard_sqlite.csv_rows.csv_chunk`):
        (data, rows, cells neutralised, done)."""
        data, rows, neutralised, done, state = self._call("csv", delimiter, header, max_bytes)
        self._connection._state = state
        return data, rows, neutralised, done

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
