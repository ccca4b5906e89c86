"""What every Dockyard benchmark shares: a stdio MCP session to a server process, timing, memory.

Both sides of a comparison are driven the same way — the official SDK's ClientSession over stdio — so the
ratios compare servers, not clients. Both servers run at once and their calls alternate in ABBA order
(ours, peer, peer, ours, …), so a burst of other load on this 2-core machine hits both sides alike and
neither always runs right after the other; the client collects its garbage before each timed call, so
the objects one server's large reply left behind are not scanned during the other server's call. Besides
wall time per call, the report gives each server's CPU time per call (its own plus the git or other
children it waited for, and of the worker processes it keeps, from /proc), which other load barely
moves. Peak memory is the VmHWM of the server process plus that of each worker process alive, read from
/proc before the session closes.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import random
import shutil
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
# Where a run's generated data and the peers' installs go: $DOCKYARD_BENCH_WORK (kept, so a next run reuses
# the installs and databases), else a temporary folder removed when the run ends. Never the checkout: a
# history or database left there is what the next benchmark (or git status) would then find.
WORK_ENV = "DOCKYARD_BENCH_WORK"
_work: Path | None = None


def use_work_dir(path: Path | str | None) -> None:
    """Make ``path`` this run's work folder (a ``--work-dir`` flag); None keeps the default."""
    global _work
    if path is not None:
        _work = Path(path).resolve()
        _work.mkdir(parents=True, exist_ok=True)


def work_dir() -> Path:
    """This run's work folder (see ``WORK_ENV``), created on first use."""
    global _work
    if _work is None:
        kept = os.environ.get(WORK_ENV)
        if kept:
            use_work_dir(kept)
        else:
            _work = Path(tempfile.mkdtemp(prefix="dockyard-bench-"))
            atexit.register(shutil.rmtree, _work, ignore_errors=True)
    assert _work is not None
    return _work


def peer_venv(name: str, requirements: Sequence[str]) -> Path:
    """A virtual environment of its own for a peer server (its mcp pin may clash with ours), in the work
    folder (installed once per run, from uv's cache after the first)."""
    venv = work_dir() / name
    if not (venv / "bin" / "python").exists():
        subprocess.run(["uv", "venv", "-q", "--python", sys.executable, str(venv)], check=True)
        # Compiled, as ours are: without bytecode a start pays for compiling every module it imports.
        install = [
            "uv",
            "pip",
            "install",
            "-q",
            "--compile-bytecode",
            "--python",
            str(venv / "bin" / "python"),
        ]
        subprocess.run([*install, *requirements], check=True)
    return venv


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


