"""Progress of a call, sent only where someone can see it.

A call can show progress two ways: a ``notifications/progress`` to a client that sent a progress token, or
the status of an MCP task (``--tasks``) that the client polls. FastMCP's ``Context.report_progress`` does
the first when there is a token; without one it checks whether a task engine is installed, and that check
imports it (pydocket: ~1.5 s on this project's test machines) on the first call of a process that has no
token — a stall on the first ``batch_predict`` of a server that does not serve tasks at all, long enough to
reorder two replicas' claims. :func:`report_progress` sends only where one of the two can see it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastmcp import Context

__all__ = ["report_progress", "running_as_task"]


def running_as_task() -> bool:
    """Is this call running as an MCP task? Only a server started with --tasks has imported fastmcp_tasks."""
    tasks_context = sys.modules.get("fastmcp_tasks.context")
    return tasks_context is not None and tasks_context.get_task_context() is not None


def _has_progress_token(ctx: Context) -> bool:
    request = ctx.request_context  # None before the session is up
    meta = request.meta if request is not None else None  # the request's raw _meta block
    return bool(meta) and meta.get("progressToken") is not None


async def report_progress(
    ctx: Context, progress: float, total: float | None = None, message: str | None = None
) -> None:
    """``ctx.report_progress``, where a progress token or a task can show it; otherwise nothing."""
    if _has_progress_token(ctx) or running_as_task():
        await ctx.report_progress(progress, total, message)
