"""Who a call acts as: ``--actor`` (stdio, or everyone over HTTP), or the caller's own bearer token.

With ``--actors FILE`` the HTTP endpoint requires a bearer token from that file (FastMCP's token
verification, compared in constant time here) and each token's changes are recorded as its actor, so a
shared server records who did what. With ``--auth jwt`` (:mod:`dockyard_shared.signin`) the actor is the
claim ``--auth-actor-claim`` names in the caller's signed token.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from fastmcp.server.auth import AccessToken, TokenVerifier
from fastmcp.server.dependencies import get_access_token

__all__ = ["ActorTokens", "Actors"]


class ActorTokens(TokenVerifier):
    """Accepts exactly the tokens of the actor map; the token's actor becomes its client id."""

    def __init__(self, actors: Mapping[str, str]) -> None:
        super().__init__()
        self._actors = [(token.encode(), actor) for token, actor in actors.items()]

    async def verify_token(self, token: str) -> AccessToken | None:
        supplied = token.encode()
        found = None
        for known, actor in self._actors:  # every entry compared, so timing says nothing
            if hmac.compare_digest(supplied, known):
                found = actor
        if found is None:
            return None
        return AccessToken(token="[redacted]", client_id=found, scopes=[])


class Actors:
    def __init__(self, default: str, by_token: Mapping[str, str], *, signed_in: bool = False) -> None:
        self.default = default
        self.by_token = bool(by_token) or signed_in

    def current(self) -> str:
        if self.by_token:
            token = get_access_token()
            if token is not None and token.client_id:
                return token.client_id
        return self.default
