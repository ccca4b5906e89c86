"""Command line of dockyard-name-origin."""

from __future__ import annotations

import argparse

from dockyard_shared.runner import ServerEntry, run_server

from .settings import TOOLSETS, add_arguments, settings_from

SUMMARY = "Where a name is most common (nationalize.io): batched, cached, quota-aware and resilient."


def build(args: argparse.Namespace):
    # Imported here so `dockyard list` does not load httpx, SQLAlchemy and FastMCP's server stack.
    from .server import create_server

    return create_server(settings_from(args))


entry = ServerEntry(
    name="name-origin",
    summary=SUMMARY,
    build=build,
    add_arguments=add_arguments,
    toolsets=TOOLSETS,
    # Where `dockyard a2a` keeps this agent's A2A tasks (when PostgreSQL): the shared prediction cache.
    database=lambda args: None if args.no_cache else args.cache_url,
)


def main() -> None:
    raise SystemExit(run_server(entry))


if __name__ == "__main__":
    main()
