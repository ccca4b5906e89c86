"""Ask the user to confirm a destructive action, in whichever way the client's protocol era allows.

* 2025-11-25 connections: a server-initiated ``elicitation/create`` request (``ctx.elicit``).
* 2026-07-28 connections have no back-channel: the tool returns an ``InputRequiredResult`` carrying the
  elicitation; the client asks the user and retries the call with the answer in ``input_responses``.
* A client that declared no elicitation capability cannot ask: the caller then requires an explicit
  ``confirm=true`` argument instead.

Usage in a tool::

    answer = await ask_to_confirm(ctx, "Drop table orders?")
    if isinstance(answer, InputRequiredResult):
        return answer               # the client asks the user and calls again
    if answer is Confirmation.UNSUPPORTED: ...
"""

from __future__ import annotations

from enum import StrEnum

import mcp.types as mt
from fastmcp import Context
from fastmcp.server.elicitation import AcceptedElicitation
from pydantic import BaseModel, Field

__all__ = ["Confirmation", "ask_to_confirm"]

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


async def ask_to_confirm(ctx: Context, message: str) -> Confirmation | mt.InputRequiredResult:
    if ctx._is_modern_protocol():
        responses = ctx.input_responses or {}
        if _KEY in responses:
            response = responses[_KEY]
            accepted = (
                getattr(response, "action", None) == "accept"
                and (getattr(response, "content", None) or {}).get("confirm") is True
            )
            return Confirmation.ACCEPTED if accepted else Confirmation.DECLINED
        if not _client_can_elicit(ctx):
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
