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
- **One engine per server instance, or one per deployment.** By default (``memory://``) each
  :class:`LongCalls` has its own queue, so a task id minted by one server (another process, another
  in-process test server) is unknown to another. With a shared backend (``--tasks-url redis://…``,
  :mod:`dockyard_shared.task_backend`) the replicas of one deployment share one queue, named after the
  server and the deployment (``--tasks-queue``, or a digest of what the replicas share, e.g. the
  database): any replica answers ``tasks/get``/``tasks/cancel`` for a task another started, and any
  replica's worker may run it, so replicas must serve the same tools (same flags). Docket has no backend
  but Redis (and its in-process imitation): a tasks server on PostgreSQL keeps its task state in Redis.
  fastmcp-tasks has no store of its own to plug in (it writes its metadata through ``docket.redis()``),
  so another backend would mean replacing its engine.
- **A shared backend needs the snapshot key.** fastmcp-tasks writes each task's caller (access token,
  HTTP headers, the bearer token among them) to the backend so the worker runs as that caller; with
  ``FASTMCP_TASKS_ENCRYPTION_KEY`` it encrypts them, and a worker that cannot restore the caller fails the
  task instead of running it anonymously (as the tasks server's default actor). Without the key a shared
  backend would hold every caller's token in plain text and could run a task as nobody: refused at start.
- **Scope.** fastmcp-tasks files each task under the caller's access token (``client_id``, and ``sub``):
  a task id from another actor is answered "not found", exactly like an id that never existed. Without
  authentication (stdio: one client per process; loopback HTTP) every task is in one anonymous scope and
  the id itself (256 random bits, only ever sent to the client that started it) is the capability; on a
  shared backend that holds across every replica of the deployment.

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
from .flags import StartupRefused
from .observe import add_health_check
from .task_backend import ENCRYPTION_KEY_ENV, TaskBackend, deployment_digest

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

    def __init__(
        self,
        server_name: str,
        *,
        concurrency: int = 4,
        backend: TaskBackend | None = None,
        deployment: str = "",
    ) -> None:
        """``backend``: where tasks live (default in memory); ``deployment``: what the replicas sharing a
        backend have in common (a database URL), naming their queue when ``backend.queue`` does not."""
        backend = backend or TaskBackend()
        if backend.shared:
            _require_snapshot_key(backend)
            # Every replica of the deployment computes the same name: that is what makes the queue shared.
            name = f"{server_name}.{backend.queue or deployment_digest(deployment or server_name)}"
        else:
            # In memory: tasks live as long as the process. The queue name is unique per instance so two
            # servers in one process (tests, an embedding host) never see each other's tasks.
            name = f"{server_name}-{secrets.token_hex(4)}"
        super().__init__(
            url=backend.url,
            name=name,
            concurrency=concurrency,
            minimum_check_interval=timedelta(milliseconds=20),
        )
        self.backend = backend
        self._deciders: dict[str, Decider] = {}
        self._asking: set[str] = set()

    def report_health(self, server: Any) -> None:
        """Report a shared backend in ``server``'s ``/health`` (not required: plain calls work without it,
        so a balancer keeps sending them)."""
        if self.backend.shared:
            add_health_check(server, "task state", self.backend_state, required=False)

    async def backend_state(self) -> str:
        """``/health``: the shared backend answers a PING (Sentinel and Cluster URLs are not probed)."""
        scheme = self.backend.url.split(":", 1)[0]
        if scheme not in ("redis", "rediss", "unix"):
            return f"{self.backend.shown} (not probed)"
        from redis.asyncio import Redis  # pydocket's own client library

        client = Redis.from_url(self.backend.url, socket_connect_timeout=2, socket_timeout=2)
        try:
            await client.ping()
        finally:
            await client.aclose()
        return f"{self.backend.shown} answers"

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


def _require_snapshot_key(backend: TaskBackend) -> None:
    """A shared backend only with fastmcp-tasks' snapshot encryption on (the module docstring says why)."""
    from fastmcp_tasks.settings import tasks_settings  # what its snapshot codec reads

    key = tasks_settings.encryption_key
    if key is None or not key.get_secret_value().strip():
        raise StartupRefused(
            f"--tasks-url {backend.shown} shares task state, which holds each caller's token and headers: "
            f"set {ENCRYPTION_KEY_ENV} (at least 32 random characters, the same on every replica) so they "
            "are stored encrypted, e.g. export "
            f"{ENCRYPTION_KEY_ENV}=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )


async def _long(decider: Decider, arguments: Mapping[str, Any]) -> bool:
    """The decider's answer; arguments it cannot read (the tool will refuse them) make a plain call, so
    the error comes back at once, in the tool's own words."""
    try:
        return await decider(arguments)
    except Exception:
        return False
