"""What every Dockyard benchmark shares: a stdio MCP session to a server process, timing, memory.

Both sides of a comparison are driven the same way — the official SDK's ClientSession over stdio — so the
ratios compare servers, not clients. Peak memory is the server process's VmHWM, read from /proc before
the session closes.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / ".work"


def peer_venv(name: str, requirements: Sequence[str]) -> Path:
    """A virtual environment of its own for a peer server (its mcp pin may clash with ours)."""
    venv = WORK / name
    if not (venv / "bin" / "python").exists():
        subprocess.run(["uv", "venv", "-q", "--python", sys.executable, str(venv)], check=True)
        subprocess.run(
            ["uv", "pip", "install", "-q", "--python", str(venv / "bin" / "python"), *requirements],
            check=True,
        )
    return venv


@dataclass
class Server:
    label: str
    session: ClientSession
    pid_file: Path

    def peak_rss_mb(self) -> float | None:
        try:
            pid = int(self.pid_file.read_text().strip())
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except (OSError, ValueError):
            return None
        return None

    async def call(self, tool: str, arguments: dict, timeout: float = 300) -> tuple[float, int, bool]:
        """(seconds, response bytes, is_error)."""
        started = time.perf_counter()
        result = await self.session.call_tool(tool, arguments, read_timeout_seconds=timeout)
        elapsed = time.perf_counter() - started
        size = len(json.dumps(result.model_dump(mode="json", exclude_none=True)))
        return elapsed, size, bool(result.is_error)


@asynccontextmanager
async def serve(
    label: str, command: Sequence[str], env: dict[str, str] | None = None
) -> AsyncIterator[Server]:
    pid_file = Path(tempfile.mkstemp(prefix="bench-pid-")[1])
    # exec keeps the pid, so the shell's $$ is the server's pid.
    wrapped = ["sh", "-c", f'echo $$ > {pid_file}; exec "$0" "$@"', *command]
    params = StdioServerParameters(command=wrapped[0], args=wrapped[1:], env={**os.environ, **(env or {})})
    async with (
        stdio_client(params, errlog=open(os.devnull, "w")) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await session.list_tools()
        yield Server(label, session, pid_file)


@dataclass
class Case:
    name: str
    ours: tuple[str, dict]
    peer: tuple[str, dict] | None
    repeat: int = 10
    timeout: float = 300
    results: dict[str, dict] = field(default_factory=dict)


async def measure(server: Server, tool: str, arguments: dict, repeat: int, timeout: float) -> dict:
    times, size, error = [], 0, False
    for _ in range(repeat):
        try:
            elapsed, size, error = await server.call(tool, arguments, timeout)
        except Exception as exc:  # a peer that times out or crashes is reported, not fatal
            return {"error": f"{type(exc).__name__}: {str(exc)[:80]}"}
        times.append(elapsed)
    return {"median_ms": statistics.median(times) * 1000, "bytes": size, "is_error": error}


def report(title: str, cases: Sequence[Case], memory: dict[str, float | None], extra: str = "") -> str:
    lines = [
        f"## {title}",
        "",
        "| case | ours ms | peer ms | peer/ours | ours bytes | peer bytes |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for case in cases:
        ours, peer = case.results.get("ours", {}), case.results.get("peer", {})

        def cell(r: dict, key: str, fmt: str) -> str:
            if "error" in r:
                return r["error"]
            return format(r[key], fmt) if key in r else "—"

        ratio = "—"
        if "median_ms" in ours and "median_ms" in peer:
            ratio = f"{peer['median_ms'] / ours['median_ms']:.2f}×"
        lines.append(
            f"| {case.name} | {cell(ours, 'median_ms', '.1f')} | {cell(peer, 'median_ms', '.1f')} | {ratio} | "
            f"{cell(ours, 'bytes', ',')} | {cell(peer, 'bytes', ',')} |"
        )
    lines += [
        "",
        "Peak server memory (VmHWM): "
        + ", ".join(f"{k} {v:.0f} MB" if v else f"{k} n/a" for k, v in memory.items()),
    ]
    if extra:
        lines += ["", extra]
    return "\n".join(lines)
