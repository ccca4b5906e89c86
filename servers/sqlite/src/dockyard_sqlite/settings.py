"""Configuration of the SQLite server: which databases, which toolsets, and the limits.

Cheap to import (no FastMCP, no server module): ``dockyard list`` reads :data:`TOOLSETS` and
:func:`add_arguments` from here.
"""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from dockyard_shared import InvalidArgument
from dockyard_shared.paths import user_data_dir
from dockyard_shared.task_backend import TaskBackend, add_task_backend_arguments, task_backend_from
from dockyard_shared.toolsets import Exposure, Toolset, exposure_from

__all__ = [
    "ACROSS",
    "EXPORT",
    "IMPORT",
    "MAX_REPLY_CHARS",
    "MIN_WORKER_MB",
    "READ",
    "SEARCH",
    "SERVER_RESERVE_MB",
    "TOOLSETS",
    "WRITE",
    "DatabaseSpec",
    "Limits",
    "Settings",
    "add_arguments",
    "default_demo_path",
    "least_memory_mb",
    "parse_database_spec",
    "settings_from",
]

READ = Toolset("read", "list_tables, describe_table, query, explain_query: read-only SQL", read_only=True)
WRITE = Toolset(
    "write",
    "execute: INSERT/UPDATE/DELETE and table DDL (--allow-write); destroying data asks the user",
    read_only=False,
    default=False,
    flag="--allow-write",
)
SEARCH = Toolset("search", "search_schema: tables and columns by name or type, in levels", read_only=True)
ACROSS = Toolset("across", "query_across: one read-only query over every served database", read_only=True)
EXPORT = Toolset(
    "export",
    "export_csv: a query or table into a CSV/TSV file in --export-dir",
    read_only=False,
    default=False,
)
IMPORT = Toolset(
    "import",
    "import_csv: a CSV/TSV file of --import-dir into a new table (with --allow-write)",
    read_only=False,
    default=False,
)
TOOLSETS = (READ, WRITE, SEARCH, ACROSS, EXPORT, IMPORT)

# The longest result any call returns at the default limits (tests hold every tool to it).
MAX_REPLY_CHARS = 100_000

_ALIAS = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$")


# Of the server's memory bound (--memory-mb), what its own process is granted: FastMCP, the event
# loop, a page being sent (measured: 110-130 MB peak over stdio with 10,000-row pages, bench/sqlite).
# The rest is shared equally by the worker processes, as each one's address-space cap.
SERVER_RESERVE_MB = 160
# The least address space a worker is given: Python, SQLite and pydantic-core take ~32 MB of it.
MIN_WORKER_MB = 64


def least_memory_mb(workers: int) -> int:
    """The smallest --memory-mb that leaves the server its reserve and each of ``workers`` its minimum."""
    return SERVER_RESERVE_MB + workers * MIN_WORKER_MB


@dataclass(frozen=True)
class Limits:
    default_rows: int = 100  # rows per page when the model does not say
    max_rows: int = 10_000  # hard ceiling on rows per page (--max-rows)
    # JSON characters of one page of rows (column names included), and of a catalog answer: with the rest
    # of the reply a result stays under 100,000 characters (~25,000 tokens), the most one popular host
    # accepts from a tool.
    max_chars: int = 90_000
    max_cell_chars: int = 10_000  # one text value longer than this is cut (and says how to read the rest)
    timeout_ms: int = 5_000  # per statement (--timeout-ms)
    busy_timeout_ms: int = 1_000  # how long to wait for another process's lock
    sample_rows: int = 3
    memory_mb: int = 512  # the server's memory bound: its own process and its workers (--memory-mb)
    workers: int = 3  # SQLite worker processes, shared by every database (--workers)
    max_write_mb: int = 64  # how much one execute call may grow the database file (--max-write-mb)
    max_export_mb: int = 64  # the largest file export_csv writes (--max-export-mb)
    # With --tasks: the time limit of a query run as a task (--task-timeout-ms), and how many rows a query's
    # plan may visit before it counts as long (query_cost; ~0.5-2 s of SQLite's work, bench below).
    task_timeout_ms: int = 60_000
    task_rows: int = 5_000_000


