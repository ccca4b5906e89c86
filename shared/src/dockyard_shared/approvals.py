"""The approval card: consent for a destructive action where the host renders MCP Apps but cannot ask.

A client that declares the UI extension (:func:`dockyard_shared.apps.client_shows_views`) but not elicitation
cannot answer :func:`dockyard_shared.confirm.require_confirmation`'s question. For such a client the
destructive call does not run: it answers *pending* (:func:`pending_result`), naming the action and a
one-time approval id, and the host shows the card (``ui://dockyard/approval``, named by every tool that takes
``confirm``). The card's Approve / Reject buttons call :func:`resolve_approval`, an app-only tool (hosts keep
it from the model), which re-invokes the stored tool call once: the tool runs again from the start (every
check, the same code path as after an elicitation "accept") and its ``require_confirmation`` finds the grant
this module holds for exactly that call.

Why a server-side record and not an argument: whatever is in ``arguments`` the model could have written. The
record (tool, arguments, the question the person saw) stays in the server, keyed by an id of 256 random
bits; the grant is a context variable set only while ``resolve_approval`` runs the stored call, so no
argument or header can claim it.

Rules: an id is single-use, expires after :data:`LIFETIME_S`, and is bound to the caller's scope: the
2025-11-25 session, and the signed-in actor (token client id and subject) where there is one. 2026-07-28
requests have no session, so there it is the actor; without sign-in (stdio: one client per process; loopback
HTTP) the id itself is the capability. If what the action would do changed since the card was shown (the
question the tool asks now differs), it is refused and nothing runs.

The honest limit: app-only visibility is enforced by the host, as elicitation's form is: a host that let the
model call ``resolve_approval`` with an id it saw would let the model approve. The id is kept out of the text
the model reads (it is in ``structuredContent``, which the ext-apps spec keeps out of the model's context).
"""

from __future__ import annotations

import secrets
import time
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import mcp.types as mt
from fastmcp import Context, FastMCP
from fastmcp.dependencies import CurrentContext
from fastmcp.server.dependencies import get_access_token
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools import ToolResult
from pydantic import Field

from .annotations import DESTRUCTIVE
from .apps import add_view, client_shows_views, load_view, view_meta
from .fastmcp_compat import is_modern_protocol
from .icons import tool_icons
from .problems import Conflict, NotFound

__all__ = [
    "APPROVAL_URI",
    "LIFETIME_S",
    "RESOLVE_TOOL",
    "approval_meta",
    "claim_grant",
    "install",
    "installed_on",
    "pending_result",
]

APPROVAL_URI = "ui://dockyard/approval"
RESOLVE_TOOL = "resolve_approval"
LIFETIME_S = 600  # ten minutes: long enough to read the card, short enough that the world has not moved on
_MAX_PER_SCOPE = 20  # awaiting approvals one caller may hold; the oldest goes first
_MAX_ALL = 1_000  # in all, per server: each holds a call's arguments

# The clock, wall time so the card can show when an approval expires (tests replace it).
_now = time.time


@dataclass
class _Approval:
    id: str
    tool: str
    arguments: dict[str, Any]
    question: str
    scope: tuple[str, str]
    expires: float
    outcome: str | None = None  # "approved" / "rejected" once used; kept until it would have expired

    def public(self, status: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": status,
            "tool": self.tool,
            "action": self.question,
            "expires_at": datetime.fromtimestamp(self.expires, UTC).isoformat(timespec="seconds"),
        }


