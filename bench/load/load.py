"""Load and soak over Streamable HTTP: many concurrent sessions, then many short ones.

    uv run python bench/load/load.py [--server NAME ...] [--sessions 50] [--calls 200] [--short 10000]

For each server (default: the toy and every installed one, on their defaults):
1. load: ``--sessions`` concurrent sessions, each making ``--calls`` calls of a cheap read-only tool;
   reports errors (must be zero), throughput and p50/p99 latency;
2. soak: ``--short`` sessions opened, used once and closed, one after another in a few parallel lanes,
   with the server's RSS sampled as it goes: with idle sessions reaped (``--session-idle-timeout``),
   memory levels off instead of growing with the number of sessions.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from dockyard_shared.cli import discover_servers
from tests.harness import Launch, http_server
from tests.interop.conftest import launch_for

CHEAP_CALL = {
    "toy": ("add", {"a": 1, "b": 2}),
    "sqlite": ("query", {"sql": "SELECT 1"}),
    "git": ("git_tags", {"repo_path": str(Path(__file__).resolve().parents[2])}),
}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def one_session(
    url: str, tool: str, arguments: dict, calls: int, latencies: list[float], errors: list[str]
) -> None:
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for _ in range(calls):
            started = time.perf_counter()
            try:
                result = await session.call_tool(tool, arguments)
                if result.is_error:
                    errors.append(result.content[0].text[:100])
            except Exception as error:  # counted, not fatal: the report says how many
                errors.append(f"{type(error).__name__}: {error}"[:100])
            latencies.append(time.perf_counter() - started)


async def load(url: str, tool: str, arguments: dict, sessions: int, calls: int) -> str:
    latencies: list[float] = []
    errors: list[str] = []
    started = time.perf_counter()
    await asyncio.gather(
        *(one_session(url, tool, arguments, calls, latencies, errors) for _ in range(sessions))
    )
    elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    p99 = ordered[int(len(ordered) * 0.99) - 1] if ordered else float("nan")
    return (
        f"load: {sessions} sessions × {calls} calls = {len(latencies)} calls, {len(errors)} errors, "
        f"{len(latencies) / elapsed:.0f} calls/s, p50 {statistics.median(ordered) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms"
        + (f"; first error: {errors[0]}" if errors else "")
    )


async def soak(url: str, tool: str, arguments: dict, total: int, pid: int, lanes: int = 4) -> str:
    samples: list[tuple[int, float]] = [(0, rss_mb(pid))]
    done = 0
    errors: list[str] = []

    async def lane(count: int) -> None:
        nonlocal done
        for _ in range(count):
            await one_session(url, tool, arguments, 1, [], errors)
            done += 1
            if done % max(1, total // 10) == 0:
                samples.append((done, rss_mb(pid)))

    await asyncio.gather(*(lane(total // lanes) for _ in range(lanes)))
    curve = ", ".join(f"{n}: {mb:.0f} MB" for n, mb in samples)
    return f"soak: {done} short sessions, {len(errors)} errors; RSS after N sessions — {curve}"


async def run(name: str, args: argparse.Namespace) -> None:
    tool, arguments = CHEAP_CALL.get(name, ("list_tables", {}))
    with tempfile.TemporaryDirectory() as scratch:
        base = launch_for(name, Path(scratch))
        launch = Launch(base.script, base.args, env=base.env, cwd=base.cwd)
        extra = ("--session-idle-timeout", str(args.idle_timeout), "--log-level", "WARNING")
        with http_server(launch, extra_args=extra, log_dir=Path(scratch)) as server:
            print(f"## {name} ({tool})", flush=True)
            print(await load(server.url(), tool, arguments, args.sessions, args.calls), flush=True)
            print(await soak(server.url(), tool, arguments, args.short, server.process.pid), flush=True)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", action="append")
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--short", type=int, default=10_000)
    parser.add_argument("--idle-timeout", type=float, default=5.0)
    args = parser.parse_args()
    for name in args.server or ["toy", *discover_servers()]:
        await run(name, args)


if __name__ == "__main__":
    asyncio.run(main())
