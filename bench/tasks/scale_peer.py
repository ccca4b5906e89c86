"""dockyard-tasks beside task-master-ai as the tracker grows: the same four calls on 10,000 and 100,000
tasks (and 1,000,000 with ``--sizes``), each size a fresh project for both, calls alternating in ABBA order.

    uv run python bench/tasks/scale_peer.py [--sizes 10000 100000] [--repeat 10]

Ours: SQLite, one project (seed.py's generator, the same records the peer gets). The peer: task-master-ai
0.43.1 from npm, its own ``.taskmaster/tasks/tasks.json``, run under ``unshare -n`` with telemetry off
(bench.py's part 2 explains both). Reported per size: median wall ms of each side, peer/ours, and per 10×
of data each side's own growth (median at 10× the tasks / median), which is what a user feels as the
tracker grows. The peer's list answers every matching task at once (it has no pages); ours answers one
bounded page with a cursor, so its list row compares "what the model is handed", not equal work.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import serve, use_work_dir
from seed import ASSIGNEES, generate

from bench import OURS, PEER_VERSION, SETTLE_SECONDS, install_peer, peer_project, sqlite_database, timed, tool

PEOPLE = [a for a in ASSIGNEES if a]


async def measure(count: int, repeat: int) -> dict[str, tuple[list[float], list[float]]]:
    """Wall seconds per call, by case: (ours, peer)."""
    records = generate(count, 1, seed=11)
    script = install_peer()
    url = sqlite_database(f"tasks-peer-{count}", records, 1)
    root = str(peer_project(records))
    peer_command = ["sh", "-c", f"cd '{root}' && exec unshare -n node '{script}'"]
    peer_env = {"TASK_MASTER_TOOLS": "get_tasks,get_task,set_task_status,next_task", "HOME": root}
    todo = [r.number for r in records if r.status == "todo"]
    random.Random(2).shuffle(todo)
    every = [r.number for r in records]
    cases = [
        (
            "list by status (ours: one page of 50; peer: every task)",
            lambda i: tool(ours, "list_tasks", {"status": "todo"}),
            lambda i: tool(peer, "get_tasks", {"projectRoot": root, "status": "pending"}),
        ),
        (
            "get one task",
            lambda i: tool(ours, "get_task", {"task_id": f"P01-{every[(i * 7919) % len(every)]}"}),
            lambda i: tool(
                peer, "get_task", {"projectRoot": root, "id": str(every[(i * 7919) % len(every)])}
            ),
        ),
        (
            "next task",
            lambda i: tool(ours, "next_task", {"assignee": PEOPLE[i % len(PEOPLE)]}),
            lambda i: tool(peer, "next_task", {"projectRoot": root}),
        ),
        (
            "set a status",
            lambda i: tool(
                ours, "update_task_status", {"task_id": f"P01-{todo[i]}", "new_status": "in_progress"}
            ),
            lambda i: tool(
                peer, "set_task_status", {"projectRoot": root, "id": str(todo[i]), "status": "in-progress"}
            ),
        ),
    ]
    walls: dict[str, tuple[list[float], list[float]]] = {}
    async with (
        serve("ours", [OURS, "--database-url", url, "--actor", "bench"]) as ours,
        serve("peer", peer_command, env=peer_env) as peer,
    ):
        await asyncio.sleep(SETTLE_SECONDS)
        for name, mine, theirs in cases:
            for i in range(2):  # warm-ups, on tasks the timed calls do not touch
                await mine(repeat + i)()
                await theirs(repeat + i)()
            times: dict[str, list[float]] = {"ours": [], "peer": []}
            for i in range(repeat):
                order = [("ours", ours, mine), ("peer", peer, theirs)]
                for label, server, make in order if i % 2 == 0 else reversed(order):
                    wall, _cpu, _size, failed = await timed(server, make(i))
                    if failed:
                        raise SystemExit(f"{name}: a {label} call failed at {count:,} tasks")
                    times[label].append(wall)
            walls[name] = (times["ours"], times["peer"])
    return walls


def shown(count: int) -> str:
    return f"{count // 1_000_000}M" if count >= 1_000_000 else f"{count // 1_000}k"


def report(sizes: list[int], results: list[dict[str, tuple[list[float], list[float]]]]) -> str:
    header = ["call"]
    header += [f"{shown(n)}: ours / peer ms (peer/ours)" for n in sizes]
    header += [f"{shown(b)}/{shown(a)}: ours ×, peer ×" for a, b in itertools.pairwise(sizes)]
    lines = [
        f"### dockyard-tasks (SQLite) vs task-master-ai {PEER_VERSION} as the tracker grows",
        "",
        "| " + " | ".join(header) + " |",
        "|---|" + "---:|" * (len(header) - 1),
    ]
    for name in results[0]:
        medians = [(statistics.median(r[name][0]), statistics.median(r[name][1])) for r in results]
        cells = [name]
        cells += [f"{o * 1000:.1f} / {p * 1000:.1f} ({p / o:.1f}×)" for o, p in medians]
        cells += [f"{b[0] / a[0]:.2f}×, {b[1] / a[1]:.2f}×" for a, b in itertools.pairwise(medians)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--work-dir", type=Path, help="keep the databases and the peer's install here")
    args = parser.parse_args()
    use_work_dir(args.work_dir)
    results = []
    for count in args.sizes:
        results.append(await measure(count, args.repeat))
        print(report(args.sizes[: len(results)], results), file=sys.stderr)
    print(report(args.sizes, results))


if __name__ == "__main__":
    asyncio.run(main())
