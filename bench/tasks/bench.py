"""dockyard-tasks: per-call latency on 100,000 tasks (SQLite and PostgreSQL), then side by side with
task-master-ai on the same 10,000 generated tasks.

    uv run python bench/tasks/bench.py [--tasks 100000] [--projects 20] [--repeat 30]
                                       [--backend sqlite --backend postgresql] [--peer-tasks 10000] [--no-peer]

Part 1 drives dockyard-tasks alone over stdio (the official SDK's ClientSession) and reports the median
wall time, server CPU time and reply size per call. Part 2 runs dockyard-tasks and task-master-ai 0.43.1
(installed from npm into the run's work folder, run with `unshare -n`: no network at all, and anonymous telemetry
off in its config) at once on the same 10,000 tasks, calls alternating in ABBA order.

PostgreSQL: $DOCKYARD_BENCH_POSTGRES_URL, else postgresql://postgres@127.0.0.1:5432/test, in a schema of
its own (bench_tasks, dropped and recreated each run).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg
from _common import ROOT, Server, ratio_interval, serve, work_dir
from seed import Record, generate, load_into
from sqlalchemy.engine import make_url

OURS = str(ROOT / ".venv" / "bin" / "dockyard-tasks")
PEER_VERSION = "0.43.1"
PEER_STATUS = {
    "todo": "pending",
    "in_progress": "in-progress",
    "blocked": "blocked",
    "done": "done",
    "cancelled": "cancelled",
}
PEER_PRIORITY = ["high", "high", "medium", "low"]
# Seconds left to a server after it answers its first requests, before anything is timed: the shared
# warm-up (deferred imports, a full garbage collection) runs in that gap and would otherwise land in the
# first case's calls (they showed ~10 ms of server CPU where the next case showed 5).
SETTLE_SECONDS = 3.0


# -- databases ----------------------------------------------------------------------------------------


def sqlite_database(name: str, records: list[Record], projects: int) -> str:
    return seed_sqlite(work_dir() / f"{name}.db", records, projects)


def seed_sqlite(path: Path, records: list[Record], projects: int) -> str:
    """A fresh SQLite database at ``path`` holding ``records``; its URL."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{path}"
    load_into(url, records, projects)
    return url


