"""A stdio server's process tree as /proc shows it: its memory high-water marks and CPU time.

Bounds on memory are asserted on what the kernel measured (VmHWM, the peak resident size of each
process), never on wall time. :class:`MemoryWatch` samples the tree while a test attacks it, and stops
the tree if it grows far past any bound, so a regression fails the test instead of the machine.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

__all__ = ["MemoryWatch", "ProcessTree", "server_process"]

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _status_kib(pid: int, field: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def server_process(marker: str, timeout: float = 30.0) -> ProcessTree:
    """The tree of the server this test process started whose command line contains ``marker``."""
    deadline = time.monotonic() + timeout
    me = os.getpid()
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except (OSError, ValueError, IndexError):
                continue
            if parent == me and marker in command:
                return ProcessTree(int(entry.name))
        time.sleep(0.05)
    raise AssertionError(f"no server process with {marker!r} in its command line")


class ProcessTree:
    def __init__(self, root: int) -> None:
        self.root = root

    def pids(self) -> list[int]:
        """The server and its descendants alive now."""
        found, pending = [], [self.root]
        while pending:
            pid = pending.pop()
            found.append(pid)
            try:
                for task in Path(f"/proc/{pid}/task").iterdir():
                    pending.extend(int(c) for c in (task / "children").read_text().split())
            except OSError:
                continue
        return found

    def alive(self) -> bool:
        """Whether the server process itself still runs (not a zombie)."""
        try:
            state = Path(f"/proc/{self.root}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        return state != "Z"

    def children(self) -> list[int]:
        return [pid for pid in self.pids() if pid != self.root]

    def peak_kib(self) -> int:
        """The sum of every live process's VmHWM: a ceiling on what they held at any one time."""
        return sum(_status_kib(pid, "VmHWM") or 0 for pid in self.pids())

    def resident_kib(self) -> int:
        return sum(_status_kib(pid, "VmRSS") or 0 for pid in self.pids())

    def cpu_seconds(self) -> float:
        """User and system CPU of the live processes (a killed worker's time is gone with it)."""
        ticks = 0
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks += int(fields[11]) + int(fields[12])
        return ticks / _CLOCK_TICKS

    def kill(self) -> None:
        for pid in reversed(self.pids()):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class MemoryWatch:
    """Samples ``tree`` every few milliseconds: :attr:`peak_mib` is the highest sum of VmHWM seen.

    Past ``abort_mib`` of resident memory the tree is killed (and :attr:`aborted` set): far above the
    bound a test asserts, low enough that a regression cannot exhaust a shared machine.
    """

    def __init__(self, tree: ProcessTree, *, abort_mib: int = 2048, every: float = 0.01) -> None:
        self.tree = tree
        self.abort_mib = abort_mib
        self.every = every
        self.peak_mib = 0.0
        self.aborted = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> MemoryWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _sample(self) -> None:
        self.peak_mib = max(self.peak_mib, self.tree.peak_kib() / 1024)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            if self.tree.resident_kib() / 1024 > self.abort_mib:
                self.aborted = True
                self.tree.kill()
                return
            self._stop.wait(self.every)