@dataclass
class Server:
    label: str
    session: ClientSession
    pid_file: Path

    def cpu_seconds(self) -> float:
        """User + system CPU of the server, of the children it has reaped (git processes) and of the
        children still running (sqlite's worker processes)."""
        pid = int(self.pid_file.read_text().strip())
        ticks = 0
        for process in (pid, *_children(pid)):
            try:
                fields = Path(f"/proc/{process}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # ended in between: its time is in its parent's cutime now
            ticks += sum(int(v) for v in fields[11:15])
        return ticks / os.sysconf("SC_CLK_TCK")

    def peak_rss_mb(self) -> float | None:
        """VmHWM of the server plus that of each of its children alive now (sqlite's workers)."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        total = 0
        for process in (pid, *_children(pid)):
            try:
                for line in Path(f"/proc/{process}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
            except OSError:
                if process == pid:
                    return None
        return total / 1024

    async def call(self, tool: str, arguments: dict, timeout: float = 300) -> tuple[float, int, bool]:
        """(seconds, response bytes, is_error)."""
        # The client's garbage from earlier calls (a 10,000-row reply is ~80,000 objects, and measuring its
        # size makes as many again) is collected now, outside the timing, so a collection it would
        # trigger cannot land in the next call, which may be the other server's.
        gc.collect()
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
    # A file whose time is moved before every timed call of either server, outside the timing.
    touch: Path | None = None
    results: dict[str, dict] = field(default_factory=dict)


def selected(cases: Sequence[Case], only: Sequence[str] | None) -> list[Case]:
    """The cases whose name contains one of ``only`` (every case when it is empty)."""
    return [case for case in cases if not only or any(part in case.name for part in only)]


async def measure_side_by_side(cases: Sequence[Case], ours: Server, peer: Server, warmup: int = 2) -> None:
    """Each case on both servers, alternating single calls so both see the same machine load."""
    for case in cases:
        sides = {"ours": (ours, case.ours), "peer": (peer, case.peer)}
        for label, (server, (tool, arguments)) in sides.items():
            for _ in range(warmup if case.repeat > 1 else 0):
                await server.call(tool, arguments, case.timeout)
            case.results[label] = {"times": [], "cpu": 0.0}
        for repetition in range(case.repeat):
            # ABBA order: each side goes first half the time, so neither always follows the other.
            order = list(sides.items()) if repetition % 2 == 0 else list(reversed(sides.items()))
            for label, (server, (tool, arguments)) in order:
                result = case.results[label]
                if "error" in result:
                    continue
                if case.touch is not None:
                    os.utime(case.touch)
                cpu_before = server.cpu_seconds()
                try:
                    elapsed, size, error = await server.call(tool, arguments, case.timeout)
                except Exception as exc:  # a peer that times out or crashes is reported, not fatal
                    case.results[label] = {"error": f"{type(exc).__name__}: {str(exc)[:80]}"}
                    continue
                result["cpu"] += server.cpu_seconds() - cpu_before
                result["times"].append(elapsed)
                result.update(bytes=size, is_error=error)
        summarise(case)


def summarise(case: Case) -> None:
    """Each side's median wall time and mean CPU per call, from the times and CPU seconds gathered."""
    for result in case.results.values():
        if "error" not in result:
            result["median_ms"] = statistics.median(result["times"]) * 1000
            result["cpu_ms"] = result.pop("cpu") / len(result["times"]) * 1000


TS_SDK = (
    ROOT / "tests" / "interop" / "node" / "node_modules" / "@modelcontextprotocol" / "sdk" / "dist" / "esm"
)
CLIENTS = ("python", "typescript")


def client_label(client: str) -> str:
    return {
        "python": "the Python SDK's ClientSession",
        "typescript": "the TypeScript SDK's Client (the one in Claude Desktop, VS Code, Cursor)",
    }[client]


def measure_with_typescript_client(
    cases: Sequence[Case], ours: Sequence[str], peer: Sequence[str], warmup: int = 2
) -> dict[str, float | None]:
    """The cases of :func:`measure_side_by_side`, driven by ``bench/ts_client.mjs`` (the TypeScript SDK,
    installed for the interop tests by ``tests/interop/prepare.sh``); returns each server's peak memory."""
    if not (TS_SDK / "client" / "index.js").exists():
        raise SystemExit("The TypeScript SDK is not installed: run `bash tests/interop/prepare.sh` first.")
    node = shutil.which("node", path=f"{ROOT / '.ci' / '.tools' / 'path'}:{os.environ.get('PATH', '')}")
    if node is None:
        raise SystemExit("No node on PATH: run `bash tests/interop/prepare.sh` (it installs Node.js 22).")
    spec = {
        "sdk": str(TS_SDK),
        "servers": {"ours": list(ours), "peer": list(peer)},
        "warmup": warmup,
        "cases": [
            {
                "name": case.name,
                "ours": list(case.ours),
                "peer": list(case.peer or case.ours),
                "repeat": case.repeat,
                "timeout": case.timeout,
                "touch": str(case.touch) if case.touch else None,
            }
            for case in cases
        ],
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json") as spec_file:
        json.dump(spec, spec_file)
        spec_file.flush()
        completed = subprocess.run(
            [node, "--expose-gc", str(ROOT / "bench" / "ts_client.mjs"), spec_file.name],
            capture_output=True,
            text=True,
        )
    if completed.returncode != 0:
        raise SystemExit(f"bench/ts_client.mjs failed:\n{completed.stderr[-3000:]}")
    output = json.loads(completed.stdout)
    for case in cases:
        case.results = output["cases"][case.name]
        summarise(case)
    return output["memory"]


async def run_side_by_side(
    cases: Sequence[Case], ours: Sequence[str], peer: Sequence[str], client: str
) -> dict[str, float | None]:
    """Run ``cases`` against both servers with ``client``; returns each server's peak memory in MB."""
    if client == "typescript":
        return measure_with_typescript_client(cases, ours, peer)
    async with serve("ours", ours) as our_server, serve("peer", peer) as peer_server:
        await measure_side_by_side(cases, our_server, peer_server)
        return {"ours": our_server.peak_rss_mb(), "peer": peer_server.peak_rss_mb()}


def ratio_interval(ours: Sequence[float], peer: Sequence[float], rounds: int = 2000) -> tuple[float, float]:
    """A 95% bootstrap interval for median(peer) / median(ours): how far the wall-time ratio could move
    by chance alone, given the spread of the calls measured."""
    rng = random.Random(0)
    ratios = sorted(
        statistics.median(rng.choices(peer, k=len(peer))) / statistics.median(rng.choices(ours, k=len(ours)))
        for _ in range(rounds)
    )
    return ratios[int(rounds * 0.025)], ratios[int(rounds * 0.975) - 1]


def report(title: str, cases: Sequence[Case], memory: dict[str, float | None], extra: str = "") -> str:
    lines = [
        f"## {title}",
        "",
        "| case | ours ms | peer ms | peer/ours (95% CI) | ours CPU ms | peer CPU ms | CPU peer/ours | ours bytes | peer bytes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for case in cases:
        ours, peer = case.results.get("ours", {}), case.results.get("peer", {})

        def cell(r: dict, key: str, fmt: str) -> str:
            if "error" in r:  # "McpError: MCP error -32000: Connection closed" -> "failed: Connection closed"
                return "failed: " + r["error"].rsplit(": ", 1)[-1]
            return format(r[key], fmt) if key in r else "—"

        def ratio(key: str, ours: dict = ours, peer: dict = peer) -> str:
            if key in ours and key in peer and ours[key] > 0:
                text = f"{peer[key] / ours[key]:.2f}×"
                if key == "median_ms" and min(len(ours["times"]), len(peer["times"])) >= 10:
                    low, high = ratio_interval(ours["times"], peer["times"])
                    text += f" ({low:.2f}–{high:.2f})"
                return text
            return "—"

        lines.append(
            f"| {case.name} | {cell(ours, 'median_ms', '.1f')} | {cell(peer, 'median_ms', '.1f')} | "
            f"{ratio('median_ms')} | {cell(ours, 'cpu_ms', '.1f')} | {cell(peer, 'cpu_ms', '.1f')} | "
            f"{ratio('cpu_ms')} | {cell(ours, 'bytes', ',')} | {cell(peer, 'bytes', ',')} |"
        )
    lines += [
        "",
        "Peak server memory (VmHWM): "
        + ", ".join(f"{k} {v:.0f} MB" if v else f"{k} n/a" for k, v in memory.items()),
    ]
    if extra:
        lines += ["", extra]
    return "\n".join(lines)
