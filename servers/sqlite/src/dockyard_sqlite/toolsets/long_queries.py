"""``--tasks``: a ``query``, ``query_across`` or ``export_csv`` that may run long becomes an MCP task
(dockyard_shared.long_calls).

Which calls: those whose plan may visit more than ``Limits.task_rows`` rows before the page is complete
(an export: before its last row is written), or has no bound before it runs (:mod:`..query_cost`).
``SELECT 1``, a point read by key, the first page of an unfiltered ``SELECT * FROM big`` stay plain calls,
even for a client that asked for a task: a task costs the client a poll (up to a second) that a cheap read
should not pay.

What a task gets: a longer time limit (``--task-timeout-ms``, default 60 s against a plain call's 5 s): no
host waits on it (the motivation is a host that cuts a request at 60 s), so the limit only bounds how long
one statement holds a worker process. Its progress, as it polls, is the time used of that limit: SQLite
says nothing of how far a statement has got. Cancelling the task cancels the call, which kills the worker
process running the statement (:meth:`..database_set.DatabaseSet.run`); the pool starts another, and an
export's partial file is removed as on any failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from fastmcp import Context, FastMCP

from dockyard_shared.progress import report_progress

from ..database_set import DatabaseSet
from ..query_cost import Weight

if TYPE_CHECKING:
    from dockyard_shared.task_backend import TaskBackend

__all__ = ["PLAN_WITHIN_S", "as_called", "serve_tasks", "while_reporting"]

T = TypeVar("T")
# How long the decision may take: planning a statement takes ~0.5 ms when a worker is free.
PLAN_WITHIN_S = 1.0
# How often a task's progress is updated: its poll interval (dockyard_shared.long_calls.POLL_INTERVAL).
_REPORT_EVERY_S = 1.0


def serve_tasks(server: FastMCP, databases: DatabaseSet, backend: TaskBackend) -> Any:
    """Serve the tasks extension; return the task configuration of query, query_across and export_csv."""
    from dockyard_shared.long_calls import LongCalls, task_config  # pydocket: only with --tasks

    limits = databases.limits
    # Tasks hold at most all workers but one, so a plain call always finds one within its own limit.
    # On a shared backend any replica's worker may run a query: the default queue is this machine's with
    # these database files, so replicas elsewhere share it only when given the same files and --tasks-queue.
    deployment = " ".join([socket.gethostname(), *(f"{spec.alias}={spec.path}" for spec in databases.specs)])
    long_calls = LongCalls(
        "dockyard-sqlite", concurrency=max(1, limits.workers - 1), backend=backend, deployment=deployment
    )
    long_calls.report_health(server)

    async def may_run_long(arguments: Mapping[str, Any], *, across: bool = False) -> bool:
        if not _client_takes_tasks():
            return False  # it gets the plain call whatever the plan: no need to plan it
        sql, params = arguments["sql"], arguments.get("params")
        if not isinstance(sql, str) or not isinstance(params, list | dict | None):
            return False  # the tool refuses them, in place
        return await _weighs_over(
            databases.weigh(
                arguments.get("database"),
                sql,
                params,
                max_rows=arguments.get("max_rows"),
                cursor=arguments.get("cursor"),
                across=across,
            ),
            limits.task_rows,
        )

    async def may_export_long(arguments: Mapping[str, Any]) -> bool:
        if not _client_takes_tasks():
            return False
        sql, table, params = arguments.get("sql"), arguments.get("table"), arguments.get("params")
        if (sql is None) == (table is None) or not isinstance(params, list | dict | None):
            return False  # the tool refuses them, in place
        if not isinstance(sql or table, str):
            return False
        return await _weighs_over(
            databases.weigh(
                arguments.get("database"), sql, None if table else params, table=table, every_row=True
            ),
            limits.task_rows,
        )

    long_calls.decide("query", may_run_long)
    long_calls.decide("export_csv", may_export_long)
    long_calls.decide("query_across", partial(may_run_long, across=True))
    server.add_extension(long_calls)
    return task_config()


async def _weighs_over(weighing: Awaitable[Weight], threshold: int) -> bool:
    """Whether the weight is over ``threshold``. Planning that takes longer than :data:`PLAN_WITHIN_S`
    (every worker busy, or a statement slow to compile) makes a task too: that is no cheap read, and a
    task waits its turn where a plain call would wait on the request. Cancelling the planning kills its
    worker, as for any call."""
    try:
        weight = await asyncio.wait_for(weighing, PLAN_WITHIN_S)
    except TimeoutError:
        return True
    return weight.over(threshold)


def _client_takes_tasks() -> bool:
    """Whether this tools/call declared the tasks extension at the 2026-07-28 era (only then is a task
    possible); True when that cannot be told, so the plan decides."""
    try:
        from fastmcp.server.dependencies import get_context
        from fastmcp.utilities.tasks import TASKS_EXTENSION_ID
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        context = get_context()
        request = context.request_context
        if request is not None and request.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return False
        return context.client_extension_settings(TASKS_EXTENSION_ID) is not None
    except Exception:
        return True


async def while_reporting(ctx: Context, limit_ms: int, work: Callable[[], Awaitable[T]]) -> T:
    """``work``, reporting its time used of ``limit_ms`` as the task's progress every second."""
    started = time.monotonic()
    limit_s = max(1, round(limit_ms / 1000))

    async def report() -> None:
        while True:
            used = int(time.monotonic() - started)
            with contextlib.suppress(Exception):  # progress is a courtesy: never the call's failure
                await report_progress(
                    ctx, used, limit_s, f"running for {used} s of its {limit_s} s time limit"
                )
            await asyncio.sleep(_REPORT_EVERY_S)

    reporter = asyncio.create_task(report())
    try:
        return await work()
    finally:
        reporter.cancel()


async def as_called(ctx: Context, limit_ms: int, run: Callable[[bool], Awaitable[T]]) -> T:
    """``run(as_task)``: as a task (``--tasks`` judged the call long) with the task's time limit
    ``limit_ms`` and its progress reported; otherwise as the plain call."""
    if ctx.is_background_task:
        return await while_reporting(ctx, limit_ms, lambda: run(True))
    return await run(False)
