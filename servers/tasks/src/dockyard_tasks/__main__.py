"""Command line of dockyard-tasks."""

from __future__ import annotations

import argparse

from dockyard_shared.runner import ServerEntry, run_server

from .settings import TOOLSETS, add_arguments, demo_database_url

SUMMARY = "A shared project task tracker on SQLite or PostgreSQL: tasks, history, subscriptions."


def build(args: argparse.Namespace):
    # Imported here so `dockyard list` does not load SQLAlchemy, Alembic and FastMCP's server.
    from .server import create_server
    from .settings import settings_from

    return create_server(settings_from(args))


entry = ServerEntry(
    name="tasks",
    summary=SUMMARY,
    build=build,
    add_arguments=add_arguments,
    toolsets=TOOLSETS,
    # `dockyard serve all` shows a working tracker (the sample project TASK) without touching the user's own.
    serve_all_args=lambda: ("--database-url", demo_database_url(), "--demo"),
    # --actors makes the server verify each caller's token (ActorTokens), so it may bind a LAN address.
    authenticates=lambda args: bool(getattr(args, "actors", None)),
    # Where `dockyard a2a` keeps this agent's A2A tasks (when PostgreSQL): the tracker's own database.
    database=lambda args: args.database_url,
)


def main() -> None:
    raise SystemExit(run_server(entry))


if __name__ == "__main__":
    main()
