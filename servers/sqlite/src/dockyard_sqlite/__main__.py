"""Command line of dockyard-sqlite."""

from __future__ import annotations

import argparse

from dockyard_shared.runner import ServerEntry, run_server

from .settings import TOOLSETS, Limits, settings_from

SUMMARY = "Safe, fast SQL over SQLite databases: read-only by default, enforced by SQLite itself."


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


def build(args: argparse.Namespace):
    # Imported here, not at the top: `dockyard list` reads `entry` without paying for SQLAlchemy.
    from .server import create_server

    return create_server(settings_from(args))


entry = ServerEntry(
    name="sqlite",
    summary=SUMMARY,
    build=build,
    add_arguments=add_arguments,
    config_args=("--demo",),
    toolsets=TOOLSETS,
)


def main() -> None:
    raise SystemExit(run_server(entry))


if __name__ == "__main__":
    main()
