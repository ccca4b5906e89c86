"""One git process, bounded: time, output, memory, CPU time; killable with everything it started.

Every git process this server starts (the runner's commands and the layout's config listings) goes
through :func:`run_bounded`:

* its own process group (``start_new_session``), so a kill reaches what it started;
* an address-space limit (``RLIMIT_AS``) and a CPU-time limit (``RLIMIT_CPU``), set on the process the
  moment it has started (``prlimit``) and inherited by anything it starts. A ``preexec_fn`` would set them
  before git runs at all, but makes every start a full ``fork`` of the server instead of a ``vfork``
  (measured: 1.3 ms against ~30 ms with 150 MB resident);
* a deadline, after which it is killed, and an output budget: stdout is read only up to the budget, then
  the process is killed — a 25 MB diff costs what the budget costs. One thread watches both pipes and the
  deadline, and stderr is drained as it comes, so git never blocks on a full pipe;
* registration in :data:`running_processes`, so a cancelled request kills it at once;
* a slot of a :class:`~.slots.ProcessSlots` pool, held from just before the start until it is reaped: the
  wait for one counts against the deadline (see :mod:`.slots`).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

from .slots import CallProcesses, ProcessSlots

try:
    import resource
except ImportError:  # pragma: no cover - not on this platform
    resource = None  # type: ignore[assignment]

__all__ = ["Finished", "ProcessLimits", "run_bounded", "running_processes"]

# The git processes started on behalf of the current tool call (the list is shared with the worker
# thread that runs the call), so a cancelled request can kill them instead of waiting for the timeout.
# A :class:`~.slots.CallProcesses` also takes a cancelled call out of the queue for a slot.
running_processes: contextvars.ContextVar[list[subprocess.Popen] | None] = contextvars.ContextVar(
    "running_processes", default=None
)

# What of git's stderr is kept: enough for any error message; the rest is read and dropped.
MAX_STDERR_BYTES = 65_536

# How git says it ran out of address space: malloc ("Out of memory, malloc failed"), mmap ("Cannot allocate
# memory"), the regex compiler ("Memory exhausted").
_OUT_OF_MEMORY = ("out of memory", "cannot allocate memory", "memory exhausted")


@dataclass(frozen=True)
class ProcessLimits:
    memory_mb: int  # address space
    cpu_s: int  # CPU time: SIGXCPU at this, SIGKILL a second later
    file_bytes: int | None = None  # largest file it may write (SIGXFSZ past it; no core file): a fetch's pack

    def apply(self, pid: int) -> None:
        """Give a just-started process these limits (what it starts inherits them)."""
        if resource is None or not hasattr(resource, "prlimit"):
            return  # not Linux: the time limit and the output budget still hold
        memory = self.memory_mb * 1024 * 1024
        try:
            resource.prlimit(pid, resource.RLIMIT_AS, (memory, memory))
            resource.prlimit(pid, resource.RLIMIT_CPU, (self.cpu_s, self.cpu_s + 1))
            if self.file_bytes is not None:
                resource.prlimit(pid, resource.RLIMIT_FSIZE, (self.file_bytes, self.file_bytes))
                resource.prlimit(pid, resource.RLIMIT_CORE, (0, 0))
        except (ProcessLookupError, PermissionError):
            pass  # it has already finished


class _GitProcess(subprocess.Popen):
    """A git process leading its own process group: a signal to it reaches whatever it started too."""

    signalled = False  # by us: a kill past the deadline or the budget, or on cancellation

    def send_signal(self, sig: int) -> None:
        self.poll()
        if self.returncode is None:
            self.signalled = True
            try:
                os.killpg(self.pid, sig)
            except ProcessLookupError:
                pass


@dataclass(frozen=True)
class Finished:
    stdout: bytes
    stderr: str
    returncode: int | None
    truncated: bool  # stdout passed the budget; the process was killed
    expired: bool  # the deadline passed first; the process was killed
    out_of_cpu: bool  # stopped at its CPU-time limit
    out_of_memory: bool  # stopped at its address-space limit


def run_bounded(
    command: Sequence[str],
    *,
    cwd: str,
    env: dict[str, str],
    limits: ProcessLimits,
    timeout_s: float,
    max_bytes: int,
    stdin: bytes | None = None,
    slots: ProcessSlots | None = None,
) -> Finished:
    """Run ``command`` within ``limits``, ``timeout_s`` and ``max_bytes`` of stdout (module docstring).

    Raises OSError when it cannot be started (E2BIG for arguments past the kernel's limit); with ``slots``,
    LimitExceeded when no slot came free before the deadline, WaitCancelled when the call was cancelled
    while it waited.
    """
    deadline = time.monotonic() + timeout_s
    tracked = running_processes.get()
    call = tracked if isinstance(tracked, CallProcesses) else None
    with slots.held(deadline, call) if slots is not None else contextlib.nullcontext():
        return _run(command, cwd, env, limits, deadline, max_bytes, stdin, tracked, call)


def _run(
    command: Sequence[str],
    cwd: str,
    env: dict[str, str],
    limits: ProcessLimits,
    deadline: float,
    max_bytes: int,
    stdin: bytes | None,
    tracked: list[subprocess.Popen] | None,
    call: CallProcesses | None,
) -> Finished:
    process = _GitProcess(
        list(command),
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    limits.apply(process.pid)
    if tracked is not None:
        tracked.append(process)
        if call is not None and call.cancelled:  # cancelled between the slot and the start
            process.kill()
    chunks: list[bytes] = []
    stderr_chunks: list[bytes] = []
    size = stderr_size = 0
    truncated = expired = False
    try:
        if stdin is not None:
            process.stdin.write(stdin)
            process.stdin.close()
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ, "out")
            selector.register(process.stderr, selectors.EVENT_READ, "err")
            while selector.get_map() and not truncated:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    expired = True
                    break
                for key, _ in selector.select(remaining):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                    elif key.data == "out":
                        chunks.append(chunk)
                        size += len(chunk)
                        if size > max_bytes:
                            truncated = True
                            break
                    elif stderr_size < MAX_STDERR_BYTES:
                        stderr_chunks.append(chunk)
                        stderr_size += len(chunk)
        if truncated or expired:
            process.kill()
        process.wait()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()
    stderr = b"".join(stderr_chunks)[:MAX_STDERR_BYTES].decode("utf-8", "replace")
    data = b"".join(chunks)
    code = process.returncode
    stopped_by_us = truncated or expired or process.signalled
    return Finished(
        stdout=data[:max_bytes] if truncated else data,
        stderr=stderr,
        returncode=code,
        truncated=truncated,
        expired=expired and not truncated,
        # SIGXCPU at the soft CPU limit; SIGKILL at the hard one, a second later, unless the kill was ours.
        out_of_cpu=not stopped_by_us and code in (-signal.SIGXCPU, -signal.SIGKILL),
        out_of_memory=not stopped_by_us and bool(code) and any(m in stderr.lower() for m in _OUT_OF_MEMORY),
    )
