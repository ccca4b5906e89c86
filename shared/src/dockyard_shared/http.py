"""The Streamable HTTP face of Dockyard servers: one ASGI app for one server or for many.

Every app built here has, whatever FastMCP's defaults are:

* Host/Origin validation (DNS-rebinding protection) in strict mode: a request whose ``Host`` is not
  this server (or loopback) gets 421, a browser ``Origin`` that is not allowed gets 403;
* an optional bearer token, compared in constant time; ``/health`` stays open so a supervisor can
  probe it without the secret;
* idle sessions reaped after ``session_idle_timeout`` seconds;
* ``GET /health`` answering ``{"status": "ok", "servers": [...]}``.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field

from fastmcp import FastMCP
from fastmcp.server.http import HostOriginGuardMiddleware
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["HttpOptions", "build_http_app", "is_loopback"]

HEALTH_PATH = "/health"


def is_loopback(host: str) -> bool:
    return host in {"127.0.0.1", "localhost", "::1", "[::1]"} or host.startswith("127.")


@dataclass(frozen=True)
class HttpOptions:
    host: str = "127.0.0.1"
    port: int = 8765
    path: str = "/mcp"
    auth_token: str | None = None
    allowed_hosts: Sequence[str] = field(default_factory=tuple)
    allowed_origins: Sequence[str] = field(default_factory=tuple)
    session_idle_timeout: float = 900.0


class BearerTokenMiddleware:
    """Require ``Authorization: Bearer <token>`` on every HTTP request but the health probe."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") == HEALTH_PATH:
            await self.app(scope, receive, send)
            return
        supplied = dict(scope.get("headers") or []).get(b"authorization", b"")
        if hmac.compare_digest(supplied, self._expected):
            await self.app(scope, receive, send)
            return
        body = json.dumps(
            {
                "error": "invalid_token",
                "error_description": "This Dockyard server requires 'Authorization: Bearer <token>'; "
                "the token is the one it was started with (--auth-token or DOCKYARD_AUTH_TOKEN).",
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="dockyard", error="invalid_token"'),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def build_http_app(servers: Mapping[str, FastMCP], options: HttpOptions, *, prefixed: bool) -> Starlette:
    """One app serving ``servers``.

    With ``prefixed=False`` (a single server) the endpoint is ``options.path``; with ``prefixed=True``
    each server is at ``/<name><options.path>`` (``dockyard serve all``).
    """
    if not servers:
        raise ValueError("build_http_app needs at least one server")
    if not prefixed and len(servers) != 1:
        raise ValueError("several servers need prefixed=True")

    inner_apps = {
        name: server.http_app(
            path=options.path,
            host_origin_protection=False,  # guarded once, below, for every mounted server
            session_idle_timeout=options.session_idle_timeout,
        )
        for name, server in servers.items()
    }

    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "servers": sorted(servers)})

    routes: list[Route | Mount] = [Route(HEALTH_PATH, health, methods=["GET"])]
    for name, inner in inner_apps.items():
        routes.append(Mount(f"/{name}" if prefixed else "", app=inner))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # Starlette does not run a mounted app's lifespan; each FastMCP app's session manager
        # lives in its lifespan, so we enter them all here.
        async with AsyncExitStack() as stack:
            for inner in inner_apps.values():
                await stack.enter_async_context(inner.router.lifespan_context(inner))
            yield

    middleware = [
        Middleware(
            HostOriginGuardMiddleware,
            allowed_hosts=[*options.allowed_hosts, options.host],
            allowed_origins=list(options.allowed_origins),
            mode="strict",
        )
    ]
    if options.auth_token:
        middleware.append(Middleware(BearerTokenMiddleware, token=options.auth_token))
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
