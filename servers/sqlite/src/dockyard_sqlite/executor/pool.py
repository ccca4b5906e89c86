"""The pool of worker processes every database of the server shares, and the leases taken from it."""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Iterable, Iterator

from .errors import workers_busy
from .limits import QUEUE_GRACE_S, Budget, DatabaseTarget, WorkerLimits
from .remote import RemoteConnection
from .worker_process import WorkerProcess

__all__ = ["WorkerPool"]


class WorkerPool:
    """At most ``limits.size`` worker processes, shared by every database of the server."""

    def __init__(self, limits: WorkerLimits) -> None:
        self.limits = limits
        self._condition = threading.Condition()
        self._idle: list[WorkerProcess] = []
        self._workers: set[WorkerProcess] = set()  # started, idle or leased
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

    def _acquire(self, spec: tuple | None, wait_until: float) -> WorkerProcess:
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
            worker = WorkerProcess(self.limits)
        finally:
            with self._condition:
                self._starting -= 1
                self._condition.notify()
        with self._condition:
            self._workers.add(worker)
        return worker

    def _release(self, worker: WorkerProcess) -> None:
        with self._condition:
            if worker.alive and not self._closed:
                self._idle.append(worker)
                self._condition.notify()
                return
        self._discard(worker)

    def _discard(self, worker: WorkerProcess) -> None:
        worker.reap()
        with self._condition:
            self._workers.discard(worker)
            self._condition.notify()


def _stop_all(workers: Iterable[WorkerProcess]) -> None:
    for worker in list(workers):
        worker.reap()