@dataclass
class _Store:
    """The approvals of one server, awaiting or recently used, oldest first."""

    items: OrderedDict[str, _Approval] = field(default_factory=OrderedDict)

    def _purge(self, now: float) -> None:
        for key in [key for key, item in self.items.items() if item.expires <= now - LIFETIME_S]:
            del self.items[key]  # expired a whole lifetime ago: no longer worth a precise refusal

    def add(
        self, tool: str, arguments: Mapping[str, Any], question: str, scope: tuple[str, str]
    ) -> _Approval:
        now = _now()
        self._purge(now)
        mine = [key for key, item in self.items.items() if item.scope == scope and item.outcome is None]
        for key in mine[: max(0, len(mine) - _MAX_PER_SCOPE + 1)]:
            del self.items[key]
        while len(self.items) >= _MAX_ALL:
            self.items.popitem(last=False)
        approval = _Approval(
            id=secrets.token_urlsafe(32),  # 256 random bits
            tool=tool,
            arguments=dict(arguments),
            question=question,
            scope=scope,
            expires=now + LIFETIME_S,
        )
        self.items[approval.id] = approval
        return approval

    def take(self, approval_id: str, scope: tuple[str, str], outcome: str) -> _Approval:
        """The awaiting approval ``approval_id`` of ``scope``, marked used; a Problem if there is none."""
        item = self.items.get(approval_id)
        if item is None or item.scope != scope:
            # Another session's or user's id is answered exactly like one that never existed.
            raise NotFound(
                "No approval awaits under this id for this connection: it was never issued here, it belongs "
                "to another session or user, or it expired long ago. Nothing was done.",
                next_step="Ask the assistant to make the request again; a new card will ask you.",
            )
        if item.outcome is not None:
            raise Conflict(
                f"This approval was already used ({item.outcome}); an approval counts once. Nothing more "
                "was done.",
                next_step="Ask the assistant to make the request again if you want it done again.",
            )
        if item.expires <= _now():
            item.outcome = "expired"
            raise Conflict(
                f"This approval expired at {item.public('expired')['expires_at']} ({LIFETIME_S // 60} "
                "minutes after it was asked). Nothing was done.",
                next_step="Ask the assistant to make the request again; a new card will ask you.",
            )
        item.outcome = outcome
        return item


# One store per server (servers in one process, as in tests, never see each other's ids).
_stores: weakref.WeakKeyDictionary[FastMCP, _Store] = weakref.WeakKeyDictionary()

# The tool call being served (name, arguments as the client sent them), set by _CurrentCall.
_current_call: ContextVar[tuple[str, dict[str, Any]] | None] = ContextVar(
    "dockyard_current_call", default=None
)
# Set only by resolve_approval while it re-runs an approved call: the record that call may claim once.
_grant: ContextVar[_Approval | None] = ContextVar("dockyard_approval_grant", default=None)


