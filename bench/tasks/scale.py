"""dockyard-tasks: the scale curve. The same calls on 10,000, 100,000 and 1,000,000 tasks (SQLite) and on
100,000 (PostgreSQL), with each call's cost per 10× of data as a ratio.

    uv run python bench/tasks/scale.py [--sizes 10000 100000 1000000] [--postgres 100000] [--repeat 20]

Each size is a database of its own, seeded like bench.py (seed.py: 20 projects, 10 assignees, one
dependency per ten tasks) and driven over stdio by the official SDK client; each call `repeat` times
after 2 warm-ups, varying the task or the assignee where it matters. Reported: median and p95 wall ms per
size, then median(10× more) / median for each step, and the load average when each size was measured
(a 2-core machine shared with other work: compare the ratios, which are measured minutes apart).

To measure the code of another commit, run this script with its server source first on the path, e.g.
``git archive <commit> servers/tasks | tar -x -C /tmp/before`` and
``PYTHONPATH=/tmp/before/servers/tasks/src uv run python bench/tasks/scale.py``: the seeding (migrations)
and the server both come from it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import itertools

from _common import WORK_ENV, serve, use_work_dir, work_dir
from seed import ASSIGNEES, Record, generate

from bench import OURS, SETTLE_SECONDS, postgres_database, sqlite_database, timed, tool

PEOPLE = [a for a in ASSIGNEES if a]
NOTHING = "kubernetes"  # in no title or description of seed.py's words
COMMON = "cache deploy"


def cases(server, records: list[Record], *, again: bool) -> list[tuple[str, Callable[[int], Callable]]]:
    rng = random.Random(1)
    todo = [f"{r.key}-{r.number}" for r in records if r.status == "todo"]
    rng.shuffle(todo)
    if again:  # a database an earlier run measured: its first todo tasks were moved then
        random.Random(time.time_ns()).shuffle(todo)
    every = [f"{r.key}-{r.number}" for r in records]
    return [
        (
            "list_tasks project+status, page 1",
            lambda i: tool(server, "list_tasks", {"project": "P07", "status": "todo"}),
        ),
        (
            "list_tasks assignee+statuses, by priority",
            lambda i: tool(
                server,
                "list_tasks",
                {"assignee": "alice", "statuses": ["todo", "in_progress"], "sort": "priority"},
            ),
        ),
        ("get_task", lambda i: tool(server, "get_task", {"task_id": every[(i * 7919) % len(every)]})),
        ("**next_task**", lambda i: tool(server, "next_task", {"assignee": PEOPLE[i % len(PEOPLE)]})),
        (
            "**next_task in a project**",
            lambda i: tool(
                server, "next_task", {"assignee": PEOPLE[i % len(PEOPLE)], "project": f"P{1 + i % 20:02d}"}
            ),
        ),
        (
            f"**list_tasks text matching nothing** ({NOTHING!r})",
            lambda i: tool(server, "list_tasks", {"text": NOTHING}),
        ),
        (
            f"list_tasks text matching many ({COMMON!r})",
            lambda i: tool(server, "list_tasks", {"text": COMMON}),
        ),
        (
            "summary (unchanged)",
            lambda i: lambda: server.session.read_resource("project://tasks/summary"),
        ),
        (
            "update_task_status todo → in_progress",
            lambda i: tool(server, "update_task_status", {"task_id": todo[i], "new_status": "in_progress"}),
        ),
        (
            "create_task",
            lambda i: tool(
                server, "create_task", {"project": "P03", "title": f"scale task {i}", "labels": ["bench"]}
            ),
        ),
    ]


async def measure(
    url: str, records: list[Record], repeat: int, *, again: bool = False
) -> tuple[dict[str, list[float]], str]:
    """Wall seconds per call, by case, and the load average before → after."""
    before = os.getloadavg()[0]
    walls: dict[str, list[float]] = {}
    async with serve("ours", [OURS, "--database-url", url, "--actor", "bench"]) as server:
        await server.session.call_tool("list_projects", {})
        await asyncio.sleep(SETTLE_SECONDS)
        for name, make in cases(server, records, again=again):
            for i in range(2):
                await make(repeat + i)()
            samples = [await timed(server, make(i)) for i in range(repeat)]
            errors = sum(1 for s in samples if s[3])
            if errors:
                raise SystemExit(f"{name}: {errors} of {repeat} calls failed")
            walls[name] = [s[0] for s in samples]
    return walls, f"{before:.1f} → {os.getloadavg()[0]:.1f}"


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def report(columns: list[tuple[str, dict[str, list[float]], str]]) -> str:
    sqlite = [c for c in columns if c[0].startswith("SQLite")]
    header = ["call", *(f"{label} median / p95 ms" for label, _, _ in columns)]
    header += [f"{b[0].split()[1]} / {a[0].split()[1]}" for a, b in itertools.pairwise(sqlite)]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for name in columns[0][1]:
        cells = [name]
        for _, walls, _ in columns:
            cells.append(f"{statistics.median(walls[name]) * 1000:.1f} / {p95(walls[name]) * 1000:.1f}")
        for a, b in itertools.pairwise(sqlite):
            ratio = statistics.median(b[1][name]) / statistics.median(a[1][name])
            cells.append(f"{ratio:.2f}×")
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Load average (1 min) while measured: " + "; ".join(f"{label} {load}" for label, _, load in columns),
    ]
    return "\n".join(lines)


def shown(count: int) -> str:
    return f"{count // 1_000_000}M" if count >= 1_000_000 else f"{count // 1_000}k"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--postgres", type=int, nargs="*", default=[100_000])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--tag", default="", help="in the SQLite files' names, so two runs do not share them")
    parser.add_argument(
        "--reuse", action="store_true", help="measure the SQLite files an earlier run seeded in --work-dir"
    )
    parser.add_argument(
        "--work-dir", type=Path, help="keep the SQLite files here (default: a temporary folder)"
    )
    args = parser.parse_args()
    if args.reuse and not (args.work_dir or os.environ.get(WORK_ENV)):
        parser.error(
            f"--reuse needs --work-dir (or ${WORK_ENV}): by default the files are removed at the end"
        )
    use_work_dir(args.work_dir)
    work = work_dir()
    columns = []
    for count in args.sizes:
        records = generate(count, 20)
        started = time.perf_counter()
        name = f"tasks-scale{args.tag}-{shown(count)}"
        again = args.reuse and (work / f"{name}.db").exists()
        url = f"sqlite:///{work / f'{name}.db'}" if again else sqlite_database(name, records, 20)
        print(f"seeded SQLite {shown(count)} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        walls, load = await measure(url, records, args.repeat, again=again)
        columns.append((f"SQLite {shown(count)}", walls, load))
        print(report(columns), file=sys.stderr)
    for count in args.postgres:
        records = generate(count, 20)
        started = time.perf_counter()
        url = postgres_database(records, 20)
        print(f"seeded PostgreSQL {shown(count)} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        walls, load = await measure(url, records, args.repeat)
        columns.append((f"PostgreSQL {shown(count)}", walls, load))
    print(report(columns))


if __name__ == "__main__":
    asyncio.run(main())
