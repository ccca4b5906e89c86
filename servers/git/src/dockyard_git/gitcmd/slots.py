"""How many git processes run at once: a bound shared by the whole server, first come, first served.

Without it every concurrent request starts its git processes at once: at 32 clients the process tree
held ~600 MB and the slowest calls waited behind dozens of gits sharing the cores. Each git process
(the runner's commands, the config listings, the bare check) holds a *slot* from just before it is
started until it has been reaped. A call that finds every slot taken waits in a queue, in the order it
arrived, for at most what is left of that command's time limit; it then fails with a time-out that says
the server was busy (retrying later helps). A cancelled call leaves the queue at once.

Commands that talk to a remote (fetch, pull, push, ls-remote) may run for minutes: they take their slots
from a pool of their own, so they never keep local reads waiting (nor the other way round).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import subprocess
import threading
import time
from collections.abc import Iterator

from dockyard_shared import LimitExceeded

__all__ = ["CallProcesses", "GitBusy", "GitSlots", "ProcessSlots", "WaitCancelled"]

log = logging.getLogger("dockyard.git")


class WaitCancelled(Exception):
    """The call was cancelled while it waited for a slot (nobody reads the result of a cancelled call)."""


class GitBusy(LimitExceeded):
    """No slot came free within the command's time limit: the git was never started."""


class CallProcesses(list[subprocess.Popen]):
    """The git processes started for one tool call, and whether the call was cancelled.

    :meth:`cancel` (run on the event loop when the request is cancelled) kills the processes started so
    far, makes any process started later be killed at once, and takes the call out of a slot queue.
    """

    def __init__(self) -> None:
        super().__init__()
        self.cancelled = False
        self._waiting_on: ProcessSlots | None = None

    def cancel(self) -> None:
        self.cancelled = True
        waiting_on = self._waiting_on
        if waiting_on is not None:
            waiting_on.wake()
        for process in list(self):
            with contextlib.suppress(OSError):
                process.kill()


class ProcessSlots:
    """At most ``size`` holders at once; waiters are served strictly in arrival order."""

    def __init__(self, size: int, *, flag: str) -> None:
        if size < 1:
            raise ValueError("a pool needs at least one slot")
        self.size = size
        self.flag = flag  # the command-line flag that sets the size, for the busy message
        self._condition = threading.Condition()
        self._busy = 0
        self._queue: collections.deque[object] = collections.deque()
        self.peak = 0  # the most processes ever held at once (for tests and benchmarks)

    @property
    def busy(self) -> int:
        return self._busy

    def wake(self) -> None:
        with self._condition:
            self._condition.notify_all()

    @contextlib.contextmanager
    def held(self, deadline: float, call: CallProcesses | None = None) -> Iterator[None]:
        """Hold one slot for the block; wait for it until ``deadline`` (``time.monotonic()``)."""
        self._acquire(deadline, call)
        try:
            yield
        finally:
            with self._condition:
                self._busy -= 1
                self._condition.notify_all()

    def _acquire(self, deadline: float, call: CallProcesses | None) -> None:
        with self._condition:
            if call is not None and call.cancelled:
                raise WaitCancelled
            if self._busy < self.size and not self._queue:
                self._take()
                return
            ticket = object()
            self._queue.append(ticket)
            log.debug("waiting for a git slot: %d of %d busy, %d waiting (%s)", *self._counts(), self.flag)
            if call is not None:
                call._waiting_on = self
            try:
                while True:
                    if call is not None and call.cancelled:
                        log.debug("a cancelled call left the queue for a git slot (%s)", self.flag)
                        raise WaitCancelled
                    if self._queue[0] is ticket and self._busy < self.size:
                        self._take()
                        return
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise self._busy_problem()
                    self._condition.wait(remaining)
            finally:
                if call is not None:
                    call._waiting_on = None
                if self._queue and self._queue[0] is ticket:
                    self._queue.popleft()
                    # The next in line may now take the slot this one did not.
                    self._condition.notify_all()
                elif ticket in self._queue:
                    self._queue.remove(ticket)

    def _counts(self) -> tuple[int, int, int]:
        return self._busy, self.size, len(self._queue)

    @property
    def waiting(self) -> int:
        """Calls queued for a slot now."""
        return len(self._queue)

    def _take(self) -> None:
        self._busy += 1
        self.peak = max(self.peak, self._busy)

    def _busy_problem(self) -> GitBusy:
        waiting = len(self._queue) - 1
        return GitBusy(
            f"git could not start within its time limit: the server was busy, running {self._busy} git "
            f"processes at once (its limit, {self.flag} {self.size}) with {waiting} other{'' if waiting == 1 else 's'} waiting.",
            next_step="Retry in a few seconds; if this persists, ask the user to raise "
            f"{self.flag} or --git-timeout.",
            retryable=True,
        )


class GitSlots:
    """The server's two pools: local commands, and commands that talk to a remote."""

    def __init__(self, local: int, network: int) -> None:
        self.local = ProcessSlots(local, flag="--max-git-processes")
        self.network = ProcessSlots(network, flag="--max-remote-git-processes")
