"""dockyard-git vs the reference mcp-server-git over Streamable HTTP at 1, 8 and 32 concurrent clients.

    uv run python bench/load/git_http.py [--clients 1 8 32] [--seconds 15] [--rounds 1] [--slots N ...]

For each number of clients, the servers run one after the other on the same repository, each a fresh
process: dockyard-git with ``--max-git-processes 1000`` (no effective bound: every request starts its git
processes at once, as before the bound existed), dockyard-git on its defaults (at most one git process
per core, at least two), dockyard-git with ``--max-git-processes N`` for each ``--slots N``, and the
reference ``mcp-server-git==2026.10.19`` served over HTTP by its own SDK
(``reference_git_http.py``). Every client is one 2025-11-25 session calling ``git_status`` and
``git_log(max_count=10)`` in turn for ``--seconds``. Reported: calls/s, p50/p99 latency per call (nearest
rank), errors, and the peak memory of the server's process tree (the server plus every descendant alive,
VmRSS summed, sampled every 10 ms by a thread of its own). Ratios are ours/peer: above 1 for calls/s means
ours is faster, below 1 for p99 and memory means ours is lower. With ``--rounds`` above 1 the table shows,
per server and level, the round with the median calls/s (use an odd number).

The repository (2,000 commits over 1,000 files, bench/git/make_history.py) is built in a temporary folder
and removed afterwards; nothing is written inside the checkout but the reference's virtual environment
(bench/.work/git-peer, as bench/git does). Each server listens on a loopback port the OS chose free, and
the benchmark checks that the process listening there is the one it started before measuring.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "bench" / "git"))
sys.path.insert(0, str(ROOT))

import httpx2  # noqa: E402
from _common import peer_venv  # noqa: E402
from _ports import listening_port  # noqa: E402
from make_history import build  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

PEER = "mcp-server-git==2026.10.19"


# --- the process tree ------------------------------------------------------------------------------


def descendants(pid: int) -> list[int]:
    found, pending = [], [pid]
    while pending:
        parent = pending.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                children = Path(f"/proc/{parent}/task/{task}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                found.append(child)
                pending.append(child)
    return found


def tree_rss_mb(pid: int) -> tuple[float, int]:
    """(VmRSS of ``pid`` and all its descendants, in MB; how many descendants)."""
    total = 0
    children = descendants(pid)
    for process in (pid, *children):
        try:
            for line in Path(f"/proc/{process}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
                    break
        except OSError:
            pass
    return total / 1024, len(children)


class TreeSampler(threading.Thread):
    def __init__(self, pid: int, every_s: float = 0.01) -> None:
        super().__init__(daemon=True)
        self.pid, self.every_s = pid, every_s
        self.peak_mb = 0.0
        self.peak_children = 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            mb, children = tree_rss_mb(self.pid)
            self.peak_mb = max(self.peak_mb, mb)
            self.peak_children = max(self.peak_children, children)
            self._done.wait(self.every_s)

    def stop(self) -> None:
        self._done.set()
        self.join()


# --- servers ---------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Running:
    label: str
    process: subprocess.Popen
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


def start(label: str, command: list[str], log: Path, timeout: float = 90) -> Running:
    """Start a server on a port the OS says is free, and wait until *that process* listens on it: another
    program that took the port in between would otherwise be measured instead (the run then fails)."""
    port = free_port()
    command = [part.replace("{port}", str(port)) for part in command]
    process = subprocess.Popen(
        command, stdout=log.open("wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=str(ROOT)
    )
    deadline = time.monotonic() + timeout
    while listening_port(process.pid) != port:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise SystemExit(f"{label} did not listen on 127.0.0.1:{port}:\n{log.read_text()[-2000:]}")
        time.sleep(0.05)
    return Running(label, process, port)


def stop(server: Running) -> None:
    server.process.terminate()
    try:
        server.process.wait(10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


# --- load ------------------------------------------------------------------------------------------


@dataclass
class Result:
    label: str
    clients: int
    calls: int = 0
    errors: int = 0
    first_error: str = ""
    seconds: float = math.nan
    latencies: list[float] = field(default_factory=list)
    peak_mb: float = math.nan
    peak_children: int = 0

    @property
    def rate(self) -> float:
        return self.calls / self.seconds

    def percentile(self, fraction: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)] * 1000 if ordered else math.nan


async def drive(server: Running, calls: list[tuple[str, dict]], clients: int, seconds: float) -> Result:
    result = Result(server.label, clients)
    ready = asyncio.Event()
    stop_at = math.inf
    warmed = 0

    async def client(index: int) -> None:
        nonlocal warmed
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(120)) as http,
            streamable_http_client(server.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for name, arguments in calls:  # warm-up, not counted
                await session.call_tool(name, arguments)
            warmed += 1
            await ready.wait()
            turn = index
            while time.perf_counter() < stop_at:
                name, arguments = calls[turn % len(calls)]
                turn += 1
                started = time.perf_counter()
                try:
                    answer = await session.call_tool(name, arguments)
                    if answer.is_error:
                        result.errors += 1
                        result.first_error = result.first_error or str(answer.content)[:300]
                except Exception as error:
                    result.errors += 1
                    result.first_error = result.first_error or f"{type(error).__name__}: {error}"[:300]
                result.latencies.append(time.perf_counter() - started)
                result.calls += 1

    tasks = [asyncio.create_task(client(i)) for i in range(clients)]
    # Everyone connected and warmed up before the clock starts (a client that failed ends the wait).
    while warmed < clients and not any(t.done() for t in tasks):
        await asyncio.sleep(0.05)
    sampler = TreeSampler(server.process.pid)
    sampler.start()
    started = time.perf_counter()
    stop_at = started + seconds
    ready.set()
    await asyncio.gather(*tasks)
    result.seconds = time.perf_counter() - started
    sampler.stop()
    result.peak_mb, result.peak_children = sampler.peak_mb, sampler.peak_children
    return result


# --- the run ---------------------------------------------------------------------------------------


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--seconds", type=float, default=15.0, help="measured seconds per server and level")
    parser.add_argument("--rounds", type=int, default=1, help="repeat every level this many times")
    parser.add_argument(
        "--slots", type=int, nargs="*", default=[], help="also dockyard-git with --max-git-processes N"
    )
    args = parser.parse_args()

    peer = peer_venv("git-peer", [PEER])
    dockyard = str(ROOT / ".venv" / "bin" / "dockyard-git")
    scratch = Path(tempfile.mkdtemp(prefix="dockyard-bench-git-http-"))
    try:
        repo = build(scratch / "history", 2_000, 1_000)
        common = ["--root", str(repo), "--transport", "http", "--host", "127.0.0.1", "--port", "{port}"]
        common += ["--log-level", "WARNING"]
        servers = {
            "dockyard-git unbounded": ([dockyard, *common, "--max-git-processes", "1000"], False),
            "dockyard-git": ([dockyard, *common], False),
            "mcp-server-git": (
                [str(peer / "bin" / "python"), str(HERE / "reference_git_http.py"), str(repo), "{port}"],
                True,
            ),
        }
        for slots in args.slots:
            servers[f"dockyard-git {slots} slots"] = (
                [dockyard, *common, "--max-git-processes", str(slots)],
                False,
            )
        print(f"# {os.cpu_count()} cores; repository {repo} (2,000 commits, 1,000 files)", flush=True)
        results: list[Result] = []
        for round_ in range(args.rounds):
            for clients in args.clients:
                # Alternate the order between levels and rounds so neither side always goes first.
                order = list(servers)
                if (round_ + args.clients.index(clients)) % 2:
                    order.reverse()
                for label in order:
                    command, is_peer = servers[label]
                    calls = [("git_status", {}), ("git_log", {"max_count": 10})]
                    if is_peer:
                        calls = [(name, {"repo_path": str(repo), **arguments}) for name, arguments in calls]
                    server = start(label, command, scratch / f"{label.replace(' ', '-')}.log")
                    try:
                        result = await drive(server, calls, clients, args.seconds)
                    finally:
                        stop(server)
                    results.append(result)
                    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
                    print(
                        f"{label:24} {clients:3} clients: {result.calls:6} calls, {result.errors} errors, "
                        f"{result.rate:7.1f} calls/s, p50 {result.percentile(0.5):7.1f} ms, p99 "
                        f"{result.percentile(0.99):7.1f} ms, tree peak {result.peak_mb:6.1f} MB "
                        f"({result.peak_children} processes); load average {load}",
                        flush=True,
                    )
                    if result.errors:
                        print(f"    first error: {result.first_error}", flush=True)
        print()
        print(table(results, args.clients, list(servers)))
        return 1 if any(r.errors for r in results) else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def table(results: list[Result], levels: list[int], labels: list[str]) -> str:
    def best(label: str, clients: int) -> Result:
        """The round with the median calls/s (one round: that one)."""
        runs = sorted((r for r in results if r.label == label and r.clients == clients), key=lambda r: r.rate)
        return runs[len(runs) // 2]

    rows = [
        "| clients | server | calls/s | p50 ms | p99 ms | tree peak MB | errors | calls/s ours/peer | "
        "p99 ours/peer | memory ours/peer |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for clients in levels:
        peer = best("mcp-server-git", clients)
        for label in labels:
            r = best(label, clients)
            ratios = ["", "", ""]
            if r is not peer:
                ratios = [
                    f"{r.rate / peer.rate:.2f}×",
                    f"{r.percentile(0.99) / peer.percentile(0.99):.2f}×",
                    f"{r.peak_mb / peer.peak_mb:.2f}×",
                ]
            rows.append(
                f"| {clients} | {label} | {r.rate:.1f} | {r.percentile(0.5):.1f} | {r.percentile(0.99):.1f} | "
                f"{r.peak_mb:.0f} | {r.errors} | " + " | ".join(ratios) + " |"
            )
    return "\n".join(rows)


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
