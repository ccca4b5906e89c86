"""Load and soak over Streamable HTTP, on 127.0.0.1 only; exits non-zero unless every check passes.

    uv run python bench/load/load.py [--server NAME ...] [--era 2025-11-25|2026-07-28 ...]
                                     [--sessions 50] [--calls 200] [--short 10000] [--idle-timeout 5]

For each server (default: the toy and every installed one, on their defaults) and each protocol era
(default: both), a fresh server process is started on a free loopback port with
``--session-idle-timeout`` (5 s) and then:

0. tool: the cheap call is derived from ``tools/list``, never hard-coded: a tool annotated read-only and
   not open-world (so no traffic leaves this machine) whose required arguments are all absent or
   derivable from the schema (a default, an enum, a number's minimum or 0, false); each candidate is
   called three times and the fastest that never errors is used. No such tool: the run fails.
1. load: ``--sessions`` concurrent sessions, each making ``--calls`` calls of that tool. Any error
   (an error result, an exception, a timeout) fails the run. Reports calls/s and p50/p99 latency.
2. soak: ``--short`` short sessions in ``--lanes`` parallel lanes, each opened, used for one call and
   then *abandoned*: on 2025-11-25 the client does not send DELETE (``terminate_on_close=False``), so
   only the server's idle-session reaping can free it; on 2026-07-28 (sessionless) there is nothing to
   end, and the run shows the server keeps nothing per client either. Any error fails the run. The
   server's RSS is sampled every ``--short / --samples`` sessions.

   Memory levels off when, over the second half of the soak, RSS rises by no more than
   max(``--rss-slack-mb``, ``--rss-slack-pct`` % of the RSS at the half-way sample): growth is
   max(samples from half-way on) - RSS at half-way. Unreaped sessions grow RSS linearly with the
   number of sessions and fail this rule (see bench/load/README.md for the control run). Samples taken
   before ``2 × --idle-timeout + 1`` s of soak do not count: until then the sessions opened first are
   still alive *by design*, and RSS rises with them. A soak whose second half starts earlier (a short
   ``--short`` on a fast server) is too short to judge: the verdict is "inconclusive", not a failure.
3. reaped (2025-11-25 only): after the soak and ``2 × --idle-timeout + 1`` s of quiet (at most
   ``--settle-max``, 60 s), the first abandoned session's id must answer 404 (the server dropped it);
   RSS is sampled once more ("settled").

Every phase has a time limit (``--phase-timeout``) and every call one (``--call-timeout``): the run
stops by itself. The last lines are a Markdown table to paste into bench/load/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx2
import mcp.types as mt
from _ports import listening_port
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from dockyard_shared.cli import discover_servers
from tests.harness import ERAS, LEGACY, MODERN, Launch, http_server
from tests.interop.conftest import launch_for

# Built once: creating an SSL context (loading the CA bundle) costs ~20 ms of client CPU, which for
# plain-HTTP loopback sessions would otherwise be two thirds of the client's work per short session.
SSL_CONTEXT = ssl.create_default_context()

Call = Callable[[str, dict[str, Any]], Awaitable[tuple[bool, str]]]


class LoadFailure(Exception):
    """The run cannot go on for this server (no usable tool, the server died)."""


# The 1-minute load average, noted at every RSS sample and after every load phase.
LOAD_SEEN: list[float] = [os.getloadavg()[0]]


def rss_mb(pid: int) -> float:
    LOAD_SEEN.append(os.getloadavg()[0])
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise LoadFailure(f"no VmRSS for pid {pid}")


def _text(content: list[Any]) -> str:
    return " ".join(getattr(item, "text", "") for item in content)[:200]


@asynccontextmanager
async def session(
    url: str,
    era: str,
    *,
    timeout: float,
    terminate: bool = True,
    on_session_id: Callable[[str], None] | None = None,
) -> AsyncIterator[tuple[Call, Callable[[], Awaitable[list[mt.Tool]]]]]:
    """One client session; yields ``call(name, arguments) -> (is_error, text)`` and ``list_tools()``.

    2025-11-25: the official SDK client (initialize, a session id); with ``terminate=False`` it leaves
    without DELETE, as a crashed or careless client would. 2026-07-28: ``fastmcp.Client`` (sessionless).
    """
    if era == MODERN:
        async with Client(StreamableHttpTransport(url, verify=SSL_CONTEXT), timeout=timeout) as client:

            async def call(name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
                result = await client.call_tool(name, arguments, raise_on_error=False, timeout=timeout)
                return bool(result.is_error), _text(result.content)

            yield call, client.list_tools
        return

    async def remember_id(response: httpx2.Response) -> None:
        session_id = response.headers.get("mcp-session-id")
        if session_id and on_session_id is not None:
            on_session_id(session_id)

    hooks = {"response": [remember_id]} if on_session_id else {}
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(timeout), event_hooks=hooks, verify=SSL_CONTEXT) as http,
        streamable_http_client(url, http_client=http, terminate_on_close=terminate) as (read, write),
        ClientSession(read, write, read_timeout_seconds=timeout) as sdk,
    ):
        await sdk.initialize()

        async def call(name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
            result = await sdk.call_tool(name, arguments, read_timeout_seconds=timeout)
            return bool(result.is_error), _text(result.content)

        async def list_tools() -> list[mt.Tool]:
            return list((await sdk.list_tools()).tools)

        yield call, list_tools


# --- choosing the cheap call ---------------------------------------------------------------------


def derived_arguments(schema: dict[str, Any]) -> dict[str, Any] | None:
    """Values for every required argument that the schema itself determines, or None if one is a guess."""
    properties = schema.get("properties", {})
    arguments: dict[str, Any] = {}
    for name in schema.get("required", []):
        spec = properties.get(name, {})
        if "default" in spec:
            arguments[name] = spec["default"]
        elif "const" in spec:
            arguments[name] = spec["const"]
        elif spec.get("enum"):
            arguments[name] = spec["enum"][0]
        elif spec.get("type") in ("integer", "number"):
            value = spec.get("minimum", 0)
            if "exclusiveMinimum" in spec:
                value = spec["exclusiveMinimum"] + 1
            if "maximum" in spec and value > spec["maximum"]:
                return None
            arguments[name] = value
        elif spec.get("type") == "boolean":
            arguments[name] = False
        else:
            return None  # a string, an object…: any value would be a guess
    return arguments


def candidates(tools: list[mt.Tool]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for tool in tools:
        hints = tool.annotations
        if hints is None or hints.read_only_hint is not True or hints.open_world_hint is not False:
            continue
        arguments = derived_arguments(tool.input_schema)
        if arguments is not None:
            found.append((tool.name, arguments))
    # Tools with no required argument first: they need no derivation at all.
    return sorted(found, key=lambda item: len(item[1]))


async def choose_tool(url: str, era: str, timeout: float) -> tuple[str, dict[str, Any], str]:
    async with session(url, era, timeout=timeout) as (call, list_tools):
        tools = await list_tools()
        found = candidates(tools)
        if not found:
            raise LoadFailure(
                "no tool is annotated read-only and not open-world with derivable required arguments "
                f"among {sorted(t.name for t in tools)}"
            )
        timed: list[tuple[float, str, dict[str, Any]]] = []
        rejected: list[str] = []
        for name, arguments in found:
            latencies = []
            for _ in range(3):
                started = time.perf_counter()
                is_error, text = await call(name, arguments)
                latencies.append(time.perf_counter() - started)
                if is_error:
                    rejected.append(f"{name} (errors: {text[:60]})")
                    break
            else:
                timed.append((statistics.median(latencies), name, arguments))
        if not timed:
            raise LoadFailure(f"every candidate tool errors: {'; '.join(rejected)}")
        timed.sort(key=lambda item: item[0])
        _, name, arguments = timed[0]
        others = ", ".join(f"{n} {t * 1000:.1f} ms" for t, n, _ in timed[1:])
        note = f"fastest of {len(timed)} candidates" + (f" (others: {others})" if others else "")
        if rejected:
            note += f"; rejected: {', '.join(rejected)}"
        return name, arguments, note


# --- phases ----------------------------------------------------------------------------------------


@dataclass
class Errors:
    count: int = 0
    first: list[str] = field(default_factory=list)

    def add(self, message: str) -> None:
        self.count += 1
        if len(self.first) < 3:
            self.first.append(message[:200])


def percentile(ordered: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not ordered:
        return math.nan
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


@dataclass
class LoadResult:
    calls: int
    errors: Errors
    seconds: float
    p50_ms: float
    p99_ms: float

    @property
    def rate(self) -> float:
        return self.calls / self.seconds if self.seconds else math.nan


async def load(url: str, era: str, tool: str, arguments: dict, args: argparse.Namespace) -> LoadResult:
    latencies: list[float] = []
    errors = Errors()

    async def one(index: int) -> None:
        try:
            async with session(url, era, timeout=args.call_timeout) as (call, _):
                for _ in range(args.calls):
                    started = time.perf_counter()
                    try:
                        is_error, text = await call(tool, arguments)
                        if is_error:
                            errors.add(f"error result: {text}")
                    except Exception as error:
                        errors.add(f"{type(error).__name__}: {error}")
                    latencies.append(time.perf_counter() - started)
        except Exception as error:  # the session itself failed (connect, initialize, close)
            errors.add(f"session {index}: {type(error).__name__}: {error}")

    started = time.perf_counter()
    try:
        async with asyncio.timeout(args.phase_timeout):
            await asyncio.gather(*(one(i) for i in range(args.sessions)))
    except TimeoutError:
        errors.add(f"load phase exceeded {args.phase_timeout:.0f} s")
    seconds = time.perf_counter() - started
    expected = args.sessions * args.calls
    if len(latencies) < expected:
        errors.add(f"only {len(latencies)} of {expected} calls were made")
    ordered = sorted(latencies)
    return LoadResult(
        len(latencies), errors, seconds, percentile(ordered, 0.50) * 1000, percentile(ordered, 0.99) * 1000
    )


@dataclass
class SoakResult:
    sessions: int
    errors: Errors
    seconds: float
    samples: list[tuple[int, float, float]]  # (sessions done, RSS MB, seconds into the soak)
    settled_mb: float = math.nan
    reaped: bool | None = None  # None: not applicable (sessionless era)
    reap_detail: str = ""

    @property
    def rate(self) -> float:
        return self.sessions / self.seconds if self.seconds else math.nan

    def levels_off(
        self, slack_mb: float, slack_pct: float, warm_up_s: float
    ) -> tuple[bool | None, float, float, float]:
        """(passes, growth MB, limit MB, RSS at half-way) under the rule in the module docstring;
        passes is None when no two samples are both in the second half and past ``warm_up_s``."""
        half = self.samples[-1][0] / 2
        second_half = [mb for done, mb, at in self.samples if done >= half and at >= warm_up_s]
        if len(second_half) < 2:
            return None, math.nan, math.nan, math.nan
        base = second_half[0]
        growth = max(second_half) - base
        limit = max(slack_mb, base * slack_pct / 100)
        return growth <= limit, growth, limit, base


async def soak(
    url: str, era: str, tool: str, arguments: dict, pid: int, args: argparse.Namespace
) -> SoakResult:
    total, lanes = args.short, args.lanes
    every = max(1, total // args.samples)
    samples: list[tuple[int, float, float]] = [(0, rss_mb(pid), 0.0)]
    errors = Errors()
    done = 0
    first_id: list[str] = []

    def keep_first(session_id: str) -> None:
        if not first_id:
            first_id.append(session_id)

    async def lane(count: int) -> None:
        nonlocal done
        for _ in range(count):
            try:
                async with session(
                    url, era, timeout=args.call_timeout, terminate=False, on_session_id=keep_first
                ) as (call, _):
                    is_error, text = await call(tool, arguments)
                    if is_error:
                        errors.add(f"error result: {text}")
            except Exception as error:
                errors.add(f"{type(error).__name__}: {error}")
            done += 1
            if done % every == 0:
                samples.append((done, rss_mb(pid), time.perf_counter() - started))

    counts = [total // lanes + (1 if i < total % lanes else 0) for i in range(lanes)]
    started = time.perf_counter()
    try:
        async with asyncio.timeout(args.phase_timeout):
            await asyncio.gather(*(lane(count) for count in counts))
    except TimeoutError:
        errors.add(f"soak phase exceeded {args.phase_timeout:.0f} s after {done} sessions")
    seconds = time.perf_counter() - started
    if samples[-1][0] != done:
        samples.append((done, rss_mb(pid), seconds))
    result = SoakResult(done, errors, seconds, samples)

    quiet = settle_seconds(args)
    await asyncio.sleep(quiet)
    result.settled_mb = rss_mb(pid)
    if era == LEGACY:
        if not first_id:
            result.reaped, result.reap_detail = False, "no session id was ever seen"
        else:
            status = await probe_session(url, first_id[0])
            result.reaped = status == 404
            result.reap_detail = f"first abandoned session answers {status} after {quiet:.0f} s quiet"
    return result


def warm_up_seconds(args: argparse.Namespace) -> float:
    """How long into the soak RSS may rise by design: the first sessions live an idle timeout, and are
    reaped within another."""
    return 2 * args.idle_timeout + 1


def settle_seconds(args: argparse.Namespace) -> float:
    """The quiet wait after the soak: two idle timeouts and a second, at most ``--settle-max``."""
    return min(2 * args.idle_timeout + 1, args.settle_max)


async def probe_session(url: str, session_id: str) -> int:
    """The status a request on ``session_id`` gets: 404 once the server has dropped the session."""
    async with httpx2.AsyncClient(timeout=10, verify=SSL_CONTEXT) as http:
        response = await http.post(
            url,
            headers={
                "mcp-session-id": session_id,
                "mcp-protocol-version": LEGACY,
                "accept": "application/json, text/event-stream",
                "content-type": "application/json",
            },
            content=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
        )
        return response.status_code


# --- one server, one era ---------------------------------------------------------------------------


@dataclass
class Outcome:
    server: str
    era: str
    tool: str = "-"
    idle_mb: float = math.nan  # RSS once started and probed, before the load phase
    load: LoadResult | None = None
    soak: SoakResult | None = None
    failures: list[str] = field(default_factory=list)


async def run(name: str, era: str, args: argparse.Namespace) -> Outcome:
    outcome = Outcome(name, era)
    print(f"## {name} — {era}", flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        base = launch_for(name, Path(scratch))
        launch = Launch(base.script, base.args, env=base.env, cwd=base.cwd)
        # The soak opens thousands of sessions from one address on purpose; the per-address cap (which
        # tests/shared/test_http_hardening.py covers) would refuse them, so it is raised past the soak.
        extra = (
            "--session-idle-timeout",
            str(args.idle_timeout),
            "--max-sessions-per-client",
            str(max(args.short, args.sessions) + 100),
            "--log-level",
            "WARNING",
        )
        try:
            with http_server(launch, extra_args=extra, log_dir=Path(scratch)) as server:
                url, pid = server.url(), server.process.pid
                port = int(server.base_url.rsplit(":", 1)[1])
                if listening_port(pid) != port:  # another program took the port before the server did
                    raise LoadFailure(f"the server is not the process listening on port {port}")
                tool, arguments, note = await choose_tool(url, era, args.call_timeout)
                outcome.tool = f"{tool}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
                print(f"tool: {outcome.tool} — {note}", flush=True)
                outcome.idle_mb = rss_mb(pid)

                result = outcome.load = await load(url, era, tool, arguments, args)
                print(
                    f"load: {args.sessions} sessions × {args.calls} calls = {result.calls} calls in "
                    f"{result.seconds:.1f} s, {result.errors.count} errors, {result.rate:.0f} calls/s, "
                    f"p50 {result.p50_ms:.1f} ms, p99 {result.p99_ms:.1f} ms; RSS {outcome.idle_mb:.0f} MB "
                    f"before, {rss_mb(pid):.0f} MB after",
                    flush=True,
                )
                if result.errors.count:
                    outcome.failures.append(
                        f"load: {result.errors.count} errors, first: {result.errors.first}"
                    )

                soaked = outcome.soak = await soak(url, era, tool, arguments, pid, args)
                ok, growth, limit, base = soaked.levels_off(
                    args.rss_slack_mb, args.rss_slack_pct, warm_up_seconds(args)
                )
                curve = " ".join(f"{mb:.0f}" for _, mb, _ in soaked.samples)
                print(
                    f"soak: {soaked.sessions} short sessions in {soaked.seconds:.1f} s "
                    f"({soaked.rate:.0f}/s, {args.lanes} lanes), {soaked.errors.count} errors",
                    flush=True,
                )
                print(f"RSS MB every {max(1, args.short // args.samples)} sessions: {curve}", flush=True)
                if ok is None:
                    needed = (
                        math.ceil(2 * warm_up_seconds(args) * soaked.rate) + 2 * args.short // args.samples
                    )
                    print(
                        f"levels off: inconclusive — the soak is too short to judge: its second half starts "
                        f"before {warm_up_seconds(args):.0f} s, while the first sessions are still alive by "
                        f"design (2 × idle timeout + 1); at {soaked.rate:.0f} sessions/s run --short {needed} "
                        "or more",
                        flush=True,
                    )
                else:
                    print(
                        f"levels off: {'yes' if ok else 'NO'} — second-half growth {growth:.1f} MB "
                        f"(limit {limit:.1f} MB = max({args.rss_slack_mb:g} MB, {args.rss_slack_pct:g}% of "
                        f"{base:.1f} MB)); settled {soaked.settled_mb:.1f} MB after "
                        f"{settle_seconds(args):.0f} s",
                        flush=True,
                    )
                if soaked.reaped is not None:
                    print(f"reaped: {'yes' if soaked.reaped else 'NO'} — {soaked.reap_detail}", flush=True)
                if soaked.errors.count:
                    outcome.failures.append(
                        f"soak: {soaked.errors.count} errors, first: {soaked.errors.first}"
                    )
                if ok is False:
                    outcome.failures.append(
                        f"soak: RSS grew {growth:.1f} MB over the second half (limit {limit:.1f})"
                    )
                if soaked.reaped is False:
                    outcome.failures.append(f"soak: idle sessions not reaped ({soaked.reap_detail})")
                if server.process.poll() is not None:
                    outcome.failures.append(f"server exited with {server.process.returncode}")
        except Exception as error:  # no usable tool, a server that would not start: this pair fails
            outcome.failures.append(
                f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            )
    for failure in outcome.failures:
        print(f"FAIL: {failure}", flush=True)
    print(flush=True)
    return outcome


def machine() -> str:
    from importlib.metadata import version

    return (
        f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, fastmcp {version('fastmcp')}, "
        f"mcp {version('mcp')}, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


def table(outcomes: list[Outcome], args: argparse.Namespace) -> str:
    rows = [
        "| server | era | tool | load calls | errors | calls/s | p50 ms | p99 ms | short sessions | errors "
        "| sessions/s | RSS MB idle; soak start → peak → end (settled) | 2nd-half growth MB | reaped | verdict |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---|",
    ]
    for o in outcomes:
        cells = [o.server, o.era, f"`{o.tool}`"]
        if o.load:
            cells += [
                str(o.load.calls),
                str(o.load.errors.count),
                f"{o.load.rate:.0f}",
                f"{o.load.p50_ms:.1f}",
                f"{o.load.p99_ms:.1f}",
            ]
        else:
            cells += ["-"] * 5
        if o.soak:
            series = [mb for _, mb, _ in o.soak.samples]
            ok, growth, limit, _ = o.soak.levels_off(
                args.rss_slack_mb, args.rss_slack_pct, warm_up_seconds(args)
            )
            reaped = {None: "n/a", True: "yes", False: "NO"}[o.soak.reaped]
            cells += [
                str(o.soak.sessions),
                str(o.soak.errors.count),
                f"{o.soak.rate:.0f}",
                f"{o.idle_mb:.0f}; {series[0]:.0f} → {max(series):.0f} → {series[-1]:.0f} "
                f"({o.soak.settled_mb:.0f})",
                f"{growth:.1f} (≤ {limit:.1f})" if ok is not None else "too short to judge",
                reaped,
            ]
        else:
            cells += ["-"] * 6
        inconclusive = (
            o.soak is not None
            and o.soak.levels_off(args.rss_slack_mb, args.rss_slack_pct, warm_up_seconds(args))[0] is None
        )
        cells.append(
            "**FAIL**" if o.failures else "inconclusive (soak too short)" if inconclusive else "pass"
        )
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", action="append", help="toy or an installed server (repeatable)")
    parser.add_argument("--era", action="append", choices=ERAS, help="protocol era (repeatable)")
    parser.add_argument("--sessions", type=int, default=50, help="concurrent sessions in the load phase")
    parser.add_argument("--calls", type=int, default=200, help="calls per load session")
    parser.add_argument("--short", type=int, default=10_000, help="short sessions in the soak")
    parser.add_argument("--lanes", type=int, default=4, help="parallel lanes of short sessions")
    parser.add_argument("--samples", type=int, default=20, help="RSS samples over the soak")
    parser.add_argument("--idle-timeout", type=float, default=5.0, help="server's --session-idle-timeout")
    parser.add_argument(
        "--settle-max", type=float, default=60.0, help="longest quiet wait after the soak, in seconds"
    )
    parser.add_argument("--rss-slack-mb", type=float, default=10.0)
    parser.add_argument("--rss-slack-pct", type=float, default=5.0)
    parser.add_argument("--call-timeout", type=float, default=60.0, help="seconds per call")
    parser.add_argument("--phase-timeout", type=float, default=1800.0, help="seconds per load or soak phase")
    args = parser.parse_args()
    if args.short < 2 * args.samples:
        parser.error("--short must be at least twice --samples")

    print(f"# {machine()}", flush=True)
    names = args.server or ["toy", *discover_servers()]
    eras = args.era or list(ERAS)
    started = time.perf_counter()
    outcomes = [await run(name, era, args) for name in names for era in eras]
    print(
        f"# {args.sessions}×{args.calls} calls, {args.short} short sessions, idle timeout "
        f"{args.idle_timeout:g} s, rule: 2nd-half RSS growth ≤ max({args.rss_slack_mb:g} MB, "
        f"{args.rss_slack_pct:g}%); {time.perf_counter() - started:.0f} s in all; 1-min load average "
        f"peaked at {max(LOAD_SEEN):.1f} (this run keeps about 2 busy: more means other work shared the cores)"
    )
    print(table(outcomes, args))
    failed = [o for o in outcomes if o.failures]
    if failed:
        print(f"\nFAILED: {', '.join(f'{o.server} {o.era}' for o in failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
