"""Command line of dockyard-sqlite."""

from __future__ import annotations

import argparse

from dockyard_shared import InvalidArgument
from dockyard_shared.runner import ServerEntry, run_server

from .settings import Limits, Settings, check_unique_aliases, default_demo_path, parse_database_spec

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
    group.add_argument("--allow-write", action="store_true", help="register the execute tool (writes, DDL)")
    group.add_argument(
        "--create", action="store_true", help="with --allow-write: create missing database files"
    )
    defaults = Limits()
    group.add_argument(
        "--max-rows", type=int, default=defaults.max_rows, help="hard ceiling on rows per query page"
    )
    group.add_argument("--timeout-ms", type=int, default=defaults.timeout_ms, help="time limit per statement")


def settings_from(args: argparse.Namespace) -> Settings:
    from .demo import ensure_demo_database

    if args.create and not args.allow_write:
        raise InvalidArgument(
            "--create needs --allow-write.", next_step="Add --allow-write, or drop --create."
        )
    if args.max_rows < 1 or args.timeout_ms < 1:
        raise InvalidArgument("--max-rows and --timeout-ms must be positive.")
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
    )
    return Settings(databases=tuple(specs), allow_write=args.allow_write, create=args.create, limits=limits)


def build(args: argparse.Namespace):
    from .server import create_server

    return create_server(settings_from(args))


entry = ServerEntry(
    name="sqlite", summary=SUMMARY, build=build, add_arguments=add_arguments, config_args=("--demo",)
)


def main() -> None:
    raise SystemExit(run_server(entry))


if __name__ == "__main__":
    main()
