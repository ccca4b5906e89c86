"""dockyard-sqlite vs the reference mcp-server-sqlite on a 1,000,000-row database, side by side.

    uv run python bench/sqlite/bench.py [--rows 1000000] [--repeat 10]
    uv run python bench/sqlite/bench.py --tables 2000      # list_tables on a database of many tables

The peer needs mcp<2, so it gets its own virtual environment in the run's work folder (a temporary folder, or --work-dir). Both servers are driven
over stdio by the same SDK client; the report gives median latency per call, the ratio peer/ours (above 1
means we are faster), response bytes and each server's peak memory.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import (
    CLIENTS,
    ROOT,
    Case,
    client_label,
    peer_venv,
    report,
    run_side_by_side,
    selected,
    use_work_dir,
    work_dir,
)

AGGREGATE = "SELECT kind, count(*), sum(amount), avg(amount) FROM events GROUP BY kind"


def build_database(path: Path, rows: int) -> Path:
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.unlink(missing_ok=True)
    connection = sqlite3.connect(temporary)
    connection.executescript(
        f"""
        CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT NOT NULL);
        CREATE TABLE events (
            id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id), kind TEXT NOT NULL,
            amount REAL NOT NULL, created TEXT NOT NULL);
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
        INSERT INTO users SELECT i, 'user ' || i, substr('DEFRUSJPBRIN', 1 + (i % 6) * 2, 2) FROM n;
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})
        INSERT INTO events SELECT i, 1 + (i * 7919) % 10000, CASE i % 3 WHEN 0 THEN 'view' WHEN 1 THEN 'click' ELSE 'buy' END,
               (i % 1000) / 10.0, datetime(1700000000 + i * 37, 'unixepoch') FROM n;
        CREATE INDEX events_by_user ON events(user_id);
        """
    )
    connection.commit()
    connection.close()
    temporary.rename(path)
    return path


def build_many_tables(path: Path, tables: int, rows: int = 200) -> Path:
    """``tables`` small tables (``rows`` rows each): what list_tables pays per table, not per row."""
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.unlink(missing_ok=True)
    connection = sqlite3.connect(temporary)
    for index in range(tables):
        connection.execute(f"CREATE TABLE t{index:05d} (id INTEGER PRIMARY KEY, name TEXT, amount REAL)")
        connection.execute(
            f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows}) "
            f"INSERT INTO t{index:05d} SELECT i, 'row ' || i, i / 3.0 FROM n"
        )
    connection.commit()
    connection.close()
    temporary.rename(path)
    return path


def plain_sqlite_ms(path: Path, sql: str, repeat: int) -> tuple[float, float]:
    """Median (wall ms, CPU ms) of ``sql`` in plain Python sqlite3, no MCP: the floor for an aggregate."""
    walls, cpus = [], []
    for _ in range(repeat):
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        started, cpu_started = time.perf_counter(), time.process_time()
        connection.execute(sql).fetchall()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu_started)
        connection.close()
    return statistics.median(walls) * 1000, statistics.median(cpus) * 1000


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--only", action="append", help="run only the cases whose name contains this")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument(
        "--tables", type=int, help="list_tables only, on a database of this many 200-row tables"
    )
    parser.add_argument("--client", choices=CLIENTS, default="python", help="the MCP client that drives both")
    parser.add_argument(
        "--work-dir", type=Path, help="keep the databases and the peer here (default: a temporary folder)"
    )
    args = parser.parse_args()
    use_work_dir(args.work_dir)
    r = args.repeat
    if args.tables:
        database = build_many_tables(work_dir() / f"tables-{args.tables}.db", args.tables)
        cases = [
            Case("list_tables", ("list_tables", {}), ("list_tables", {}), r),
            Case(
                "list_tables, file just changed", ("list_tables", {}), ("list_tables", {}), r, touch=database
            ),
        ]
    else:
        database = build_database(work_dir() / f"events-{args.rows}.db", args.rows)
        cases = many_rows_cases(database, r)
    await compare(args, database, cases)


def many_rows_cases(database: Path, r: int) -> list[Case]:
    return [
        Case("list_tables", ("list_tables", {}), ("list_tables", {}), r),
        Case(
            "describe_table",
            ("describe_table", {"table": "events"}),
            ("describe_table", {"table_name": "events"}),
            r,
        ),
        Case(
            "describe_table, misspelt name (error)",
            ("describe_table", {"table": "evnts"}),
            ("describe_table", {"table_name": "evnts"}),
            r,
        ),
        # The file's time is moved before every call: ours can never answer from its catalog cache.
        Case("list_tables, file just changed", ("list_tables", {}), ("list_tables", {}), r, touch=database),
        Case(
            "describe_table, file just changed",
            ("describe_table", {"table": "events"}),
            ("describe_table", {"table_name": "events"}),
            r,
            touch=database,
        ),
        Case(
            "query 10 rows",
            ("query", {"sql": "SELECT * FROM events LIMIT 10"}),
            ("read_query", {"query": "SELECT * FROM events LIMIT 10"}),
            r,
        ),
        Case(
            "query 10,000 rows",
            ("query", {"sql": "SELECT * FROM events LIMIT 10000", "max_rows": 10000}),
            ("read_query", {"query": "SELECT * FROM events LIMIT 10000"}),
            max(3, r // 2),
        ),
        Case(
            "aggregate over all rows",
            ("query", {"sql": AGGREGATE}),
            ("read_query", {"query": AGGREGATE}),
            max(3, r // 2),
        ),
        Case(
            "SELECT * over all rows",
            ("query", {"sql": "SELECT * FROM events"}),
            ("read_query", {"query": "SELECT * FROM events"}),
            1,
            timeout=300,
        ),
    ]


async def compare(args: argparse.Namespace, database: Path, cases: list[Case]) -> None:
    peer = peer_venv("sqlite-peer", ["mcp-server-sqlite==2025.4.25", "mcp<2"])
    cases = selected(cases, args.only)
    ours_command = [
        str(ROOT / ".venv" / "bin" / "dockyard-sqlite"),
        "--db",
        str(database),
        "--timeout-ms",
        "60000",
    ]
    peer_command = [str(peer / "bin" / "mcp-server-sqlite"), "--db-path", str(database)]
    peaks = await run_side_by_side(cases, ours_command, peer_command, args.client)
    memory = {"dockyard-sqlite": peaks["ours"], "mcp-server-sqlite": peaks["peer"]}
    aggregate = next((case for case in cases if case.name == "aggregate over all rows"), None)
    ours_aggregate = aggregate.results["ours"] if aggregate else {}
    plain_wall, plain_cpu = plain_sqlite_ms(database, AGGREGATE, 5) if aggregate else (0.0, 0.0)
    extra = (
        f"Aggregate in plain Python sqlite3 (same query, no MCP): {plain_wall:.1f} ms wall, {plain_cpu:.1f} ms "
        f"CPU; ours over MCP: {ours_aggregate['median_ms']:.1f} ms wall, {ours_aggregate['cpu_ms']:.1f} ms "
        f"server CPU ({ours_aggregate['cpu_ms'] / plain_cpu:.2f}× plain CPU, stdio round trip included)."
        if "cpu_ms" in ours_aggregate
        else ""
    )
    size = f"{args.tables:,} tables" if args.tables else f"{args.rows:,} rows"
    title = f"dockyard-sqlite vs mcp-server-sqlite, {size}, driven by {client_label(args.client)}"
    print(report(title, cases, memory, extra))


if __name__ == "__main__":
    asyncio.run(main())
