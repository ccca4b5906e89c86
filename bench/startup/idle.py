"""What idling alone costs a call: the same call in a warm process, sent after pauses of growing length.

    uv run python bench/startup/bench.py --idle-sweep [--only NAME]

Why: issue 16 bounds a tool's first call after ``initialize`` at 2× its warm median, and the bench sends
that first call after a pause (the model's turn). This sweep separates what a warm-up can remove from what
it cannot: each server is started once, left to finish its warm-up, each measured tool is called until
warm, and then the same call is sent again after each pause (``PAUSES``), several times over, in rotation.
An MCP ``ping`` (the SDK's shortest request path, no tool) and a line echoed by a 3-line Python child (no
MCP at all) are measured the same way: what waking a sleeping process costs on this machine.

Nothing here is a first call: every figure is of a process that has run the call many times.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rpc import StdioServer, tool_failed

PAUSES = (0.0, 0.01, 0.05, 0.2, 1.0)  # seconds idle before the measured call
ROUNDS = 7
WARM_CALLS = 20
SETTLE = 3.0  # seconds for a server's warm-up to finish before anything is measured

_ECHO = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line); sys.stdout.flush()"


def _sweep(call) -> dict[float, float]:
    """Median seconds of ``call()`` after each pause, the pauses rotated so none always follows another."""
    for _ in range(WARM_CALLS):
        call()
    samples: dict[float, list[float]] = {pause: [] for pause in PAUSES}
    for round_ in range(ROUNDS):
        order = PAUSES[round_ % len(PAUSES) :] + PAUSES[: round_ % len(PAUSES)]
        for pause in order:
            time.sleep(pause)
            samples[pause].append(call())
    return {pause: statistics.median(values) for pause, values in samples.items()}


def echo_sweep() -> dict[float, float]:
    child = subprocess.Popen(
        [sys.executable, "-c", _ECHO], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
    )
    assert child.stdin is not None and child.stdout is not None

    def call() -> float:
        started = time.perf_counter()
        child.stdin.write(b"x\n")
        child.stdout.readline()
        return time.perf_counter() - started

    try:
        return _sweep(call)
    finally:
        child.kill()
        child.wait()


def server_sweeps(
    subject: Any, env: dict[str, str], cwd: Path, stderr_path: Path
) -> dict[str, dict[float, float]]:
    """``{"ping" | tool: {pause: median seconds}}`` for one spawn of ``subject``."""
    server = StdioServer(subject.command, env=env, cwd=cwd, stderr_path=stderr_path)
    try:
        server.initialize()
        server.notify("notifications/initialized")
        server.request("tools/list", {})
        time.sleep(SETTLE)
        sweeps = {"ping": _sweep(lambda: server.request("ping", {})[1])}
        for tool, arguments in subject.calls:

            def call(tool: str = tool, arguments: dict[str, Any] = arguments) -> float:
                reply, seconds = server.call_tool(tool, arguments)
                if (failure := tool_failed(reply)) is not None:
                    raise RuntimeError(f"{tool} answered an error: {failure}")
                return seconds

            sweeps[tool] = _sweep(call)
        return sweeps
    finally:
        server.close()


def report(rows: list[tuple[str, str, dict[float, float]]]) -> str:
    """A Markdown table: each call's warm median, then after each pause (ms, and × the warm median)."""
    head = " | ".join(f"after {pause * 1000:g} ms" for pause in PAUSES[1:])
    lines = [
        f"| server | call | warm ms | {head} |",
        "|---|---|---:|" + "---:|" * (len(PAUSES) - 1),
    ]
    for server, call, sweep in rows:
        warm = sweep[PAUSES[0]]
        cells = " | ".join(f"{sweep[pause] * 1000:.2f} ({sweep[pause] / warm:.1f}×)" for pause in PAUSES[1:])
        lines.append(f"| {server} | {call} | {warm * 1000:.2f} | {cells} |")
    return "\n".join(lines)