def postgres_database(records: list[Record], projects: int) -> str:
    base = os.environ.get("DOCKYARD_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
    libpq = make_url(base).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(libpq, autocommit=True) as connection:
        connection.execute("DROP SCHEMA IF EXISTS bench_tasks CASCADE")
        connection.execute("CREATE SCHEMA bench_tasks")
    url = (
        make_url(base)
        .update_query_dict({"options": "-csearch_path=bench_tasks"})
        .render_as_string(hide_password=False)
    )
    load_into(url, records, projects)
    with psycopg.connect(libpq, autocommit=True) as connection:
        # What autovacuum does after a bulk load: statistics, and the visibility map index-only scans need.
        tables = (
            "projects",
            "tasks",
            "task_labels",
            "task_dependencies",
            "comments",
            "activity",
            "feed",
            "task_counts",
            "task_due_counts",
        )
        connection.execute("VACUUM ANALYZE " + ", ".join(f"bench_tasks.{table}" for table in tables))
    return url


# -- timing -------------------------------------------------------------------------------------------


async def timed(server: Server, work: Callable) -> tuple[float, float, int, bool]:
    """(wall s, server CPU s, reply bytes, is_error) of one awaited call."""
    gc.collect()
    cpu = server.cpu_seconds()
    started = time.perf_counter()
    result = await work()
    elapsed = time.perf_counter() - started
    if isinstance(result, int):  # a measurement of several calls reports their total reply size
        return elapsed, server.cpu_seconds() - cpu, result, False
    size = len(json.dumps(result.model_dump(mode="json", exclude_none=True)))
    return elapsed, server.cpu_seconds() - cpu, size, bool(getattr(result, "is_error", False))


def tool(server: Server, name: str, arguments: dict):
    return lambda: server.session.call_tool(name, arguments)


def row(name: str, samples: list[tuple[float, float, int, bool]]) -> str:
    walls = [s[0] for s in samples]
    errors = sum(1 for s in samples if s[3])
    return (
        f"| {name} | {statistics.median(walls) * 1000:.1f} | {statistics.mean(s[1] for s in samples) * 1000:.1f} | "
        f"{statistics.median(s[2] for s in samples):,.0f} | {errors} |"
    )


async def part_one(url: str, label: str, records: list[Record], repeat: int) -> str:
    rng = random.Random(1)
    todo = [f"{r.key}-{r.number}" for r in records if r.status == "todo"]
    rng.shuffle(todo)
    every = [f"{r.key}-{r.number}" for r in records]
    lines = [
        f"### {label}: {len(records):,} tasks",
        "",
        "| call | median ms | server CPU ms | reply bytes | errors |",
        "|---|---:|---:|---:|---:|",
    ]
    keys = sorted({r.key for r in records})
    # P07 and P03 on the default 20 projects (the figures of earlier runs); a smaller seed has fewer
    # projects, and a call naming one it lacks is answered with an error, which has no structured content.
    paged = "P07" if "P07" in keys else keys[-1]
    created = "P03" if "P03" in keys else keys[0]
    async with serve("ours", [OURS, "--database-url", url, "--actor", "bench"]) as server:
        first = await server.session.call_tool("list_tasks", {"project": paged, "status": "todo"})
        await asyncio.sleep(SETTLE_SECONDS)
        if first.is_error or first.structured_content is None:
            raise SystemExit(
                f"list_tasks on {paged} failed: {first.content[0].text if first.content else first}"
            )
        cursor = first.structured_content.get("next_cursor")
        if not cursor:
            raise SystemExit(f"{paged} has too few todo tasks for a second page: use more --tasks")
        if len(todo) < 2 * repeat + 2:
            raise SystemExit(
                f"{len(todo)} todo tasks, {2 * repeat + 2} needed: use more --tasks or less --repeat"
            )
        cases: list[tuple[str, Callable[[int], Callable]]] = [
            (
                "list_tasks project+status, page 1 (50 rows)",
                lambda i: tool(server, "list_tasks", {"project": paged, "status": "todo"}),
            ),
            (
                "list_tasks project+status, page 2 (cursor)",
                lambda i: tool(server, "list_tasks", {"project": paged, "status": "todo", "cursor": cursor}),
            ),
            (
                "list_tasks assignee+statuses, by priority",
                lambda i: tool(
                    server,
                    "list_tasks",
                    {"assignee": "alice", "statuses": ["todo", "in_progress"], "sort": "priority"},
                ),
            ),
            (
                "list_tasks label+due_before, by due, full rows",
                lambda i: tool(
                    server,
                    "list_tasks",
                    {"label": "bug", "due_before": "2026-03-01", "sort": "due", "fields": "full"},
                ),
            ),
            (
                "list_tasks text search (scans titles and descriptions)",
                lambda i: tool(server, "list_tasks", {"text": "cache deploy"}),
            ),
            ("get_task", lambda i: tool(server, "get_task", {"task_id": every[(i * 7919) % len(every)]})),
            (
                "update_task_status todo → in_progress",
                lambda i: tool(
                    server, "update_task_status", {"task_id": todo[i], "new_status": "in_progress"}
                ),
            ),
            (
                "create_task",
                lambda i: tool(
                    server,
                    "create_task",
                    {"project": created, "title": f"bench task {i}", "labels": ["bench"]},
                ),
            ),
            (
                "read project://tasks/summary (unchanged since last read)",
                lambda i: lambda: server.session.read_resource("project://tasks/summary"),
            ),
        ]
        for name, make in cases:
            for i in range(2):  # warm-up
                await make(repeat + i)()
            lines.append(row(name, [await timed(server, make(i)) for i in range(repeat)]))
        # The summary right after a write: its cache (kept per change-feed revision) cannot answer.
        samples = []
        for i in range(repeat):
            await server.session.call_tool(
                "update_task_status", {"task_id": todo[repeat + 2 + i], "new_status": "in_progress"}
            )
            samples.append(
                await timed(server, lambda: server.session.read_resource("project://tasks/summary"))
            )
        lines.append(row("read project://tasks/summary right after a write (recomputed)", samples))
        peak = server.peak_rss_mb()
    lines += ["", f"Peak server memory (VmHWM): {peak:.0f} MB" if peak else ""]
    return "\n".join(lines)


# -- part 2: against task-master-ai -------------------------------------------------------------------


def install_peer(folder: Path | None = None) -> Path:
    """task-master-ai installed from npm into ``folder`` (default: the work folder's taskmaster/); its MCP
    server's script."""
    folder = folder or work_dir() / "taskmaster"
    script = folder / "node_modules" / "task-master-ai" / "dist" / "mcp-server.js"
    if script.exists():
        return script
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", f"task-master-ai@{PEER_VERSION}"],
        cwd=folder,
        check=True,
        stdout=sys.stderr,  # npm's summary is not part of the report
    )
    return script


def peer_project(records: list[Record], project: Path | None = None) -> Path:
    """task-master's own layout: .taskmaster/tasks/tasks.json, telemetry off in .taskmaster/config.json."""
    project = project or work_dir() / "taskmaster-project"
    shutil.rmtree(project, ignore_errors=True)
    (project / ".taskmaster" / "tasks").mkdir(parents=True)
    config = {"global": {"anonymousTelemetry": False, "logLevel": "error"}}
    (project / ".taskmaster" / "config.json").write_text(json.dumps(config))
    tasks = [
        {
            "id": r.number,
            "title": r.title,
            "description": r.description,
            "details": "",
            "testStrategy": "",
            "status": PEER_STATUS[r.status],
            "priority": PEER_PRIORITY[r.priority],
            "dependencies": [r.blocked_by] if r.blocked_by else [],
            "subtasks": [],
        }
        for r in records
    ]
    stamp = "2026-01-01T00:00:00.000Z"
    document = {
        "master": {"tasks": tasks, "metadata": {"created": stamp, "updated": stamp, "description": "bench"}}
    }
    (project / ".taskmaster" / "tasks" / "tasks.json").write_text(json.dumps(document, indent=2))
    return project


