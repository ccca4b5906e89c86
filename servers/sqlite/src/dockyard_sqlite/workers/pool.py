"""The pool of worker processes every database of the server shares, and the leases taken from it."""

from __future__ import annotations

import collections
import threading
import time
import weakref
from collections.abc import Iterable

from .errors import workers_busy
from .limits import WorkerLimits
from .process import WorkerProcess

__all__ = ["Lease", "WorkerPool"]


class WorkerPool:
    """At most ``limits.size`` worker processes, shared by every database of the server."""

    def __init__(self, limits: WorkerLimits) -> None:
        self.limits = limits
        self._condition = threading.Condition()
        self._idle: list[WorkerProcess] = []
        self._workers: set[WorkerProcess] = set()  # started, idle or leased
        self._starting = 0
        self._queue: collections.deque[object] = collections.deque()  # calls waiting, in arrival order
        self._closed = False
        # The workers end with the pool (a test builds many servers) if not before, with the server.
        weakref.finalize(self, _stop_all, self._workers)

    @property
    def waiting(self) -> int:
        """Calls queued for a worker now."""
        with self._condition:
            return len(self._queue)

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
            self._condition.notify_all()
        _stop_all(workers)

    def lease(self, spec: tuple, wait_until: float) -> Lease:
        """A worker of its own for one call on the database ``spec`` (one that has it open already, if
        any is idle). Waits until ``wait_until`` (a monotonic time) for a free worker, then raises
        :func:`workers_busy`."""
        return Lease(self, spec, self._acquire(spec, wait_until))

    # -- bookkeeping -------------------------------------------------------------------------------

    def _acquire(self, spec: tuple | None, wait_until: float) -> WorkerProcess:
        """A worker for one call, first come, first served: a call that finds every worker busy queues, and
        only the call at the head of the queue takes the next one freed. (With a bare condition a call that
        arrived just as a worker came back took it ahead of those already waiting, which could be passed
        over again and again until their wait ran out: at 32 clients calls did wait here.)"""
        waited_from = time.monotonic()
        ticket = object()
        with self._condition:
            self._queue.append(ticket)
            try:
                while True:
                    if self._closed:
                        raise RuntimeError("the worker pool is closed")
                    if self._queue[0] is ticket:
                        if self._idle:
                            chosen = next(
                                (w for w in reversed(self._idle) if spec in w.databases), self._idle[-1]
                            )
                            self._idle.remove(chosen)
                            return chosen
                        if len(self._workers) + self._starting < self.limits.size:
                            self._starting += 1
                            break
                    remaining = wait_until - time.monotonic()
                    if remaining <= 0:
                        raise workers_busy(self.limits.size, int((time.monotonic() - waited_from) * 1000))
                    self._condition.wait(remaining)
            finally:
                self._queue.remove(ticket)
                self._condition.notify_all()  # the next in line may take what this one did not
        try:
            worker = WorkerProcess(self.limits)
        finally:
            with self._condition:
                self._starting -= 1
                self._condition.notify_all()
        with self._condition:
            self._workers.add(worker)
        return worker

    def _release(self, worker: WorkerProcess) -> None:
        with self._condition:
            if worker.alive and not self._closed:
                self._idle.append(worker)
                self._condition.notify_all()  # only the head of the queue may take it: wake them all
                return
        self._discard(worker)

    def _discard(self, worker: WorkerProcess) -> None:
        worker.reap()
        with self._condition:
            self._workers.discard(worker)
            self._condition.notify_all()


class Lease:
    """One call's hold on a worker of the pool (:meth:`WorkerPool.lease`): the worker it holds now,
    another when that one was lost, and the worker's return to the pool at the end of the call."""

    def __init__(self, pool: WorkerPool, spec: tuple, worker: WorkerProcess) -> None:
        self._pool = pool
        self.spec = spec
        self.worker: WorkerProcess | None = worker

    def lose(self) -> None:
        """The worker was killed or died: it is stopped for good, and the lease holds none."""
        worker, self.worker = self.worker, None
        if worker is not None:
            self._pool._discard(worker)

    def replace(self, wait_until: float) -> WorkerProcess:
        """A fresh worker for a lease that lost its own, waiting for a free one as :meth:`WorkerPool.lease`
        does."""
        worker = self.worker = self._pool._acquire(self.spec, wait_until)
        return worker

    def give_back(self) -> None:
        """The call is over: its worker (if it still has one) goes back to the pool, ready for the next."""
        worker, self.worker = self.worker, None
        if worker is not None:
            self._pool._release(worker)


def _stop_all(workers: Iterable[WorkerProcess]) -> None:
    for worker in list(workers):
        worker.reap()
