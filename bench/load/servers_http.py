"""dockyard-sqlite, -tasks, -name-origin (and -git) over Streamable HTTP at 1, 8 and 32 clients, both eras.

    uv run python bench/load/servers_http.py [--servers sqlite tasks name-origin-warm name-origin-cold git]
        [--eras 2025-11-25 2026-07-28] [--clients 1 8 32] [--seconds 15] [--rounds 1] [--extra SERVER=ARGS]
        [--fresh-client] [--py-spy PATH --profiles DIR]

The companion of ``git_http.py`` (which puts dockyard-git beside the reference git server): same clock,
same process-tree memory sampler, same port check. Each (server, era, clients) is a fresh server process
on a loopback port the OS chose, its data in a temporary folder (``XDG_DATA_HOME`` points there, so the
sqlite demo database and the name-origin cache are made there too). Every client is one session —
2025-11-25: the official SDK ``ClientSession`` (initialize, a session id); 2026-07-28: ``fastmcp.Client``
(sessionless), as the tests' harness and ``load.py`` drive them — calling the server's mix in turn for
``--seconds``; the clock starts once every client has connected and made each call once.

The mixes (read-only, cheap, what a model calls most):

* sqlite (``--demo``): ``query`` of 10 customers, ``describe_table(customers)``;
* tasks (``--demo``, a SQLite file): ``list_tasks(project=TASK)``, ``get_task(TASK-3)``, ``next_task()``;
* name-origin against the loopback fake of nationalize.io (``tests/name_origin/fake_nationalize.py``, a
  process of its own, one per run, with an API key): ``predict_origin``. **warm**: 64 names, all asked
  during the warm-up, so every timed call is a cache hit; **cold**: every call a name never asked, so
  every call goes upstream (and writes the cache);
* git (a 2,000-commit repository): ``git_status``, ``git_log(max_count=10)``.

Reported per run: calls/s, p50/p99 per call (nearest rank), errors, the peak memory of the server's process
tree (VmRSS of the server and its descendants, summed, every 10 ms), the CPU time per call of the server's
tree, of the clients (this process) and of the fake upstream (``/proc``: what other tenants of a shared
machine barely move, unlike the times), and the JSON-RPC requests the clients sent per timed call, by
method (an httpx request hook reads each POST body), which is how a client-side re-listing (``tools/list``
before a call) would show. ``--fresh-client`` (2026-07-28) opens a new client for every call, as a host
without a long-lived client does. ``--py-spy`` samples each server (workers included) during the timed
window; py-spy is not a dependency of the workspace: install it outside the checkout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "bench" / "git"))
sys.path.insert(0, str(ROOT))

import httpx2  # noqa: E402
from fastmcp import Client  # noqa: E402
from fastmcp.client.transports import StreamableHttpTransport  # noqa: E402
from git_http import Running, TreeSampler, start, stop  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

LEGACY, MODERN = "2025-11-25", "2026-07-28"
BIN = ROOT / ".venv" / "bin"
API_KEY = "nat_" + "S3cr3tK3y" * 4  # the fake's one key (tests/name_origin/fake_nationalize.py)
PY_SPY: Path | None = None
FRESH_CLIENT = False
WARM_NAMES = [f"warm{i:02d}" for i in range(64)]


# --- what each server is asked ---------------------------------------------------------------------


@dataclass
class Mix:
    script: str
    args: list[str]
    calls: list[tuple[str, dict[str, Any]]]
    fresh_names: bool = False  # name-origin cold: every call a name never asked
    upstream: bool = False  # needs the fake nationalize.io
    repository: bool = False  # needs the git history


MIXES: dict[str, Mix] = {
    "sqlite": Mix(
        "dockyard-sqlite",
        ["--demo"],
        [
            ("query", {"sql": "SELECT * FROM customers ORDER BY id LIMIT 10"}),
            ("describe_table", {"table": "customers"}),
        ],
    ),
    "tasks": Mix(
        "dockyard-tasks",
        ["--demo", "--actor", "alice"],
        [("list_tasks", {"project": "TASK"}), ("get_task", {"task_id": "TASK-3"}), ("next_task", {})],
    ),
    # predict_origin is in the `details` toolset (off by default): served by name, as before.
    "name-origin-warm": Mix(
        "dockyard-name-origin",
        ["--tools", "predict_origin"],
        [("predict_origin", {"name": name}) for name in WARM_NAMES],
        upstream=True,
    ),
    "name-origin-cold": Mix(
        "dockyard-name-origin",
        ["--tools", "predict_origin"],
        [("predict_origin", {"name": "?"})],
        fresh_names=True,
        upstream=True,
    ),
    "git": Mix("dockyard-git", [], [("git_status", {}), ("git_log", {"max_count": 10})], repository=True),
}


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` in this process's environment for the block (a server started in it inherits them)."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# --- CPU time ----------------------------------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu_s(pid: int) -> float:
    """User + system CPU of ``pid``, its children waited for, and its live descendants, in seconds."""
    from git_http import descendants

    total = 0
    for process in (pid, *descendants(pid)):
        try:
            fields = Path(f"/proc/{process}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # utime stime cutime cstime are fields 14-17 (1-based) of stat, 12-15 after the name
        total += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
    return total / TICK


# --- one run ---------------------------------------------------------------------------------------


@dataclass
class Result:
    server: str
    era: str
    clients: int
    calls: int = 0
    errors: int = 0
    first_error: str = ""
    seconds: float = math.nan
    latencies: list[float] = field(default_factory=list)
    peak_mb: float = math.nan
    methods: Counter = field(default_factory=Counter)
    server_cpu_s: float = math.nan  # the server tree's CPU time over the timed window
    client_cpu_s: float = math.nan  # this process's (all the clients')
    upstream_cpu_s: float = math.nan  # the fake nationalize.io's, when there is one

    def cpu_ms_per_call(self, which: str) -> float:
        return getattr(self, f"{which}_cpu_s") / max(self.calls, 1) * 1000

    @property
    def rate(self) -> float:
        return self.calls / self.seconds

    def percentile(self, fraction: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)] * 1000 if ordered else math.nan

    def per_call(self) -> str:
        return ", ".join(f"{m} {n / max(self.calls, 1):.2f}" for m, n in sorted(self.methods.items()))


class Counting:
    """Counts the JSON-RPC methods clients POST, once the clock runs."""

    def __init__(self) -> None:
        self.on = False
        self.methods: Counter = Counter()

    async def hook(self, request: httpx2.Request) -> None:
        if not self.on or request.method != "POST":
            return
        try:
            body = json.loads(request.content)
        except (ValueError, httpx2.RequestNotRead):
            return
        for message in body if isinstance(body, list) else [body]:
            if isinstance(message, dict) and "method" in message:
                self.methods[message["method"]] += 1

    def factory(self, headers=None, timeout=None, auth=None, **more: Any) -> httpx2.AsyncClient:
        more.setdefault("follow_redirects", True)
        hooks = more.pop("event_hooks", None) or {}
        hooks = {**hooks, "request": [*hooks.get("request", []), self.hook]}
        return httpx2.AsyncClient(
            headers=headers, timeout=timeout or httpx2.Timeout(120), auth=auth, event_hooks=hooks, **more
        )


async def drive(
    server: Running,
    era: str,
    mix: Mix,
    clients: int,
    seconds: float,
    label: str,
    profile: Path | None = None,
    upstream_pid: int | None = None,
) -> Result:
    result = Result(label, era, clients)
    counting = Counting()
    ready = asyncio.Event()
    stop_at = math.inf
    warmed = 0

    async def calls_of(call) -> None:
        nonlocal warmed
        for name, arguments in mix.calls:  # warm-up, not counted: every name asked once (warm cache)
            await call(name, arguments if not mix.fresh_names else {"name": f"w{index_of[call]}"})
        warmed += 1
        await ready.wait()
        turn = index_of[call]
        while time.perf_counter() < stop_at:
            name, arguments = mix.calls[turn % len(mix.calls)]
            if mix.fresh_names:
                arguments = {"name": f"c{index_of[call]}n{turn}"}
            turn += 1
            started = time.perf_counter()
            try:
                is_error, text = await call(name, arguments)
                if is_error:
                    result.errors += 1
                    result.first_error = result.first_error or text[:300]
            except Exception as error:
                result.errors += 1
                result.first_error = result.first_error or f"{type(error).__name__}: {error}"[:300]
            result.latencies.append(time.perf_counter() - started)
            result.calls += 1

    index_of: dict[Any, int] = {}

    async def client(index: int) -> None:
        if era == MODERN and FRESH_CLIENT:
            # A host that opens a new client for every call: each client lists the tools before its
            # first call (to validate structured content against the output schema).
            async def call(name: str, arguments: dict) -> tuple[bool, str]:
                transport = StreamableHttpTransport(server.url, httpx_client_factory=counting.factory)
                async with Client(transport, timeout=120) as fm:
                    answer = await fm.call_tool(name, arguments, raise_on_error=False)
                return bool(answer.is_error), str(answer.content)

            index_of[call] = index
            await calls_of(call)
            return
        if era == MODERN:
            transport = StreamableHttpTransport(server.url, httpx_client_factory=counting.factory)
            async with Client(transport, timeout=120) as fm:

                async def call(name: str, arguments: dict) -> tuple[bool, str]:
                    answer = await fm.call_tool(name, arguments, raise_on_error=False)
                    return bool(answer.is_error), str(answer.content)

                index_of[call] = index
                await calls_of(call)
            return
        async with (
            counting.factory() as http,
            streamable_http_client(server.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()

            async def call(name: str, arguments: dict) -> tuple[bool, str]:
                answer = await session.call_tool(name, arguments)
                return bool(answer.is_error), str(answer.content)

            index_of[call] = index
            await calls_of(call)

    tasks = [asyncio.create_task(client(i)) for i in range(clients)]
    while warmed < clients and not any(t.done() for t in tasks):
        await asyncio.sleep(0.05)
    for t in tasks:
        if t.done() and t.exception():
            raise t.exception()
    sampler = TreeSampler(server.process.pid)
    sampler.start()
    spy = None
    if profile is not None:  # py-spy (not a dependency: --py-spy names its binary) samples the timed window
        spy = subprocess.Popen(
            [
                str(PY_SPY),
                "record",
                "--pid",
                str(server.process.pid),
                "--duration",
                str(int(seconds)),
                "--rate",
                "100",
                "--format",
                "raw",
                "--nonblocking",
                "--subprocesses",
                "--output",
                str(profile),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    counting.on = True
    server_cpu, client_cpu = tree_cpu_s(server.process.pid), time.process_time()
    upstream_cpu = tree_cpu_s(upstream_pid) if upstream_pid else math.nan
    started = time.perf_counter()
    stop_at = started + seconds
    ready.set()
    await asyncio.gather(*tasks)
    result.seconds = time.perf_counter() - started
    result.server_cpu_s = tree_cpu_s(server.process.pid) - server_cpu
    result.client_cpu_s = time.process_time() - client_cpu
    if upstream_pid:
        result.upstream_cpu_s = tree_cpu_s(upstream_pid) - upstream_cpu
    counting.on = False
    sampler.stop()
    result.peak_mb = sampler.peak_mb
    if spy is not None:
        spy.wait()
    result.methods = counting.methods
    return result


def start_fake(scratch: Path) -> tuple[subprocess.Popen, str]:
    """The loopback nationalize.io, a process of its own (its threads do not share the client's GIL)."""
    process = subprocess.Popen(
        [sys.executable, "-u", "-m", "tests.name_origin.fake_nationalize", "0"],
        cwd=str(ROOT),
        stdout=subprocess.PIPE,
        stderr=(scratch / "fake.log").open("wb"),
        text=True,
    )
    line = process.stdout.readline()
    if "http://" not in line:
        process.kill()
        raise SystemExit(f"the fake nationalize.io did not start: {line!r}")
    return process, line.split()[-1]


# --- the run ---------------------------------------------------------------------------------------


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--servers", nargs="+", default=["sqlite", "tasks", "name-origin-warm", "name-origin-cold"]
    )
    parser.add_argument("--eras", nargs="+", default=[LEGACY, MODERN], choices=[LEGACY, MODERN])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--seconds", type=float, default=15.0, help="measured seconds per run")
    parser.add_argument("--rounds", type=int, default=1, help="repeat every run this many times (odd)")
    parser.add_argument(
        "--extra",
        action="append",
        default=[],
        metavar="SERVER=ARGS",
        help="more command-line arguments for one server, e.g. 'sqlite=--log-level INFO'",
    )
    parser.add_argument(
        "--py-spy",
        type=Path,
        help="a py-spy binary: sample every run's server (and workers) during the timed window, raw "
        "collapsed stacks written to --profiles",
    )
    parser.add_argument(
        "--profiles", type=Path, help="folder for the --py-spy profiles (outside the checkout)"
    )
    parser.add_argument(
        "--fresh-client",
        action="store_true",
        help="2026-07-28: a new fastmcp.Client for every call (as a host without a long-lived client)",
    )
    args = parser.parse_args()
    global PY_SPY, FRESH_CLIENT
    PY_SPY, FRESH_CLIENT = args.py_spy, args.fresh_client
    extra = {}
    for item in args.extra:
        name, _, more = item.partition("=")
        extra[name] = more.split()

    scratch = Path(tempfile.mkdtemp(prefix="dockyard-bench-servers-http-"))
    results: list[Result] = []
    try:
        repo = None
        if any(MIXES[s].repository for s in args.servers):
            from make_history import build

            repo = build(scratch / "history", 2_000, 1_000)
        print(f"# {os.cpu_count()} cores; scratch {scratch}", flush=True)
        for round_ in range(args.rounds):
            for server_name in args.servers:
                mix = MIXES[server_name]
                for era in args.eras:
                    for clients in args.clients:
                        run = scratch / f"{server_name}-{era}-{clients}-{round_}"
                        run.mkdir()
                        env = {"XDG_DATA_HOME": str(run / "data"), "NATIONALIZE_API_KEY": API_KEY}
                        command = [str(BIN / mix.script), *mix.args, *extra.get(server_name, [])]
                        command += ["--transport", "http", "--host", "127.0.0.1", "--port", "{port}"]
                        command += ["--log-level", "WARNING"] if "--log-level" not in command else []
                        if repo is not None and mix.repository:
                            command += ["--root", str(repo)]
                        fake = None
                        if mix.upstream:
                            fake, url = start_fake(run)
                            command += ["--api-url", url]
                        with environment(env):  # git_http.start passes this process's environment on
                            server = start(server_name, command, run / "server.log")
                        try:
                            profile = None
                            if PY_SPY is not None:
                                args.profiles.mkdir(parents=True, exist_ok=True)
                                profile = args.profiles / f"{server_name}-{era}-{clients}-{round_}.txt"
                            result = await drive(
                                server,
                                era,
                                mix,
                                clients,
                                args.seconds,
                                server_name,
                                profile,
                                fake.pid if fake is not None else None,
                            )
                        finally:
                            stop(server)
                            if fake is not None:
                                fake.terminate()
                                fake.wait()
                        results.append(result)
                        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
                        print(
                            f"{server_name:17} {era} {clients:3} clients: {result.calls:6} calls, "
                            f"{result.errors} errors, {result.rate:7.1f} calls/s, p50 {result.percentile(0.5):7.1f}"
                            f" ms, p99 {result.percentile(0.99):7.1f} ms, tree peak {result.peak_mb:6.1f} MB; CPU ms per "
                            f"call: server {result.cpu_ms_per_call('server'):.2f}, clients "
                            f"{result.cpu_ms_per_call('client'):.2f}, fake upstream "
                            f"{result.cpu_ms_per_call('upstream'):.2f}; "
                            f"requests per call: {result.per_call()}; load average {load}",
                            flush=True,
                        )
                        if result.errors:
                            print(f"    first error: {result.first_error}", flush=True)
        print()
        print(table(results, args))
        return 1 if any(r.errors for r in results) else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def table(results: list[Result], args: argparse.Namespace) -> str:
    def median(server: str, era: str, clients: int) -> Result:
        runs = [r for r in results if (r.server, r.era, r.clients) == (server, era, clients)]
        runs.sort(key=lambda r: r.rate)
        return runs[len(runs) // 2]

    rows = [
        "| server | era | clients | calls/s | p50 ms | p99 ms | p99 / p99 at 8 | tree peak MB | server CPU ms/call | "
        "client CPU ms/call | errors | requests per call |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for server in args.servers:
        for era in args.eras:
            base = median(server, era, 8) if 8 in args.clients else None
            for clients in args.clients:
                r = median(server, era, clients)
                growth = f"{r.percentile(0.99) / base.percentile(0.99):.1f}×" if base else ""
                rows.append(
                    f"| {server} | {era} | {clients} | {r.rate:.1f} | {r.percentile(0.5):.1f} | "
                    f"{r.percentile(0.99):.1f} | {growth} | {r.peak_mb:.0f} | {r.cpu_ms_per_call('server'):.2f} | "
                    f"{r.cpu_ms_per_call('client'):.2f} | {r.errors} | {r.per_call()} |"
                )
    return "\n".join(rows)


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
