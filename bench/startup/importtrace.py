"""Which imports each start-up phase pays: ``-X importtime`` of one spawn, split at its protocol replies.

The server runs with ``PYTHONPROFILEIMPORTTIME=1``, which writes one line per import to stderr as the import
finishes. The bench notes how far stderr had got when each reply arrived (initialize, tools/list, the
pause, each tool's first call), so each import lands in the phase that paid for it. Per phase: the total
import time, and the packages that cost the most (the sum of their modules' own times).
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from rpc import StdioServer

_LINE = re.compile(rb"import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)")


def _phase_costs(text: bytes) -> tuple[float, dict[str, float]]:
    """(total import seconds, own seconds per top-level package) of the importtime lines in ``text``."""
    total, per_package = 0.0, defaultdict(float)
    for own, cumulative, indent, module in _LINE.findall(text):
        if not indent:
            total += int(cumulative) / 1e6
        per_package[module.decode().split(".")[0]] += int(own) / 1e6
    return total, per_package


def phase_report(subject: Any, env: dict[str, str], cwd: Path, work: Path, pause: float = 1.0) -> str:
    """A Markdown table of one spawn of ``subject``: each phase's import time and costliest packages."""
    stderr_path = work / f"importtime-{subject.label}.log"
    server = StdioServer(
        subject.command, env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, cwd=cwd, stderr_path=stderr_path
    )
    marks: list[tuple[str, float, int]] = []
    try:
        _, seconds = server.initialize()
        marks.append(("spawn → initialize", seconds, server.stderr_offset()))
        server.notify("notifications/initialized")
        _, seconds = server.request("tools/list", {})
        marks.append(("tools/list", seconds, server.stderr_offset()))
        time.sleep(pause)
        marks.append((f"pause ({pause:.0f} s, warm-up)", pause, server.stderr_offset()))
        for tool, arguments in subject.calls:
            _, seconds = server.call_tool(tool, arguments)
            marks.append((f"first {tool}", seconds, server.stderr_offset()))
    finally:
        server.close()
    text = stderr_path.read_bytes()
    lines = [
        f"#### imports per phase: {subject.label}",
        "",
        "| phase | wall ms (traced) | imports ms | costliest packages (own ms) |",
        "|---|---:|---:|---|",
    ]
    start = 0
    for name, seconds, end in marks:
        total, packages = _phase_costs(text[start:end])
        top = sorted(packages.items(), key=lambda item: -item[1])[:8]
        costly = ", ".join(f"{package} {own * 1000:.0f}" for package, own in top if own >= 0.002) or "—"
        lines.append(f"| {name} | {seconds * 1000:,.0f} | {total * 1000:,.0f} | {costly} |")
        start = end
    return "\n".join(lines) + "\n"