async def part_two(records: list[Record], repeat: int) -> str:
    script = install_peer()
    url = sqlite_database("tasks-peer-10k", records, 1)
    project = peer_project(records)
    root = str(project)
    peer_command = ["sh", "-c", f"cd '{root}' && exec unshare -n node '{script}'"]
    peer_env = {"TASK_MASTER_TOOLS": "get_tasks,get_task,set_task_status", "HOME": root}
    rng = random.Random(2)
    todo = [r.number for r in records if r.status == "todo"]
    rng.shuffle(todo)
    lines = [
        f"### dockyard-tasks (SQLite) vs task-master-ai {PEER_VERSION}: {len(records):,} tasks",
        "",
        "| call | ours ms | peer ms | peer/ours (95% CI) | ours CPU ms | peer CPU ms | ours bytes | peer bytes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    async with (
        serve("ours", [OURS, "--database-url", url, "--actor", "bench"]) as ours,
        serve("peer", peer_command, env=peer_env) as peer,
    ):
        await asyncio.sleep(SETTLE_SECONDS)

        async def all_pages() -> int:
            """Every todo task, page after page (200 a page): the same information the peer sends at once."""
            arguments: dict = {"status": "todo", "limit": 200}
            total = 0
            while True:
                result = await ours.session.call_tool("list_tasks", arguments)
                total += len(json.dumps(result.model_dump(mode="json", exclude_none=True)))
                cursor = result.structured_content.get("next_cursor")
                if not cursor:
                    return total
                arguments = {**arguments, "cursor": cursor}

        cases = [
            (
                "list by status (ours: one bounded page of 50)",
                lambda i: tool(ours, "list_tasks", {"status": "todo"}),
                lambda i: tool(peer, "get_tasks", {"projectRoot": root, "status": "pending"}),
            ),
            (
                "list by status, every task (ours: all pages of 200)",
                lambda i: all_pages,
                lambda i: tool(peer, "get_tasks", {"projectRoot": root, "status": "pending"}),
            ),
            (
                "get one task",
                lambda i: tool(ours, "get_task", {"task_id": f"P01-{todo[i]}"}),
                lambda i: tool(peer, "get_task", {"projectRoot": root, "id": str(todo[i])}),
            ),
            (
                "set a status",
                lambda i: tool(
                    ours,
                    "update_task_status",
                    {"task_id": f"P01-{todo[2 * repeat + i]}", "new_status": "in_progress"},
                ),
                lambda i: tool(
                    peer,
                    "set_task_status",
                    {"projectRoot": root, "id": str(todo[2 * repeat + i]), "status": "in-progress"},
                ),
            ),
        ]
        for name, mine, theirs in cases:
            times: dict[str, list] = {"ours": [], "peer": []}
            for i in range(2):
                await mine(repeat + i)()
                await theirs(repeat + i)()
            for i in range(repeat):
                order = [("ours", ours, mine), ("peer", peer, theirs)]
                for label, server, make in order if i % 2 == 0 else reversed(order):
                    times[label].append(await timed(server, make(i)))
            o, p = times["ours"], times["peer"]
            om, pm = statistics.median(s[0] for s in o), statistics.median(s[0] for s in p)
            low, high = ratio_interval([s[0] for s in o], [s[0] for s in p])
            errors = sum(s[3] for s in o + p)
            lines.append(
                f"| {name} | {om * 1000:.1f} | {pm * 1000:.1f} | {pm / om:.1f}× ({low:.1f}–{high:.1f}) | "
                f"{statistics.mean(s[1] for s in o) * 1000:.1f} | {statistics.mean(s[1] for s in p) * 1000:.1f} | "
                f"{statistics.median(s[2] for s in o):,.0f} | {statistics.median(s[2] for s in p):,.0f} |"
                + (f" {errors} errors" if errors else "")
            )
        memory = (
            f"Peak server memory (VmHWM): ours {ours.peak_rss_mb():.0f} MB, peer {peer.peak_rss_mb():.0f} MB"
        )
    return "\n".join([*lines, "", memory])


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--projects", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--backend", action="append", choices=["sqlite", "postgresql"])
    parser.add_argument("--peer-tasks", type=int, default=10_000)
    parser.add_argument("--no-peer", action="store_true")
    args = parser.parse_args()
    records = generate(args.tasks, args.projects)
    sections = []
    for backend in args.backend or ["sqlite", "postgresql"]:
        started = time.perf_counter()
        url = (
            sqlite_database("tasks-100k", records, args.projects)
            if backend == "sqlite"
            else postgres_database(records, args.projects)
        )
        print(f"seeded {backend} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        sections.append(await part_one(url, f"dockyard-tasks on {backend}", records, args.repeat))
    if not args.no_peer:
        sections.append(await part_two(generate(args.peer_tasks, 1, seed=11), args.repeat))
    print("\n\n".join(sections))


if __name__ == "__main__":
    asyncio.run(main())
