"""Run the official MCP conformance suite against every Dockyard server over Streamable HTTP.

    uv run python tests/interop/conformance.py [--server NAME ...]

Each installed server (and the toy server the shared tests use) is started on its defaults on a free
loopback port; `@modelcontextprotocol/conformance` 0.1.16 runs its active server suite against it with
tests/interop/conformance-expected-failures.yml as the baseline: the suite itself fails the run on an
unexpected failure and on an expected failure that now passes. Exits non-zero if any server fails.

Needs npx. The suite runs on the node on PATH when it is Node 22 or newer (tests/interop/prepare.sh installs
one from PyPI when the machine has none); with an older node, npx fetches Node 22 (`-p node@22`).

What a pass does not show: the scenarios `tools-call-simple-text` and `tools-call-error` call the fixture
tools `test_simple_text` and `test_error_handling`, which no Dockyard server has. They pass only because the
server answers an unknown tool with an error result (`isError: true`, "Unknown tool: ..." as text): the first
checks only that the result has a text content, the second only that it is an error with text. So they
show the shape of an error result, not a real tool's text or error. Real text and error results are checked
by pytest: tests/shared/test_errors.py (a problem's four parts, no traceback, schema errors, unknown tools)
and each server's tests (tests/<server>/test_tools.py, tests/<server>/test_safety.py).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dockyard_shared.cli import discover_servers
from tests.harness import http_server
from tests.interop.conftest import launch_for

SUITE_PACKAGE = "@modelcontextprotocol/conformance@0.1.16"
NODE_MIN_MAJOR = 22
BASELINE = Path(__file__).with_name("conformance-expected-failures.yml")
# Scenarios that pass against any server that reports an unknown tool as an error result (see the docstring).
VACUOUS = {
    "tools-call-simple-text": "calls test_simple_text",
    "tools-call-error": "calls test_error_handling",
}


def node_major() -> int:
    """The major version of the node on PATH, or 0 if there is none."""
    node = shutil.which("node")
    if node is None:
        return 0
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout
        return int(out.strip().lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.SubprocessError):
        return 0


def suite_command() -> list[str]:
    """npx running the suite: on the node on PATH if it is recent enough, else on Node 22 fetched by npx."""
    node = [] if node_major() >= NODE_MIN_MAJOR else ["-p", "node@22"]
    return ["npx", "-y", *node, "-p", SUITE_PACKAGE, "--", "conformance", "server"]


def annotate(line: str) -> str:
    """A line of the suite's summary, with the vacuous passes marked. Its total is reworded so that it does not
    read as a test runner's closing "N passed, N failed" line (it counts the baseline's expected failures)."""
    if line.startswith("Total: "):
        return "suite total (expected failures included): " + line.removeprefix("Total: ")
    for scenario in VACUOUS:
        if f" {scenario}: " in line:
            return line + "   (unknown tool answered with an error result: see the note at the end)"
    return line


def run(name: str, suite: list[str], data_dir: Path, log_dir: Path) -> bool:
    print(f"\n##### {name} #####", flush=True)
    with http_server(launch_for(name, data_dir), log_dir=log_dir) as server:
        result = subprocess.run(
            [*suite, "--url", server.url(), "--expected-failures", str(BASELINE)],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false"},
        )
    summary = (
        result.stdout[result.stdout.find("=== SUMMARY ===") :]
        if "=== SUMMARY ===" in result.stdout
        else result.stdout[-3000:]
    )
    print("\n".join(annotate(line) for line in summary.strip().splitlines()))
    if result.returncode != 0:
        print(result.stderr[-2000:], file=sys.stderr)
    print(f"##### {name}: {'passed' if result.returncode == 0 else 'FAILED'} #####", flush=True)
    return result.returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--server", action="append", help="only these servers (default: every installed one and the toy)"
    )
    args = parser.parse_args()
    if shutil.which("npx") is None:
        print(
            "conformance: npx is not installed: run tests/interop/prepare.sh (it installs Node.js from PyPI "
            'if needed, then: export PATH="$PWD/.ci/.tools/path:$PATH") or put Node.js 22+ on PATH',
            file=sys.stderr,
        )
        return 2
    suite = suite_command()
    print("conformance suite: " + " ".join(suite), flush=True)
    names = args.server or ["toy", *discover_servers()]
    with tempfile.TemporaryDirectory() as scratch:
        data_dir, log_dir = Path(scratch, "data"), Path(scratch, "logs")
        data_dir.mkdir()
        log_dir.mkdir()
        results = {name: run(name, suite, data_dir, log_dir) for name in names}
    print(
        "\nnote: "
        + "; ".join(f"{scenario} {why}" for scenario, why in VACUOUS.items())
        + ", fixture tools no Dockyard server has: they pass because an unknown tool is answered with an"
        " error result, which is not a test of real results (pytest checks those: tests/shared/test_errors.py"
        " and each server's tests)"
    )
    print("conformance: " + ", ".join(f"{n} {'ok' if ok else 'FAILED'}" for n, ok in results.items()))
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
