"""MCP roots: without ``--root``, each request serves the folders the client shares as roots.

How a client shares them depends on the protocol era:

* 2025-11-25 (sessions): the server sends ``roots/list`` on the session's back-channel. The answer is kept
  per session until the client sends ``notifications/roots/list_changed``.
* 2026-07-28 (no sessions, no server-initiated requests, no notifications from the client): a request
  that needs the roots is answered with an ``InputRequiredResult`` embedding ``roots/list``; the client
  retries it with the roots in ``input_responses``. Nothing outlives the request, so every request asks.

A client that declares no ``roots`` capability is never asked; the tool then says that no repository is
served and how to fix it (:meth:`~.context.GitContext.workspace`).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any

import anyio
import mcp.types as mt
from fastmcp import Context
from fastmcp.prompts.base import InputRequiredPromptResult
from fastmcp.resources.base import InputRequiredResourceResult
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import InputRequiredToolResult

from dockyard_shared.fastmcp_compat import is_modern_protocol

from .context import ClientRoots, GitContext

__all__ = ["ClientRootsMiddleware"]

log = logging.getLogger("dockyard.git")

_INPUT_KEY = "dockyard_git_roots"
_ASK_TIMEOUT_S = 10.0  # a client that never answers roots/list must not hold the request forever
_KEPT_SESSIONS = 256  # sessions whose roots are remembered (the oldest forgotten first)
_UNSUPPORTED = ClientRoots((), "the client does not share MCP roots")


class ClientRootsMiddleware(Middleware):
    """Runs every tool call, resource read and prompt with the client's roots served (see the module)."""

    def __init__(self, git: GitContext) -> None:
        self.git = git
        self._by_session: OrderedDict[str, ClientRoots] = OrderedDict()

    async def on_notification(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        if context.method == "notifications/roots/list_changed" and context.fastmcp_context is not None:
            self._by_session.pop(context.fastmcp_context.session_id, None)
        return await call_next(context)

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        return await self._with_roots(context, call_next, InputRequiredToolResult)

    async def on_read_resource(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        return await self._with_roots(context, call_next, InputRequiredResourceResult)

    async def on_get_prompt(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        return await self._with_roots(context, call_next, InputRequiredPromptResult)

    async def _with_roots(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any], ask: type
    ) -> Any:
        roots = await self.roots_of(context.fastmcp_context)
        if isinstance(roots, mt.InputRequiredResult):
            return ask(roots)
        with self.git.serving(roots):
            return await call_next(context)

    async def roots_of(
        self, ctx: Context | None, *, may_ask: bool = True
    ) -> ClientRoots | mt.InputRequiredResult:
        """The client's roots for this request; on a 2026-07-28 request that has not got them yet, the
        ``InputRequiredResult`` that asks for them (unless ``may_ask`` is false: completions cannot)."""
        if ctx is None or not _declares_roots(ctx):
            return _UNSUPPORTED
        if is_modern_protocol(ctx):
            answer = (ctx.input_responses or {}).get(_INPUT_KEY)
            if isinstance(answer, mt.ListRootsResult):
                return ClientRoots.from_uris([str(root.uri) for root in answer.roots])
            if not may_ask:
                return ClientRoots(
                    (), "the client shares its roots only with tool calls, resources and prompts"
                )
            return mt.InputRequiredResult(input_requests={_INPUT_KEY: mt.ListRootsRequest()})
        session = ctx.session_id
        known = self._by_session.get(session)
        if known is not None:
            self._by_session.move_to_end(session)
            return known
        try:
            with anyio.fail_after(_ASK_TIMEOUT_S):
                # send_request, not the deprecated list_roots(): same request, no deprecation warning.
                answer = await ctx.session.send_request(mt.ListRootsRequest(), mt.ListRootsResult)
        except Exception as error:  # the client's failure to answer, whatever its form, is not ours
            log.warning("the client did not answer roots/list: %s", error)
            return ClientRoots((), f"the client did not answer roots/list ({type(error).__name__})")
        roots = ClientRoots.from_uris([str(root.uri) for root in answer.roots])
        self._by_session[session] = roots
        if len(self._by_session) > _KEPT_SESSIONS:
            self._by_session.popitem(last=False)
        return roots

    async def known_roots(self, ctx: Context | None) -> ClientRoots:
        """The client's roots where the request cannot ask for them (completions)."""
        roots = await self.roots_of(ctx, may_ask=False)
        assert isinstance(roots, ClientRoots)
        return roots


def _declares_roots(ctx: Context) -> bool:
    try:
        capabilities = ctx.session.client_capabilities
    except Exception:  # no session (a background task): nothing to ask
        return False
    return capabilities is not None and capabilities.roots is not None