@dataclass(frozen=True)
class DatabaseSpec:
    alias: str
    path: Path


@dataclass(frozen=True)
class Settings:
    databases: tuple[DatabaseSpec, ...]
    # Which tools are served (--toolsets, --tools, --exclude-tools, --read-only; --allow-write turns on
    # the write toolset), and whether the model's confirm=true counts (--trust-model-confirmation).
    exposure: Exposure = field(default_factory=Exposure)
    create: bool = False  # create a missing database file (only where execute is served)
    limits: Limits = field(default_factory=Limits)
    export_dir: Path | None = None  # where export_csv writes (--export-dir); None: export is off
    import_dir: Path | None = None  # where import_csv reads (--import-dir); None: import is off
    tasks: bool = False  # serve the MCP tasks extension: reads that may run long as tasks (--tasks)
    task_backend: TaskBackend = field(default_factory=TaskBackend)  # --tasks-url, --tasks-queue


def parse_database_spec(value: str) -> DatabaseSpec:
    """``ALIAS=PATH`` or ``PATH`` (the alias is then the file's stem)."""
    alias, separator, rest = value.partition("=")
    if separator and _ALIAS.match(alias) and rest:
        path = rest
    else:
        alias, path = "", value
    resolved = Path(os.path.expanduser(path)).resolve()
    if not alias:
        alias = re.sub(r"[^A-Za-z0-9_\-]", "_", resolved.stem) or "db"
        if not alias[0].isalpha() and alias[0] != "_":
            alias = "db_" + alias
    return DatabaseSpec(alias=alias, path=resolved)


def check_unique_aliases(specs: list[DatabaseSpec]) -> None:
    seen: dict[str, Path] = {}
    for spec in specs:
        if spec.alias in seen:
            raise InvalidArgument(
                f"Two databases would both be called {spec.alias!r} ({seen[spec.alias]} and {spec.path}).",
                next_step="Name them: --db first=PATH --db second=PATH.",
            )
        seen[spec.alias] = spec.path


def default_demo_path() -> Path:
    """Where the generated sample database lives: the user data directory."""
    return user_data_dir("sqlite") / "demo.db"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("databases")
    group.add_argument(
        "--db",
        action="append",
        default=[],
        metavar="[ALIAS=]PATH",
        help="a SQLite file to serve (repeatable); the alias defaults to the file's stem",
    )
    group.add_argument(
        "--demo",
        action="store_true",
        help="also serve the generated sample database (the default with no --db)",
    )
    group.add_argument(
        "--allow-write",
        action="store_true",
        help="serve the write toolset (the execute tool: writes, DDL); same as adding 'write' to --toolsets",
    )
    group.add_argument(
        "--create", action="store_true", help="with --allow-write: create missing database files"
    )
    defaults = Limits()
    group.add_argument(
        "--max-rows", type=int, default=defaults.max_rows, help="hard ceiling on rows per query page"
    )
    group.add_argument("--timeout-ms", type=int, default=defaults.timeout_ms, help="time limit per statement")
    group.add_argument(
        "--memory-mb",
        type=int,
        default=defaults.memory_mb,
        help="memory bound of the whole server: its own process and its SQLite worker processes",
    )
    group.add_argument(
        "--workers", type=int, default=defaults.workers, help="SQLite worker processes (statements at once)"
    )
    group.add_argument(
        "--max-write-mb",
        type=int,
        default=defaults.max_write_mb,
        help="with --allow-write: how much one execute call may grow a database file",
    )
    group.add_argument(
        "--tasks",
        action="store_true",
        help="serve the MCP tasks extension: a query, query_across or export_csv whose plan may read many "
        "rows runs as a task the client polls and can cancel (clients that declare it, 2026-07-28 protocol; "
        "others get plain calls)",
    )
    group.add_argument(
        "--task-timeout-ms",
        type=int,
        default=None,
        help=f"with --tasks: time limit of a query run as a task (no host waits on it; at least --timeout-ms; "
        f"default {defaults.task_timeout_ms:,}, or --timeout-ms if that is longer)",
    )
    add_task_backend_arguments(group)
    group.add_argument(
        "--export-dir",
        metavar="DIR",
        help="serve export_csv, writing CSV/TSV files into this folder only (never overwriting)",
    )
    group.add_argument(
        "--max-export-mb", type=int, default=defaults.max_export_mb, help="the largest file export_csv writes"
    )
    group.add_argument(
        "--import-dir",
        metavar="DIR",
        help="with --allow-write: serve import_csv, reading CSV/TSV files from this folder only",
    )


