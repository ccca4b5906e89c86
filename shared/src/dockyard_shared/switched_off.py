"""A call to a tool the server has but does not serve answers how to switch it on, not "Unknown tool".

:func:`dockyard_shared.toolsets.install` registers only the tools the operator's flags select, so a model that
read about ``execute`` (a README, an earlier session, another server's list) and calls it would be told the
tool does not exist. :class:`SwitchedOffTools` catches FastMCP's unknown-tool error for exactly the names the
server knows but left out, and answers with the reason (a toolset that is off, ``--read-only``,
``--exclude-tools``, a toolset that cannot run here) and the flag that turns it on. The names of toolsets that
were never registered (off by default, so their modules are not imported at start-up) are learnt on the
first such call, by running their register functions with a registrar that registers nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastmcp.exceptions import NotFoundError, ToolError
from fastmcp.server.middleware import Middleware, MiddlewareContext

from .problems import PermissionDenied

__all__ = ["SwitchedOffTools", "switched_off_problem"]


class SwitchedOffTools(Middleware):
    """Answer a call to a known but unserved tool with why it is off and how to switch it on.

    ``why_off(name)`` gives the :class:`~dockyard_shared.problems.Problem` for a tool this server has but
    does not serve, or ``None`` for a name it does not know (FastMCP's own "Unknown tool" answer stands).
    """

    def __init__(self, why_off: Callable[[str], PermissionDenied | None]) -> None:
        self._why_off = why_off

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        try:
            return await call_next(context)
        except NotFoundError:
            problem = self._why_off(context.message.name)
            if problem is None:
                raise
            raise ToolError(problem.for_model()) from None


def switched_off_problem(tool: str, reason: str, how: str) -> PermissionDenied:
    """The problem a call to switched-off ``tool`` answers with: ``reason`` why it is off, ``how`` to turn it on."""
    return PermissionDenied(
        f"The tool {tool!r} exists but is switched off on this server: {reason}.",
        next_step=f"Tell the user: {how}, then reconnect. Meanwhile use the tools this server lists.",
    )
