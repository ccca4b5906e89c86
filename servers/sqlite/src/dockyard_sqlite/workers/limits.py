"""What a lease is bounded by: one call's time (:class:`Budget`), the pool's size and each worker's
memory (:class:`WorkerLimits`), and the database it opens (:class:`DatabaseTarget`)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .protocol import MEMORY

__all__ = ["KILL_MARGIN_S", "MEMORY", "QUEUE_GRACE_S", "Budget", "DatabaseTarget", "WorkerLimits"]

# How long past its deadline a statement may run before its worker is killed: the progress handler
# normally stops it within a millisecond, so this only matters for a compile or a single long step.
KILL_MARGIN_S = 0.25
# How much longer than its time limit a call may wait for a free worker: the kill margin, and time to
# start a replacement worker (~0.2 s; more on a busy machine).
QUEUE_GRACE_S = 1.0


@dataclass
class Budget:
    """How long one call's statements may run, and whether its caller has gone away.

    :meth:`cancel` (from the event loop, when the request is cancelled) also runs the callbacks
    registered with :meth:`watch`: a lease registers one that kills its worker.
    """

    timeout_ms: int
    deadline: float = 0.0
    flag: str = "--timeout-ms"  # the operator's flag that sets timeout_ms (a time-out's message names it)
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
    """A database file, the mode a worker opens it in, and how much one statement may grow it.

    ``attach``: (schema name, path) of the databases the worker attaches read-only to this connection
    itself, before its authorizer goes on (query_across); ``path`` is then :data:`MEMORY` or one of
    them served as ``main``."""

    path: str
    writable: bool
    create: bool
    busy_timeout_ms: int
    max_write_bytes: int
    attach: tuple[tuple[str, str], ...] = ()

    @property
    def spec(self) -> tuple[str, bool, bool, int, int, tuple[tuple[str, str], ...]]:
        return (
            self.path,
            self.writable,
            self.create,
            self.busy_timeout_ms,
            self.max_write_bytes,
            self.attach,
        )
