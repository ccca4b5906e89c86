"""Long calls as tasks: the ``io.modelcontextprotocol/tasks`` extension (SEP-2663), served by fastmcp-tasks.

A host that cuts a request at 60 s can still get a 1,000-name batch or a slow fetch: a client that declares
the extension gets a task id back from ``tools/call`` at once, polls ``tasks/get`` (status, progress) and may
``tasks/cancel`` it. Cancelling cancels the tool's coroutine in the worker, so the work really stops: no
further upstream request, the git child killed by the runner's cancel path.

Why fastmcp-tasks, not our own: FastMCP 4.1 ships the public extension API (``ServerExtension``: methods, a
``tools/call`` interceptor, a lifespan) but no engine; the engine, the ``CreateTaskResult`` wire production
the SDK lacks, task scoping by the caller's access token and the client half are all in fastmcp-tasks,
maintained with FastMCP at the same version. Writing them again would mean our own patch of the SDK's result
serialiser. What it costs: fastmcp moves to 4.1.4 (its pin), pydocket and redis come along, and its
imports (pydocket, FastMCP's client) add about half again to a server's own (+2.4 s on 4.4 s, measured on a
busy machine): so this module is imported only by a server started with ``--tasks``, keeping the default
start-up as light as before (tests/workspace/test_startup_imports.py).

What we add on top:

- **The server decides per request.** A tool registered with a *decider* runs as a task only when the
  decider says the call is long (``batch_predict``: names the cache cannot answer); otherwise the call is
  answered in place even for a client that asked for tasks. Spec-wise a task is the server's choice.
- **One engine per server instance.** Each :class:`LongCalls` has its own Docket queue name (in memory), so a
  task id minted by one server (another process, another in-process test server) is unknown to another.
- **Scope.** fastmcp-tasks files each task under the caller's access token (``client_id``, and ``sub``):
  a task id from another actor is answered "not found", exactly like an id that never existed. Without
  authentication (stdio: one client per process; loopback HTTP) the id itself (256 random bits) is the
  capability.

Tasks exist only at the 2026-07-28 protocol era (extensions are negotiated there); a 2025-11-25 client, or a
2026-07-28 client that does not declare the extension, gets the plain call, as before.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from fastmcp_tasks import TasksExtension

from .confirm import client_can_elicit

if TYPE_CHECKING:
    import mcp_types
    from fastmcp.server.context import Context
    from fastmcp.server.extensions import ToolCallContinuation, ToolCallOutcome

__all__ = ["Decider", "LongCalls", "task_config"]

#: Decides, from a call's arguments, whether it is long enough to run as a task.
Decider = Callable[[Mapping[str, Any]], Awaitable[bool]]

#: What a task advertises as its poll interval: often enough that a person sees progress, rarely enough
#: that polling costs nothing measurable.
POLL_INTERVAL = timedelta(seconds=1)


def task_config() -> Any:
    """The ``task=`` of a tool that may run as a task (``optional``: a client without tasks gets a plain
    call)."""
    from fastmcp.utilities.tasks import TaskConfig

    return TaskConfig(mode="optional", poll_interval=POLL_INTERVAL)


class LongCalls(TasksExtension):
    """The tasks extension, with the per-request choice of :meth:`decide` and a queue of its own."""

    def __init__(self, server_name: str, *, concurrency: int = 4) -> None:
        # In memory: tasks live as long as the process. The queue name is unique per instance so two servers
        # in one process (tests, an embedding host) never see each other's tasks.
        super().__init__(
            url="memory://",
            name=f"{server_name}-{secrets.token_hex(4)}",
            concurrency=concurrency,
            minimum_check_interval=timedelta(milliseconds=20),
        )
        self._deciders: dict[str, Decider] = {}
        self._asking: set[str] = set()

    def decide(self, tool: str, decider: Decider) -> None:
        """Run ``tool`` as a task only when ``decider(arguments)`` says so (default: whenever the client
        asks)."""
        self._deciders[tool] = decider

    def may_ask_the_user(self, tool: str) -> None:
        """``tool`` may ask the user to confirm (dockyard_shared.confirm): it runs as a task only for a
        client that declared elicitation, the task asking through ``input_required``; any other client gets
        the plain call, which says why it cannot go ahead."""
        self._asking.add(tool)

    async def intercept_tool_call(
        self,
        params: mcp_types.CallToolRequestParams,
        context: Context,
        call_next: ToolCallContinuation,
    ) -> ToolCallOutcome:
        decider = self._deciders.get(params.name)
        if decider is not None and not await _long(decider, params.arguments or {}):
            return await call_next()
        if params.name in self._asking and not client_can_elicit(context):
            return await call_next()
        return await super().intercept_tool_call(params, context, call_next)


async def _long(decider: Decider, arguments: Mapping[str, Any]) -> bool:
    """The decider's answer; arguments it cannot read (the tool will refuse them) make a plain call, so
    the error comes back at once, in the tool's own words."""
    try:
        return await decider(arguments)
    except Exception:
        return False
