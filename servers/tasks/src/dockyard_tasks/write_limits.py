"""--max-writes-per-minute: each actor's write calls, counted across every replica on the database.

A tool call counts as a write when its tool is not read-only (its ``readOnlyHint``): create_task,
update_task, import_tasks… one call each, whatever it changes. The budget is a token bucket in the
database (``store/budget.py``), so three replicas behind a load balancer grant an actor N writes a minute
in all, not 3N. A refused call changes nothing and says how many seconds to wait; reads are never limited.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import anyio
from fastmcp.server.middleware import Middleware, MiddlewareContext

from dockyard_shared import LimitExceeded

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from .actors import Actors
    from .store import TaskStore

__all__ = ["WriteRateLimit"]


class WriteRateLimit(Middleware):
    def __init__(self, server: FastMCP, store: TaskStore, actors: Actors, per_minute: int) -> None:
        self._server = server
        self._store = store
        self._actors = actors
        self.per_minute = per_minute
        self._writes: dict[str, bool] = {}  # tool name → whether it writes

    async def _is_write(self, name: str) -> bool:
        if name not in self._writes:
            tool = await self._server.get_tool(name)
            if tool is None:
                return False  # unknown or switched off: FastMCP (or SwitchedOffTools) answers
            hint = tool.annotations.read_only_hint if tool.annotations else None
            self._writes[name] = not hint
        return self._writes[name]

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        if await self._is_write(context.message.name):
            from .store.budget import take_write_token

            actor = self._actors.current()
            wait = await anyio.to_thread.run_sync(
                lambda: take_write_token(
                    self._store.engine,
                    actor,
                    self.per_minute,
                    timeout_s=self._store.statement_timeout_s,
                )
            )
            if wait is not None:
                raise refusal(actor, self.per_minute, wait)
        return await call_next(context)


def refusal(actor: str, per_minute: int, wait: float) -> LimitExceeded:
    seconds = max(1, math.ceil(wait))
    return LimitExceeded(
        f"Too many writes: {actor} has used all {per_minute} writes a minute this tracker allows each "
        f"person (--max-writes-per-minute, counted across every server replica); nothing was changed.",
        next_step=f"Wait {seconds} s, then retry the same call (retry_after_seconds={seconds}). Reads are "
        "not limited meanwhile.",
        retryable=True,
    )