def settings_from(args: argparse.Namespace) -> Settings:
    """Settings from the command line (the flags of :func:`add_arguments` and the common ones)."""
    from .demo import ensure_demo_database  # only when a demo database is served

    if args.create and not args.allow_write:
        raise InvalidArgument(
            "--create needs --allow-write.", next_step="Add --allow-write, or drop --create."
        )
    if args.import_dir and not args.allow_write:
        raise InvalidArgument(
            "--import-dir needs --allow-write (import_csv creates tables).",
            next_step="Add --allow-write, or drop --import-dir.",
        )
    if min(args.max_rows, args.timeout_ms, args.workers, args.max_write_mb, args.max_export_mb) < 1:
        raise InvalidArgument(
            "--max-rows, --timeout-ms, --workers, --max-write-mb and --max-export-mb must be positive."
        )
    if args.task_timeout_ms is None:  # not given: a task never gets less time than a plain call
        args.task_timeout_ms = max(Limits().task_timeout_ms, args.timeout_ms)
    if args.task_timeout_ms < args.timeout_ms:
        raise InvalidArgument(
            f"--task-timeout-ms {args.task_timeout_ms} is below --timeout-ms {args.timeout_ms}: a query run "
            "as a task would get less time than a plain call.",
            next_step=f"Pass --task-timeout-ms {args.timeout_ms} or more.",
        )
    least = least_memory_mb(args.workers)
    if args.memory_mb < least:
        raise InvalidArgument(
            f"--memory-mb {args.memory_mb} is too small for {args.workers} workers: the server's own process "
            f"takes {SERVER_RESERVE_MB} MiB and each worker needs at least {MIN_WORKER_MB} MiB.",
            next_step=f"Pass --memory-mb {least} or more, or fewer --workers.",
        )
    specs = [parse_database_spec(value) for value in args.db]
    if args.demo or not specs:
        demo = parse_database_spec(f"demo={default_demo_path()}")
        ensure_demo_database(demo.path)
        specs.append(demo)
    check_unique_aliases(specs)
    defaults = Limits()
    limits = Limits(
        default_rows=min(defaults.default_rows, args.max_rows),
        max_rows=args.max_rows,
        timeout_ms=args.timeout_ms,
        memory_mb=args.memory_mb,
        workers=args.workers,
        max_write_mb=args.max_write_mb,
        max_export_mb=args.max_export_mb,
        task_timeout_ms=args.task_timeout_ms,
    )
    exposure = exposure_from(args)
    if args.allow_write:
        exposure = exposure.enabling(WRITE.name)
    export_dir = folder(args.export_dir, "--export-dir") if args.export_dir else None
    import_dir = folder(args.import_dir, "--import-dir") if args.import_dir else None
    if export_dir:
        exposure = exposure.enabling(EXPORT.name)
    if import_dir:
        exposure = exposure.enabling(IMPORT.name)
    return Settings(
        databases=tuple(specs),
        exposure=exposure,
        create=args.create,
        limits=limits,
        export_dir=export_dir,
        import_dir=import_dir,
        tasks=args.tasks,
        task_backend=task_backend_from(args, distribution="dockyard-sqlite"),
    )


def folder(value: str, flag: str) -> Path:
    """An operator-named folder, resolved once (symbolic links in it followed now, by the operator's choice)."""
    path = Path(os.path.expanduser(value)).resolve()
    if not path.is_dir():
        raise InvalidArgument(
            f"{flag} {value}: not an existing folder.", next_step=f"Create it, or fix {flag}."
        )
    return path
