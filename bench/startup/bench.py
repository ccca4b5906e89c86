"""Start-up, side by side: how soon each server answers, and what its first call of each tool costs.

    uv run python bench/startup/bench.py [--spawns 7] [--warm 7] [--pause-ms 1000] [--only NAME]
                                         [--no-uvx] [--no-http] [--importtime]
    uv run python bench/startup/bench.py --idle-sweep [--only NAME]   # what idling costs a warm call

In one run, in ABBA order (each round runs every case, the next round runs them in reverse, so a burst of
other load hits every server alike), with a raw JSON-RPC client over stdio (no SDK on the client side):

* stdio, for every installed Dockyard server (``dockyard list``) and the reference peers: spawn →
  ``initialize`` reply (written at once after the spawn, as hosts do), then ``tools/list``, then a pause
  (``--pause-ms``, the model's turn before it calls a tool), then the first call of ONE listed tool and
  ``--warm`` more calls of it (each spawn measures one tool's first call, so no tool rides on another's
  warm-up), then the same pause and the same call once more ("warm after the pause": what idling alone
  adds to a call, which a warm-up cannot take off a first one). A second case per server calls its first tool with no pause (the host calls at once).
* ``uvx --from servers/<name>`` and ``uvx --from <peer>==<version>``: spawn → ``initialize``.
* ``dockyard serve all --transport http``: spawn → ``GET /health`` 200, and → the first ``initialize``.

Every figure is a median of ``--spawns`` spawns, with the process tree's CPU time (user + system from
/proc, which other load barely moves) and the 1-minute load average while it was measured; peak memory
is VmHWM after the pause (idle). ``--importtime`` adds, per Dockyard server, the modules each phase
imported (``-X importtime`` split at the initialize reply, tools/list, the pause and each first call).
The raw samples go to ``startup-<time>.json`` in the work folder: a temporary one removed at the end, or
``--work-dir DIR`` (kept; the peers' installs and uv caches there are reused).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import idle  # noqa: E402
from _common import ROOT, use_work_dir, work_dir  # noqa: E402
from _ports import listening_port  # noqa: E402
from importtrace import phase_report  # noqa: E402
from rpc import ServerGone, StdioServer, cpu_seconds, load_average, peak_memory_mb, tool_failed  # noqa: E402
from subjects import Call, Subject, child_env, subjects  # noqa: E402


@dataclass
class Case:
    subject: Subject
    call: Call | None  # the tool whose first call this spawn measures
    pause: float
    samples: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        tool = f" {self.call[0]}" if self.call else ""
        return f"{self.subject.label}{tool}{' (no pause)' if self.pause == 0 and self.call else ''}"


def cases_for(found: list[Subject], pause: float) -> list[Case]:
    cases: list[Case] = []
    for subject in found:
        if subject.kind != "stdio" or not subject.calls:
            cases.append(Case(subject, None, pause))
            continue
        cases += [Case(subject, call, pause) for call in subject.calls]
        cases.append(Case(subject, subject.calls[0], 0.0))
    return cases


def measure_stdio(case: Case, warm: int, stderr_path: Path) -> dict[str, float]:
    load = load_average()
    server = StdioServer(case.subject.command, env=child_env(case.subject), cwd=ROOT, stderr_path=stderr_path)
    try:
        _, initialized = server.initialize()
        sample = {"initialize_s": initialized, "initialize_cpu_s": cpu_seconds(server.pid)}
        server.notify("notifications/initialized")
        _, sample["tools_list_s"] = server.request("tools/list", {})
        # What a host waits for before it can offer the server's tools: the spawn to the tools/list reply.
        sample["listed_s"] = sample["initialize_s"] + sample["tools_list_s"]
        time.sleep(case.pause)
        sample["idle_cpu_s"] = cpu_seconds(server.pid)
        sample["idle_peak_mb"] = peak_memory_mb(server.pid)
        if case.call is not None:
            tool, arguments = case.call
            for index in range(1 + warm):
                before = cpu_seconds(server.pid)
                reply, seconds = server.call_tool(tool, arguments)
                if (failure := tool_failed(reply)) is not None:
                    raise ServerGone(f"{tool} answered an error: {failure}")
                cpu = cpu_seconds(server.pid) - before
                if index == 0:
                    sample.update(first_s=seconds, first_cpu_s=cpu)
                else:
                    sample.setdefault("warm", []).append((seconds, cpu))  # type: ignore[union-attr]
            if case.pause:
                # The same call once more after the same pause, the process warm: what idling alone costs
                # (caches the machine's other work evicted meanwhile, a CPU gone to sleep), which no warm-up
                # can take off a first call.
                time.sleep(case.pause)
                _, sample["rested_s"] = server.call_tool(tool, arguments)
        sample["load"] = (load + load_average()) / 2
        return sample
    finally:
        server.close()


def measure_http(case: Case, stderr_path: Path) -> dict[str, float]:
    load = load_average()
    # Port 0: the OS picks a free port as the server binds it (no other program can take it in between);
    # which one is read from the server's own listening socket while waiting for /health.
    command = [*case.subject.command, "--transport", "http", "--port", "0"]
    with open(stderr_path, "wb") as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr, env=child_env(case.subject)
        )
        try:
            port, health_s = _first_health(started, process)
            sample = {
                "health_s": health_s,
                "health_cpu_s": cpu_seconds(process.pid),
            }
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "dockyard-startup-bench", "version": "1"},
                    },
                }
            )
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            connection.request(
                "POST",
                "/sqlite/mcp",
                body,
                {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
            )
            response = connection.getresponse()
            payload = response.read()
            sample["initialize_s"] = time.perf_counter() - started
            if response.status != 200 or b'"result"' not in payload:
                raise ServerGone(f"initialize over HTTP: {response.status} {payload[:200]!r}")
            connection.close()
            sample["initialize_cpu_s"] = cpu_seconds(process.pid)
            sample["idle_peak_mb"] = peak_memory_mb(process.pid)
            sample["load"] = (load + load_average()) / 2
            return sample
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _first_health(started: float, process: subprocess.Popen) -> tuple[int, float]:
    """(the port ``process`` listens on, seconds from ``started`` to its first /health 200)."""
    port = None
    while time.perf_counter() - started < 120:
        if process.poll() is not None:
            raise ServerGone(f"dockyard serve all exited with {process.returncode}")
        if port is None:
            port = listening_port(process.pid)
            if port is None:
                time.sleep(0.005)
                continue
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/health")
            if connection.getresponse().status == 200:
                return port, time.perf_counter() - started
        except OSError:
            time.sleep(0.005)
    raise ServerGone("no /health within 120 s")


def run_cases(cases: list[Case], args: argparse.Namespace, partial: Path) -> None:
    """Every case once per round, ABBA; the report so far is rewritten to ``partial`` after each round."""
    spawns, warm = args.spawns, args.warm
    stderr_path = work_dir() / "startup-stderr.log"
    # Each uvx launch once, unmeasured: the first builds its cached environment. Each Dockyard server once
    # too, so no column's first sample pays for files the OS has not cached yet.
    primed: set[str] = set()
    for case in cases:
        label = case.subject.label
        first_of_ours = case.subject.kind == "stdio" and label.startswith("dockyard-") and label not in primed
        if case.subject.kind == "launch" or first_of_ours:
            primed.add(label)
            try:
                measure_stdio(case, 0, stderr_path)
            except ServerGone as gone:
                case.errors.append(str(gone))
    for round_ in range(spawns):
        order = cases if round_ % 2 == 0 else list(reversed(cases))
        for case in order:
            if case.errors:
                continue
            try:
                if case.subject.kind == "http":
                    case.samples.append(measure_http(case, stderr_path))
                else:
                    case.samples.append(measure_stdio(case, warm, stderr_path))
            except ServerGone as gone:
                case.errors.append(str(gone))
            print(f"round {round_ + 1}/{spawns}: {case.name}", file=sys.stderr)
        partial.write_text(report(cases, args) + "\n")


def median(samples: list[dict], key: str) -> float | None:
    values = [s[key] for s in samples if key in s]
    return statistics.median(values) if values else None


def warm_median(samples: list[dict], index: int) -> float | None:
    values = [w[index] for s in samples for w in s.get("warm", [])]
    return statistics.median(values) if values else None


def mean(samples: list[dict], key: str) -> float | None:
    """CPU per call is a mean, not a median: /proc counts in 10 ms ticks, so one call reads 0 or 10 ms."""
    values = [s[key] for s in samples if key in s]
    return statistics.fmean(values) if values else None


def warm_cpu_mean(samples: list[dict]) -> float | None:
    values = [w[1] for s in samples for w in s.get("warm", [])]
    return statistics.fmean(values) if values else None


def ms(value: float | None) -> str:
    return "—" if value is None else f"{value * 1000:,.0f}"


def load_range(samples: list[dict]) -> str:
    loads = [s["load"] for s in samples]
    return f"{statistics.median(loads):.1f} ({min(loads):.1f}–{max(loads):.1f})" if loads else "—"


def report(cases: list[Case], args: argparse.Namespace) -> str:
    starts = [c for c in cases if c.call is None or (c.pause and c.call == c.subject.calls[0])]
    by_label = {case.subject.label: case for case in starts}

    def versus(case: Case, key: str) -> str:
        reference = by_label.get(case.subject.versus)
        value = median(case.samples, key)
        base = median(reference.samples, key) if reference else None
        return f"{value / base:.2f}×" if value and base else "—"

    lines = [
        f"Spawns per figure: {args.spawns}; warm calls per spawn: {args.warm}; pause before the first call: "
        f"{args.pause_ms} ms; PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '(unset)')}. "
        "Ratios are against the reference git server launched the same way (stdio, uvx, uvx --compile-bytecode).",
        "",
        "### spawn → initialize",
        "",
        "| server | wall ms | CPU ms | wall × ref | CPU × ref | initialize → tools/list ms | spawn → tools/list ms "
        "(× ref) | idle VmHWM MB | bytecode | load avg (min–max) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for case in starts:
        if case.errors and not case.samples:
            lines.append(f"| {case.subject.label} | failed: {case.errors[0][:120]} | | | | | | | | |")
            continue
        listed = median(case.samples, "listed_s")
        lines.append(
            f"| {case.subject.label} | {ms(median(case.samples, 'initialize_s'))} | "
            f"{ms(median(case.samples, 'initialize_cpu_s'))} | {versus(case, 'initialize_s')} | "
            f"{versus(case, 'initialize_cpu_s')} | {ms(median(case.samples, 'tools_list_s'))} | "
            f"{ms(listed) if listed else '—'} ({versus(case, 'listed_s')}) | "
            f"{median(case.samples, 'idle_peak_mb') or 0:.0f} | {case.subject.bytecode} | {load_range(case.samples)} |"
        )
        if case.subject.kind == "http":
            lines.append(
                f"| ↳ spawn → /health | {ms(median(case.samples, 'health_s'))} | "
                f"{ms(median(case.samples, 'health_cpu_s'))} | | | | | | | {load_range(case.samples)} |"
            )
    lines += [
        "",
        "### first call of each tool after initialize vs its warm median",
        "",
        "| server | tool | first ms | warm ms | first ÷ warm | warm after the pause ms | first CPU ms (mean) | "
        "warm CPU ms (mean) | load avg (min–max) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for case in cases:
        if case.call is None:
            continue
        tool = case.call[0] + (" (no pause)" if case.pause == 0 else "")
        if case.errors and not case.samples:
            lines.append(f"| {case.subject.label} | {tool} | failed: {case.errors[0][:120]} | | | | | | |")
            continue
        first, warm = median(case.samples, "first_s"), warm_median(case.samples, 0)
        ratio = f"{first / warm:.1f}×" if first and warm else "—"
        rested = median(case.samples, "rested_s")
        lines.append(
            f"| {case.subject.label} | {tool} | {(first or 0) * 1000:.1f} | {(warm or 0) * 1000:.1f} | {ratio} | "
            f"{f'{rested * 1000:.1f}' if rested else '—'} | "
            f"{(mean(case.samples, 'first_cpu_s') or 0) * 1000:.0f} | {(warm_cpu_mean(case.samples) or 0) * 1000:.1f} | "
            f"{load_range(case.samples)} |"
        )
    failures = [f"- {case.name}: {' '.join(error.split())[:300]}" for case in cases for error in case.errors]
    if failures:
        lines += ["", "Failures:", *failures]
    return "\n".join(lines)


def loopback_fake_nationalize() -> tuple[str | None, subprocess.Popen | None]:
    """The tests' loopback fake of nationalize.io in a process of its own, when this checkout has it."""
    if not (ROOT / "tests" / "name_origin" / "fake_nationalize.py").exists():
        return None, None
    fake = subprocess.Popen(
        [sys.executable, "-m", "tests.name_origin.fake_nationalize", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    line = fake.stdout.readline() if fake.stdout else ""  # "fake nationalize.io on http://127.0.0.1:PORT"
    return (line.split()[-1] if "http://" in line else None), fake


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--spawns", type=int, default=7, help="spawns per figure (medians)")
    parser.add_argument("--warm", type=int, default=7, help="calls after the first, per spawn")
    parser.add_argument(
        "--pause-ms", type=int, default=1000, help="pause between tools/list and the first call"
    )
    parser.add_argument("--only", action="append", help="only subjects whose label contains this")
    parser.add_argument("--no-uvx", action="store_true", help="skip the uvx and uv run launches")
    parser.add_argument("--no-http", action="store_true", help="skip dockyard serve all over HTTP")
    parser.add_argument("--importtime", action="store_true", help="also trace each phase's imports")
    parser.add_argument(
        "--idle-sweep",
        action="store_true",
        help="instead: each warm call after growing pauses (idle.py), beside a ping and a bare echo",
    )
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also run the Dockyard servers from this revision's sources (git archive)",
    )
    parser.add_argument("--work-dir", type=Path, help="keep generated data, peers and raw samples here")
    args = parser.parse_args()
    use_work_dir(args.work_dir)
    fake_url, fake = loopback_fake_nationalize()
    try:
        run(args, fake_url)
    finally:
        if fake is not None:
            fake.terminate()
            fake.wait()


def run(args: argparse.Namespace, fake_url: str | None) -> None:
    found = subjects(args, fake_url)
    if args.idle_sweep:
        run_idle_sweep(found)
        return
    if args.importtime:
        for subject in found:
            if subject.kind == "stdio" and subject.label.startswith("dockyard-"):
                print(phase_report(subject, child_env(subject), ROOT, work_dir()), flush=True)
    cases = cases_for(found, args.pause_ms / 1000)
    started = time.strftime("%Y-%m-%dT%H-%M-%S")
    run_cases(cases, args, work_dir() / f"startup-{started}.md")
    raw = {case.name: {"samples": case.samples, "errors": case.errors} for case in cases}
    (work_dir() / f"startup-{started}.json").write_text(json.dumps(raw, indent=1))
    print(report(cases, args))


def run_idle_sweep(found: list[Subject]) -> None:
    rows = [("python -c (echo a line)", "line", idle.echo_sweep())]
    for subject in found:
        if subject.kind != "stdio" or not subject.calls or "@" in subject.label:
            continue
        print(f"idle sweep: {subject.label}", file=sys.stderr)
        sweeps = idle.server_sweeps(subject, child_env(subject), ROOT, work_dir() / "startup-stderr.log")
        rows += [(subject.label, call, sweep) for call, sweep in sweeps.items()]
    print(f"load average {load_average():.1f}\n")
    print(idle.report(rows))


if __name__ == "__main__":
    main()
