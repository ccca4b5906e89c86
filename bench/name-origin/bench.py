"""dockyard-name-origin's batch_predict vs the reference server's one-request-per-name loop, in one run.

    uv run python bench/name-origin/bench.py [--names 1000] [--latency 0.05] [--rounds 3]

Both servers run over stdio, driven by the same SDK client, against one loopback fake of nationalize.io
(tests/name_origin/fake_nationalize.py) that adds ``--latency`` to every answer, as a distant API would.
Each round: our server on a fresh (empty) cache answers the names (every page of the reply: the first call
fetches all of them, the rest come from the cache), then the same names again (a warm cache); the reference
server (bench/name-origin/reference_server.py) answers them once, one GET per name in sequence. Reported:
median wall time, the ratio reference/ours, and the upstream requests each side made (counted by the fake).
"""

from __future__ import annotations

import argparse
import asyncio
import json
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


def names_for(count: int) -> list[str]:
    return [f"given{i} family{i}" for i in range(count)]


async def ours_once(session, names: list[str]) -> tuple[float, int, int]:
    """(seconds for every page, calls, names answered) for one full read of ``names``."""
    started = time.perf_counter()
    offset, calls, answered = 0, 0, 0
    while offset is not None:
        result = await session.call_tool(
            "batch_predict", {"names": names, "offset": offset}, read_timeout_seconds=600
        )
        assert not result.is_error, result.content
        data = result.structured_content
        calls += 1
        answered += len(data["results"])
        offset = data.get("next_offset")
    return time.perf_counter() - started, calls, answered


async def run(args: argparse.Namespace) -> dict:
    names = names_for(args.names)
    fake = FakeNationalize(free_limit=10_000_000, latency=args.latency)
    figures: dict[str, list] = {
        "cold": [],
        "warm": [],
        "reference": [],
        "cold_requests": [],
        "warm_requests": [],
        "reference_requests": [],
        "pages": [],
    }
    with RunningFake(fake) as running, tempfile.TemporaryDirectory() as scratch:
        for round_number in range(args.rounds):
            cache = Path(scratch) / f"cache-{round_number}.db"
            command = [
                str(VENV_BIN / "dockyard-name-origin"),
                "--api-url",
                running.url,
                "--cache-url",
                f"sqlite:///{cache}",
            ]
            async with serve("dockyard-name-origin", command, env={"XDG_DATA_HOME": scratch}) as ours:
                before = fake.request_count
                seconds, calls, answered = await ours_once(ours.session, names)
                assert answered == len(names)
                figures["cold"].append(seconds)
                figures["pages"].append(calls)
                figures["cold_requests"].append(fake.request_count - before)
                before = fake.request_count
                seconds, _, _ = await ours_once(ours.session, names)
                figures["warm"].append(seconds)
                figures["warm_requests"].append(fake.request_count - before)
            if round_number < args.reference_rounds:
                command = [sys.executable, str(HERE / "reference_server.py")]
                async with serve("reference", command, env={"NATIONALIZE_URL": running.url}) as reference:
                    before = fake.request_count
                    started = time.perf_counter()
                    result = await reference.session.call_tool(
                        "batch_predict", {"names": names}, read_timeout_seconds=3600
                    )
                    figures["reference"].append(time.perf_counter() - started)
                    assert not result.is_error
                    figures["reference_requests"].append(fake.request_count - before)
            print(
                f"round {round_number + 1}: " + json.dumps({k: v[-1] for k, v in figures.items() if v}),
                flush=True,
            )
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=1_000)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the fake adds to every answer")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--reference-rounds", type=int, default=1, help="the reference takes names x latency each"
    )
    args = parser.parse_args()
    figures = asyncio.run(run(args))
    cold, warm, reference = (statistics.median(figures[k]) for k in ("cold", "warm", "reference"))
    print(
        f"\n{args.names:,} distinct names, {args.latency * 1000:.0f} ms added per upstream answer, {args.rounds} round(s) "
        f"(reference: {args.reference_rounds}); medians\n"
    )
    print("| | wall time | upstream requests | MCP calls |")
    print("|---|---|---|---|")
    print(
        f"| reference: one GET per name, in sequence | {reference:.2f} s | {statistics.median(figures['reference_requests']):.0f} | 1 |"
    )
    print(
        f"| dockyard batch_predict, empty cache | {cold:.2f} s | {statistics.median(figures['cold_requests']):.0f} | {statistics.median(figures['pages']):.0f} (pages) |"
    )
    print(
        f"| dockyard batch_predict, same names again | {warm:.2f} s | {statistics.median(figures['warm_requests']):.0f} | {statistics.median(figures['pages']):.0f} (pages) |"
    )
    print(
        f"\nratio reference/ours: {reference / cold:.1f}x (empty cache), {reference / warm:.0f}x (warm cache)"
    )
    print(
        f"runs: cold {', '.join(f'{s:.2f}' for s in figures['cold'])} s; warm {', '.join(f'{s:.2f}' for s in figures['warm'])} s; "
        f"reference {', '.join(f'{s:.1f}' for s in figures['reference'])} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
