"""dockyard-name-origin's batch_predict vs the reference server's one-request-per-name loop, in one run.

    uv run python bench/name-origin/bench.py [--names 1000] [--latency 0.05] [--rounds 3] [--reference-rounds 1]

Both servers run over stdio, driven by the same SDK client, against one loopback fake of nationalize.io
(tests/name_origin/fake_nationalize.py) that adds ``--latency`` to every answer, as a distant API would.
Each round: our server on a fresh (empty) cache answers the names — every page of the reply, so the time
covers all the names, the first call fetching them all — then the same names again (a warm cache). The
reference server (bench/name-origin/reference_server.py) answers them in one call, one GET per name in
sequence: as rebuilt (a fresh client per name), and with one shared client (kinder than the original).
Reported: median wall times, the ratios reference/ours, and the upstream requests each side made, counted
by the fake.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _common import serve

from tests.name_origin.fake_nationalize import FakeNationalize, RunningFake

HERE = Path(__file__).resolve().parent
VENV_BIN = Path(sys.executable).parent
SIDES = {
    "cold": "dockyard batch_predict, empty cache",
    "warm": "dockyard batch_predict, the same names again",
    "reference": "reference: one GET per name in sequence, a client per name (as rebuilt)",
    "reference-shared": "reference loop with one shared client (kinder than the original)",
}


def names_for(count: int) -> list[str]:
    return [f"given{i} family{i}" for i in range(count)]


async def read_all(session, names: list[str]) -> tuple[float, int]:
    """(seconds, MCP calls) to read every name's result, following next_offset."""
    started = time.perf_counter()
    offset, calls, answered = 0, 0, 0
    while offset is not None:
        result = await session.call_tool(
            "batch_predict", {"names": names, "offset": offset}, read_timeout_seconds=600
        )
        assert not result.is_error, result.content
        calls += 1
        answered += len(result.structured_content["results"])
        offset = result.structured_content.get("next_offset")
    assert answered == len(names)
    return time.perf_counter() - started, calls


async def reference_once(
    url: str, names: list[str], fake: FakeNationalize, *, shared: bool
) -> tuple[float, int]:
    env = {"NATIONALIZE_URL": url, "REFERENCE_SHARED_CLIENT": "1" if shared else "0"}
    async with serve("reference", [sys.executable, str(HERE / "reference_server.py")], env=env) as reference:
        before = fake.request_count
        started = time.perf_counter()
        result = await reference.session.call_tool(
            "batch_predict", {"names": names}, read_timeout_seconds=3600
        )
        seconds = time.perf_counter() - started
    assert not result.is_error
    return seconds, fake.request_count - before


async def run(args: argparse.Namespace) -> dict[str, list[tuple[float, int, int]]]:
    """Per side: (seconds, upstream requests, MCP calls) for each run."""
    names = names_for(args.names)
    fake = FakeNationalize(free_limit=10_000_000, latency=args.latency)
    runs: dict[str, list[tuple[float, int, int]]] = {side: [] for side in SIDES}
    with RunningFake(fake) as running, tempfile.TemporaryDirectory() as scratch:
        for number in range(args.rounds):
            cache = Path(scratch) / f"cache-{number}.db"
            command = [
                str(VENV_BIN / "dockyard-name-origin"),
                *("--api-url", running.url, "--cache-url", f"sqlite:///{cache}"),
            ]
            async with serve("dockyard-name-origin", command, env={"XDG_DATA_HOME": scratch}) as ours:
                for side in ("cold", "warm"):
                    before = fake.request_count
                    seconds, calls = await read_all(ours.session, names)
                    runs[side].append((seconds, fake.request_count - before, calls))
            if number < args.reference_rounds:
                for side, shared in (("reference", False), ("reference-shared", True)):
                    seconds, requests = await reference_once(running.url, names, fake, shared=shared)
                    runs[side].append((seconds, requests, 1))
            print(
                f"round {number + 1}: "
                + ", ".join(
                    f"{side} {r[-1][0]:.2f} s / {r[-1][1]} requests" for side, r in runs.items() if r
                ),
                flush=True,
            )
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=1_000)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the fake adds to every answer")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--reference-rounds", type=int, default=1, help="each reference run takes at least names x latency"
    )
    args = parser.parse_args()
    runs = asyncio.run(run(args))
    median = {side: statistics.median(r[0] for r in runs[side]) for side in SIDES if runs[side]}
    print(
        f"\n{args.names:,} distinct names, {args.latency * 1000:.0f} ms added to every upstream answer; "
        f"medians of {args.rounds} run(s) of ours, {args.reference_rounds} of each reference\n"
    )
    print("| | wall time | upstream requests | MCP calls |")
    print("|---|---|---|---|")
    for side, label in SIDES.items():
        if runs[side]:
            requests = statistics.median(r[1] for r in runs[side])
            calls = statistics.median(r[2] for r in runs[side])
            print(f"| {label} | {median[side]:.2f} s | {requests:.0f} | {calls:.0f} |")
    print()
    for reference in ("reference", "reference-shared"):
        if reference in median:
            print(
                f"{reference}/ours: {median[reference] / median['cold']:.1f}x (empty cache), "
                f"{median[reference] / median['warm']:.0f}x (warm cache)"
            )
    print(
        "runs (s): " + "; ".join(f"{side} " + ", ".join(f"{r[0]:.2f}" for r in runs[side]) for side in SIDES)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