class _CurrentCall(Middleware):
    """Keeps the tool call being served in a context variable, for :func:`pending_result` to store; lists
    ``resolve_approval`` and the card only to clients that render views (no other client can be shown a
    card, and the lists a model reads stay as they were; the ext-apps spec lets a server leave UI-only
    resources out)."""

    async def on_list_tools(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        tools = await call_next(context)
        if _shows_views(context):
            return tools
        return [tool for tool in tools if tool.name != RESOLVE_TOOL]

    async def on_list_resources(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        resources = await call_next(context)
        if _shows_views(context):
            return resources
        return [resource for resource in resources if str(resource.uri) != APPROVAL_URI]

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        message = context.message
        token = _current_call.set((message.name, dict(message.arguments or {})))
        try:
            return await call_next(context)
        finally:
            _current_call.reset(token)


def _shows_views(context: MiddlewareContext[Any]) -> bool:
    return context.fastmcp_context is not None and client_shows_views(context.fastmcp_context)


def _scope(ctx: Context) -> tuple[str, str]:
    """(session, actor) of the request: the 2025-11-25 session id (2026-07-28 has no session), and the
    signed-in caller's token client id and subject."""
    session = "" if is_modern_protocol(ctx) else f"session:{ctx.session_id}"
    token = get_access_token()
    actor = ""
    if token is not None:
        subject = (getattr(token, "claims", None) or {}).get("sub", "")
        actor = f"actor:{token.client_id}|{subject}"
    return session, actor


def installed_on(server: FastMCP | None) -> bool:
    """Does ``server`` serve the approval card (it has a tool that takes ``confirm``)?"""
    return server is not None and server in _stores


def approval_meta() -> dict[str, Any]:
    """The ``meta=`` of a tool that takes ``confirm``: its results render on the approval card."""
    return view_meta(APPROVAL_URI)


def claim_grant(question: str) -> bool:
    """Is the running call the one ``resolve_approval`` is re-running, asking the question the person
    approved? Claimed once: a second question in the same call needs its own approval. Raises
    :class:`Conflict` when the question changed (what the action would do is no longer what was shown)."""
    grant = _grant.get()
    current = _current_call.get()
    if grant is None or current is None or current[0] != grant.tool:
        return False
    _grant.set(None)
    if question != grant.question:
        raise Conflict(
            "What this action would do changed since the user approved it, so the approval does not cover "
            f"it; nothing was done. Approved: {grant.question!r}. Now: {question!r}.",
            next_step="Tell the user what changed; call the tool again if they still want it (a new card "
            "will ask them).",
        )
    return True


def pending_result(ctx: Context, question: str) -> ToolResult | None:
    """The *pending* answer for the running tool call (the card shows ``question``), or None when this
    server has no card or no call is being served (then the caller refuses as before)."""
    store = _stores.get(ctx.fastmcp) if ctx.fastmcp is not None else None
    current = _current_call.get()
    if store is None or current is None:
        return None
    tool, arguments = current
    approval = store.add(tool, arguments, question, _scope(ctx))
    minutes = LIFETIME_S // 60
    text = (
        f"Awaiting the user's approval; nothing has been done yet. The user sees this on an approval card: "
        f"{question!r}. If they approve it there within {minutes} minutes, the card runs this call once and "
        "shows them its result; if they reject it or let it expire, nothing happens. Do not call this tool "
        "again for it: tell the user it awaits their approval on the card, and wait for them."
    )
    # isError: the action did not happen, so nothing may read this as done; and a successful result would
    # have to match the tool's output schema, which a pending approval does not.
    return ToolResult(
        content=[mt.TextContent(type="text", text=text)],
        structured_content={"approval": approval.public("pending")},
        meta={"ui": {"resourceUri": APPROVAL_URI}},
        is_error=True,
    )


def install(server: FastMCP) -> None:
    """Serve the approval card on ``server``: the view, the app-only ``resolve_approval`` tool, and the
    middleware that remembers the call being served. Idempotent."""
    if server in _stores:
        return
    store = _stores[server] = _Store()
    add_view(
        server,
        APPROVAL_URI,
        load_view("dockyard_shared", "views/approval.html"),
        name="approval",
        description="Approve or reject a destructive action the assistant asked for; shows exactly what it "
        "will do.",
    )
    server.add_middleware(_CurrentCall())

    @server.tool(
        name=RESOLVE_TOOL,
        annotations=DESTRUCTIVE,
        meta=view_meta(APPROVAL_URI, visibility=("app",)),
        output_schema=None,
        icons=tool_icons(server.icons),
    )
    async def resolve_approval(
        approval_id: Annotated[str, Field(min_length=1, max_length=100, description="From the card.")],
        decision: Literal["approve", "reject"],
        ctx: Context = CurrentContext(),
    ) -> ToolResult:
        """Approve or reject an action awaiting the user's approval (the approval card's buttons).

        Use when: the person clicked Approve or Reject on the card (app-only: hosts keep it from the model).
        Not for: the model; approving for the user is not consent.
        Returns: approve: the action's own result; reject: what was not done.
        Limits: each id once, within 10 minutes, from the session (and user) it was issued to.
        """
        approval = store.take(approval_id, _scope(ctx), "approved" if decision == "approve" else "rejected")
        if decision == "reject":
            return ToolResult(
                content=[
                    mt.TextContent(
                        type="text",
                        text=f"The user rejected it; nothing was done: {approval.question!r}.",
                    )
                ],
                structured_content={"approval": approval.public("rejected")},
            )
        token = _grant.set(approval)
        try:
            # Through the server's middleware again: scope gates, audit, wording of failures, the lot.
            result = await server.call_tool(approval.tool, approval.arguments)
        finally:
            _grant.reset(token)
        meta = dict(result.meta or {})
        meta["dockyard/approval"] = approval.public("approved")
        return ToolResult(
            content=result.content,
            structured_content=result.structured_content,
            meta=meta,
            is_error=result.is_error,
        )
