"""Run the official MCP conformance suite against every Dockyard server over Streamable HTTP.

    uv run python tests/interop/conformance.py [--server NAME ...]

Each installed server (and the toy server the shared tests use) is started on its defaults on a free
loopback port; `@modelcontextprotocol/conformance` 0.1.16 (Node 22 through npx) runs its active server suite
against it with tests/interop/conformance-expected-failures.yml as the baseline: the suite itself fails the
run on an unexpected failure and on an expected failure that now passes. Exits non-zero if any server fails.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dockyard_shared.cli import discover_servers
from tests.harness import http_server
from tests.interop.conftest import launch_for

SUITE = [
    "npx",
    "-y",
    "-p",
    "node@22",
    "-p",
    "@modelcontextprotocol/conformance@0.1.16",
    "--",
    "conformance",
    "server",
]
BASELINE = Path(__file__).with_name("conformance-expected-failures.yml")


def run(name: str, data_dir: Path, log_dir: Path) -> bool:
    print(f"\n##### {name} #####", flush=True)
    with http_server(launch_for(name, data_dir), log_dir=log_dir) as server:
        result = subprocess.run(
            [*SUITE, "--url", server.url(), "--expected-failures", str(BASELINE)],
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
    print(summary.strip())
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
    names = args.server or ["toy", *discover_servers()]
    with tempfile.TemporaryDirectory() as scratch:
        data_dir, log_dir = Path(scratch, "data"), Path(scratch, "logs")
        data_dir.mkdir()
        log_dir.mkdir()
        results = {name: run(name, data_dir, log_dir) for name in names}
    print("\nconformance: " + ", ".join(f"{n} {'ok' if ok else 'FAILED'}" for n, ok in results.items()))
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
