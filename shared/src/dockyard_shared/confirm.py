"""Ask the user to confirm a destructive action, in whichever way the client's protocol era allows.

* 2025-11-25 connections: a server-initiated ``elicitation/create`` request (``ctx.elicit``).
* 2026-07-28 connections have no back-channel: the tool returns an ``InputRequiredResult`` carrying the
  elicitation; the client asks the user and retries the call with the answer in ``input_responses``.
* A call running as an MCP task (``--tasks``, :mod:`dockyard_shared.long_calls`; 2026-07-28 only) asks the
  same way: the returned ``InputRequiredResult`` puts the task in ``input_required``, the client answers with
  ``tasks/update`` and the tool runs again with the answer in ``input_responses``. Such a call runs as a task
  only for a client that declared elicitation (the worker cannot see the client's capabilities).
* A client that declared no elicitation capability cannot ask the user; if it renders MCP Apps (declared
  the UI extension), the call does not run and answers *pending*: the host shows the approval card, whose
  Approve runs the same call once more with a server-held grant (:mod:`dockyard_shared.approvals`).

A ``confirm=true`` argument is something the model can set by itself, so it is not the user's consent.
:func:`require_confirmation` (what tools call) therefore accepts it only where the operator started the
server with ``--trust-model-confirmation``; otherwise a client that cannot ask gets a refusal that says how
the operator can enable it. Usage in a tool, whose ``confirm`` parameter is typed :data:`Confirm`::

    pending = await require_confirmation(
        ctx, "Drop table orders?", confirm=confirm, exposure=exposure,
        declined="The user declined dropping orders; nothing was changed.",
    )
    if pending is not None:
        return pending              # 2026-07-28: the client asks the user and calls again
    ...                             # confirmed: go ahead
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import mcp.types as mt
from fastmcp import Context
from fastmcp.server.elicitation import AcceptedElicitation
from fastmcp.tools import ToolResult
from pydantic import BaseModel, Field

from . import approvals
from .apps import client_shows_views
from .fastmcp_compat import is_modern_protocol
from .problems import PermissionDenied
from .progress import running_as_task
from .toolsets import Exposure

__all__ = ["Confirm", "Confirmation", "ask_to_confirm", "client_can_elicit", "require_confirmation"]

# The parameter every destructive tool takes (``confirm: Confirm = False``), described the same way everywhere.
Confirm = Annotated[bool, Field(description="The user agreed; counts only with --trust-model-confirmation.")]

_KEY = "dockyard_confirm"
_SCHEMA = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "title": "Confirm", "description": "Go ahead?"}},
    "required": ["confirm"],
}


class _Answer(BaseModel):
    confirm: bool = Field(title="Confirm", description="Go ahead?")


class Confirmation(StrEnum):
    ACCEPTED = "accepted"
    DECLINED = "declined"
    UNSUPPORTED = "unsupported"


def _client_can_elicit(ctx: Context) -> bool:
    try:
        capabilities = ctx.session.client_capabilities
    except Exception:
        return False
    return bool(capabilities is not None and getattr(capabilities, "elicitation", None) is not None)


def client_can_elicit(ctx: Context) -> bool:
    """Did the client declare the elicitation capability (so it can ask its user)?"""
    return _client_can_elicit(ctx)


async def ask_to_confirm(ctx: Context, message: str) -> Confirmation | mt.InputRequiredResult:
    as_task = running_as_task()
    if as_task or is_modern_protocol(ctx):
        responses = ctx.input_responses or {}
        if _KEY in responses:
            response = responses[_KEY]
            accepted = (
                getattr(response, "action", None) == "accept"
                and (getattr(response, "content", None) or {}).get("confirm") is True
            )
            return Confirmation.ACCEPTED if accepted else Confirmation.DECLINED
        if not as_task and not _client_can_elicit(ctx):  # a task: the client's elicitation was checked
            return Confirmation.UNSUPPORTED
        request = mt.ElicitRequest(
            params=mt.ElicitRequestFormParams(message=message, requested_schema=_SCHEMA)
        )
        return mt.InputRequiredResult(input_requests={_KEY: request})
    if not _client_can_elicit(ctx):
        return Confirmation.UNSUPPORTED
    # The same one-field form as the 2026-07-28 path, so a client answers both alike.
    result = await ctx.elicit(message, response_type=_Answer)
    if isinstance(result, AcceptedElicitation) and result.data.confirm is True:
        return Confirmation.ACCEPTED
    return Confirmation.DECLINED


async def require_confirmation(
    ctx: Context, message: str, *, confirm: bool, exposure: Exposure, declined: str
) -> mt.InputRequiredResult | ToolResult | None:
    """``None`` when the action may go ahead; an ``InputRequiredResult`` or a pending-approval
    ``ToolResult`` for the tool to return as is.

    Goes ahead when the user accepts through elicitation or approves on the approval card (the call is then
    re-run with ``message`` unchanged), or when ``confirm`` is true and the operator chose
    ``--trust-model-confirmation``. Raises :class:`PermissionDenied` with ``declined`` when the user
    declines, and one naming the flag when the client can neither ask the user nor show the card.
    """
    if approvals.claim_grant(message):  # the card's Approve re-running this very call
        return None
    if confirm and exposure.trust_model_confirmation:
        return None
    answer = await ask_to_confirm(ctx, message)
    if isinstance(answer, mt.InputRequiredResult):
        return answer
    if answer is Confirmation.ACCEPTED:
        return None
    if answer is Confirmation.DECLINED:
        raise PermissionDenied(
            declined, next_step="Ask the user what they want instead; do not retry the same call."
        )
    if client_shows_views(ctx):
        pending = approvals.pending_result(ctx, message)
        if pending is not None:
            return pending
    if exposure.trust_model_confirmation:
        raise PermissionDenied(
            "This action is destructive and this client cannot ask the user to confirm it.",
            next_step="Ask the user in the conversation; if they agree, call again with confirm=true.",
        )
    raise PermissionDenied(
        "This action is destructive, this client cannot ask the user to confirm it, and the server does "
        "not take the model's confirm=true as consent.",
        next_step="Tell the user: use a client that supports elicitation, or restart the server with "
        "--trust-model-confirmation to let confirm=true stand for their consent.",
    )
