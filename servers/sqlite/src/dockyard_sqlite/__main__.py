"""Command line of dockyard-sqlite."""

from __future__ import annotations

import argparse
import logging
import threading
from typing import TYPE_CHECKING

from dockyard_shared.runner import ServerEntry, run_server

from .settings import SERVER_RESERVE_MB, TOOLSETS, add_arguments, least_memory_mb, settings_from

if TYPE_CHECKING:
    from .workers.pool import WorkerPool

SUMMARY = "Safe, fast SQL over SQLite databases: read-only by default, enforced by SQLite itself."


def start_first_worker(args: argparse.Namespace) -> None:
    """Start the first SQLite worker process before FastMCP is imported (``ServerEntry.before_imports``).

    Why: the server checks each database in a worker process before it serves, and a worker takes ~100 ms
    to start (a Python process of its own). Started here, from a thread that only waits for it, the child
    starts on the other core while the main thread imports FastMCP and the MCP SDK, and is ready when
    ``build`` checks the databases. The pool is built in the main thread (its modules are needed anyway):
    two threads importing at once only trade the interpreter lock back and forth. The server uses it only if
    its limits are the ones the settings give (see :class:`.database_set.DatabaseSet`).
    """
    if args.workers < 1 or args.memory_mb < least_memory_mb(args.workers):
        return  # settings_from refuses these flags, with the reason
    # Standard library, pydantic-core, dockyard_shared.
    from .workers.limits import WorkerLimits
    from .workers.pool import WorkerPool

    pool = WorkerPool(WorkerLimits.within(args.memory_mb, size=args.workers, reserve_mb=SERVER_RESERVE_MB))
    thread = threading.Thread(
        target=_start_quietly, args=(pool,), name="dockyard-sqlite-first-worker", daemon=True
    )
    thread.start()
    _first_worker.append((pool, thread))


def _start_quietly(pool: WorkerPool) -> None:
    try:
        pool.start()
    except Exception as error:  # the database check starts a worker again, and reports why it failed
        logging.getLogger("dockyard.sqlite").debug("first worker not started early: %s", error)


_first_worker: list[tuple[WorkerPool, threading.Thread]] = []


def build(args: argparse.Namespace):
    # Imported here, not at the top: `dockyard list` reads `entry` without importing FastMCP.
    from .server import create_server

    settings = settings_from(args)
    pool = None
    if _first_worker:
        pool, thread = _first_worker.pop()
        thread.join()
    return create_server(settings, pool=pool)


entry = ServerEntry(
    name="sqlite",
    summary=SUMMARY,
    build=build,
    add_arguments=add_arguments,
    config_args=("--demo",),
    toolsets=TOOLSETS,
    before_imports=start_first_worker,
)


def main() -> None:
    raise SystemExit(run_server(entry))


if __name__ == "__main__":
    main()
