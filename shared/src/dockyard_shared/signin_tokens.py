"""What ``--auth jwt`` checks in a token beyond FastMCP's JWTVerifier, and which tools its scopes reach.

See :mod:`dockyard_shared.signin` for the flags and how the server publishes where to sign in.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Sequence
from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.auth import AccessToken
from fastmcp.server.auth.providers.introspection import IntrospectionTokenVerifier
from fastmcp.server.auth.providers.jwt import JWTVerifier
from fastmcp.server.dependencies import get_access_token
from fastmcp.server.middleware import Middleware, MiddlewareContext

from .problems import PermissionDenied
from .toolsets import _is_read_only

__all__ = ["IntrospectedVerifier", "ScopeGate", "SignInVerifier"]

MAX_ACTOR = 100  # characters of an actor taken from a claim (the tasks server's longest name)

log = logging.getLogger("dockyard.signin")


class _Actor:
    """What every sign-in checks after the provider's own checks: ``iat``/``nbf`` at most ``clock_skew``
    seconds ahead, and the caller is the ``actor_claim`` (one short line), from ``allowed_actors`` when
    that is not empty; the actor becomes the token's ``client_id``."""

    clock_skew: float
    actor_claim: str
    allowed_actors: frozenset[str]
    needs_expiry: bool

    def _actor_checks(self, clock_skew: float, actor_claim: str, allowed_actors: Collection[str]) -> None:
        self.clock_skew = clock_skew
        self.actor_claim = actor_claim
        self.allowed_actors = frozenset(allowed_actors)

    def _checked(self, verified: AccessToken | None) -> AccessToken | None:
        if verified is None:
            return None
        claims = verified.claims or {}
        refusal = self._refusal(claims)
        if refusal:
            log.info("Bearer token refused: %s", refusal)
            return None
        actor = claims[self.actor_claim].strip()
        return verified.model_copy(update={"client_id": actor})

    def _refusal(self, claims: dict[str, Any]) -> str | None:
        if self.needs_expiry and not isinstance(claims.get("exp"), int | float):
            return "it has no expiry (exp)"
        ahead = time.time() + self.clock_skew
        for claim in ("iat", "nbf"):
            value = claims.get(claim)
            if value is not None and (not isinstance(value, int | float) or value > ahead):
                return f"its {claim} is in the future, beyond the allowed clock skew of {self.clock_skew:g}s"
        actor = claims.get(self.actor_claim)
        if not isinstance(actor, str) or not actor.strip():
            return f"it has no {self.actor_claim!r} claim to name the caller"
        actor = actor.strip()
        if len(actor) > MAX_ACTOR or any(ord(ch) < 32 or ord(ch) == 127 for ch in actor):
            return f"its {self.actor_claim!r} claim is not one short line"
        if self.allowed_actors and actor not in self.allowed_actors:
            return f"{actor!r} is not among the allowed actors (--auth-allowed-actor)"
        return None


class SignInVerifier(_Actor, JWTVerifier):
    """FastMCP's JWT verification (signature against the JWKS, issuer, audience, expiry, required scopes),
    then an expiry is required and the checks of :class:`_Actor`."""

    needs_expiry = True

    def __init__(
        self, *, clock_skew: float, actor_claim: str, allowed_actors: Collection[str] = (), **options: Any
    ) -> None:
        super().__init__(**options)
        self._actor_checks(clock_skew, actor_claim, allowed_actors)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self._checked(await super().load_access_token(token))


class IntrospectedVerifier(_Actor, IntrospectionTokenVerifier):
    """FastMCP's RFC 7662 introspection (the provider says the token is active; audience, expiry, required
    scopes), then the checks of :class:`_Actor` on the introspection answer."""

    needs_expiry = False  # the provider answered "active" for this very request

    def __init__(
        self, *, clock_skew: float, actor_claim: str, allowed_actors: Collection[str] = (), **options: Any
    ) -> None:
        super().__init__(**options)
        self._actor_checks(clock_skew, actor_claim, allowed_actors)

    async def verify_token(self, token: str) -> AccessToken | None:
        return self._checked(await super().verify_token(token))


def _read_only(tool: Any) -> bool:
    return _is_read_only(getattr(tool, "annotations", None))


class ScopeGate(Middleware):
    """A signed-in caller with ``read_scope`` sees and calls the read-only tools, one with ``write_scope``
    every tool; a call it may not make is refused saying which scope it needs. A call without a token
    (stdio) is not gated: install this only on a server that signs callers in."""

    def __init__(self, server: FastMCP, *, read_scope: str, write_scope: str) -> None:
        self._server = server
        self._read = read_scope
        self._write = write_scope

    def _allows(self, scopes: Collection[str], read_only: bool) -> bool:
        return self._write in scopes or (read_only and self._read in scopes)

    async def on_list_tools(self, context: MiddlewareContext[Any], call_next: Any) -> Sequence[Any]:
        tools = await call_next(context)
        token = get_access_token()
        if token is None:
            return tools
        return [tool for tool in tools if self._allows(token.scopes, _read_only(tool))]

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        token = get_access_token()
        if token is not None:
            tool = await self._server.get_tool(context.message.name)
            if tool is not None and not self._allows(token.scopes, _read_only(tool)):
                needed = self._read if _read_only(tool) else self._write
                raise ToolError(
                    PermissionDenied(
                        f"{context.message.name!r} needs the scope {needed!r}, and this sign-in "
                        f"({token.client_id}) was not granted it.",
                        next_step="Tell the user: sign in again asking for that scope, or ask the identity "
                        "provider's admin to grant it. Meanwhile use the tools this server lists.",
                    ).for_model()
                )
        return await call_next(context)
