"""A raw JSON-RPC client over a child's stdio, and what /proc says about the child: standard library only.

No MCP SDK on the client side: the bench process stays small and the time measured is the server's, not
a client library's. The child is a process tree when it is launched through ``uvx`` (uv, then Python),
so CPU time is summed over the tree and peak memory is the largest VmHWM in it.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PROTOCOL_VERSION = "2025-11-25"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class ServerGone(Exception):
    """The child closed its stdout or took too long to answer; the message holds its stderr's tail."""


def load_average() -> float:
    """The 1-minute load average: how busy the machine was next to each figure."""
    return float(Path("/proc/loadavg").read_text().split()[0])


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            text = Path(f"/proc/{pid}/task/{task}/children").read_text()
            found += [int(child) for child in text.split()]
    except OSError:
        pass
    return found


def tree(pid: int) -> list[int]:
    """``pid`` and every live descendant."""
    pids, index = [pid], 0
    while index < len(pids):
        pids += _children(pids[index])
        index += 1
    return pids


def cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid``'s tree, including the children each process has reaped (git)."""
    total = 0.0
    for member in tree(pid):
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(value) for value in fields[11:15]) / CLOCK_TICKS
    return total


def peak_memory_mb(pid: int) -> float:
    """The largest VmHWM (peak resident set) in ``pid``'s tree, in MB."""
    peak = 0
    for member in tree(pid):
        try:
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        except OSError:
            continue
    return peak / 1024


class StdioServer:
    """One spawned server; :meth:`request` returns (reply, seconds since the request was written)."""

    def __init__(self, command: Sequence[str], *, env: dict[str, str], cwd: Path, stderr_path: Path) -> None:
        self._stderr_path = stderr_path
        self._stderr = open(stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.spawned_at = time.perf_counter()
        self.process = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            cwd=cwd,
        )
        self.pid = self.process.pid
        self._buffer = b""
        self._next_id = 0

    def stderr_offset(self) -> int:
        """How much the child has written to stderr so far (for -X importtime phases)."""
        return self._stderr_path.stat().st_size

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})})

    def request(self, method: str, params: dict[str, Any], timeout: float = 120) -> tuple[dict, float]:
        self._next_id += 1
        request_id = self._next_id
        started = time.perf_counter()
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        deadline = started + timeout
        while True:
            message = self._read_message(deadline)
            if "method" in message:
                if "id" in message:  # a request from the server (ping, roots/list): answer, keep waiting
                    self._answer(message)
                continue
            if message.get("id") == request_id:
                return message, time.perf_counter() - started

    def initialize(self, timeout: float = 120) -> tuple[dict, float]:
        """``initialize`` written at once after the spawn (as hosts do); seconds are from the spawn."""
        reply, _ = self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "dockyard-startup-bench", "version": "1"},
            },
            timeout,
        )
        if "error" in reply:
            raise ServerGone(f"initialize failed: {reply['error']}")
        return reply, time.perf_counter() - self.spawned_at

    def call_tool(self, name: str, arguments: dict[str, Any], timeout: float = 120) -> tuple[dict, float]:
        reply, seconds = self.request("tools/call", {"name": name, "arguments": arguments}, timeout)
        if "error" in reply:
            raise ServerGone(f"{name} failed: {reply['error']}")
        return reply, seconds

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.close()  # type: ignore[union-attr]
                self.process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        self._stderr.close()

    def _send(self, message: dict[str, Any]) -> None:
        self.process.stdin.write(json.dumps(message).encode() + b"\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]

    def _answer(self, request: dict[str, Any]) -> None:
        if request["method"] == "ping":
            self._send({"jsonrpc": "2.0", "id": request["id"], "result": {}})
        elif request["method"] == "roots/list":
            self._send({"jsonrpc": "2.0", "id": request["id"], "result": {"roots": []}})
        else:
            error = {"code": -32601, "message": "Method not found"}
            self._send({"jsonrpc": "2.0", "id": request["id"], "error": error})

    def _read_message(self, deadline: float) -> dict[str, Any]:
        fd = self.process.stdout.fileno()  # type: ignore[union-attr]
        while b"\n" not in self._buffer:
            remaining = deadline - time.perf_counter()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise ServerGone(f"no reply in time; stderr: {self._stderr_tail()}")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise ServerGone(f"the server closed stdout; stderr: {self._stderr_tail()}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def _stderr_tail(self) -> str:
        self._stderr.flush()
        return self._stderr_path.read_text(errors="replace")[-600:]


def tool_failed(reply: dict[str, Any]) -> str | None:
    """The error text of a ``tools/call`` reply whose result is an error, else None."""
    result = reply.get("result", {})
    if not result.get("isError"):
        return None
    texts = [block.get("text", "") for block in result.get("content", []) if block.get("type") == "text"]
    return " ".join(texts)[:200]
