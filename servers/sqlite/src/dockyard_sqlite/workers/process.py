"""One worker process (:mod:`.child`) seen from the server, and the pipes to it: messages framed as
:mod:`.protocol` says, each reply read under a deadline past which the process is killed."""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from typing import Any

from .errors import StatementStopped, WorkerDied
from .limits import WorkerLimits
from .protocol import HEADER, frame, loads

__all__ = ["WorkerProcess"]

# How much one read of the replies takes at most when more than the reply awaited has arrived.
_READ_BYTES = 1 << 16
# How long a new worker may take to start (imports, on a busy machine) before it counts as failed.
_START_TIMEOUT_S = 30.0


class WorkerProcess:
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
            [sys.executable, "-P", "-m", "dockyard_sqlite.workers.child"],
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
        self._outbox: list[bytes] = []  # requests not written yet
        self._inbox = bytearray()  # replies read but not taken yet
        assert self.process.stdin is not None and self.process.stdout is not None
        self._write_fd = self.process.stdin.fileno()
        self._read_fd = self.process.stdout.fileno()
        # poll, not select: select() refuses a descriptor above 1023, which a busy server (many HTTP
        # connections, many databases) reaches.
        self._replies = select.poll()
        self._replies.register(self._read_fd, select.POLLIN)
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
        """Queue one request; it is written with the others queued when a reply is first awaited
        (:meth:`receive`): requests sent together reach the worker in one write, and wake it once."""
        self._outbox.append(frame(message))

    def receive(self, stop_at: float) -> tuple[str, Any]:
        """The next reply's status and payload. At ``stop_at`` (a monotonic time) without one the
        process is killed and :class:`StatementStopped` raised."""
        if self._outbox:
            data, self._outbox = b"".join(self._outbox), []
            self._write(data)
        return self._receive(stop_at)

    def _send(self, message: Any) -> None:
        self._write(frame(message))

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._write_fd, view) :]
        except OSError:
            raise self._lost() from None

    def _receive(self, stop_at: float) -> Any:
        header = self._read(HEADER.size, stop_at)
        return loads(self._read(HEADER.unpack(header)[0], stop_at))

    def _read(self, size: int, stop_at: float) -> bytes:
        """``size`` bytes of the replies; what arrived beyond them (the next replies, written together)
        is kept for the next read."""
        inbox = self._inbox
        while len(inbox) < size:
            remaining = stop_at - time.monotonic()
            if remaining <= 0:
                self.kill()
                raise self._lost()
            if not self._replies.poll(max(1, math.ceil(remaining * 1000))):
                continue
            chunk = os.read(self._read_fd, min(max(size - len(inbox), _READ_BYTES), 1 << 20))
            if not chunk:
                raise self._lost()
            inbox += chunk
        with memoryview(inbox) as view:
            data = bytes(view[:size])
        del inbox[:size]
        return data

    def _lost(self) -> sqlite3.Error:
        self.reap()
        return StatementStopped() if self.killed else WorkerDied()
