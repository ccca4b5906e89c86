"""The Streamable HTTP face of Dockyard servers: one ASGI app for one server or for many.

Every app built here has, whatever FastMCP's defaults are:

* Host/Origin validation (DNS-rebinding protection) in strict mode: a request whose ``Host`` is not
  this server (or loopback) gets 421, a browser ``Origin`` that is not allowed gets 403;
* an optional bearer token, compared in constant time; ``/health`` stays open so a supervisor can
  probe it without the secret;
* idle sessions reaped after ``session_idle_timeout`` seconds, sessions never used after ``initialize``
  after ``session_init_timeout``, and at most ``max_sessions_per_client`` per client (every loopback address one client)
  (:mod:`dockyard_shared.http_sessions`);
* ``GET /health`` answering ``{"status": "ok", "servers": [...], "checks": {...}}``, per server and
  dependency what is up, 503 when a required one is down (:mod:`dockyard_shared.health`);
* ``GET /metrics`` in Prometheus text format, behind the same authentication as the MCP endpoint
  (:mod:`dockyard_shared.metrics`);
* a malformed JSON-RPC envelope POSTed in the 2025-11-25 era answered with its JSON-RPC error
  (:class:`EnvelopeCheckMiddleware`), as over stdio.

The bounds on connections (``header_timeout``, ``body_timeout``, ``max_connections``) are the server's, not the app's:
the runner hands them to uvicorn (:mod:`dockyard_shared.http_connections`).
"""

from __future__ import annotations

import hmac
import json
from collections import deque
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field

import anyio
from fastmcp import FastMCP
from fastmcp.server.http import HostOriginGuardMiddleware
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .http_sessions import SessionGuard
from .operator_endpoints import HEALTH_PATH, operator_routes
from .stdio import MAX_MESSAGE_BYTES, envelope_error

__all__ = ["HttpOptions", "build_http_app", "is_loopback"]

MAX_REQUEST_HEAD_BYTES = 16 * 1024  # a request head unfinished at this size gets 400 (h11's default)


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
    session_init_timeout: float = 10.0
    max_sessions_per_client: int = 100
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 1000
    # --trusted-proxy: networks whose X-Forwarded-For names the client (http_forwarded.py); none: the peer.
    trusted_proxies: Sequence[str] = field(default_factory=tuple)


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


class EnvelopeCheckMiddleware:
    """Answer a malformed JSON-RPC envelope POSTed to an MCP endpoint in the 2025-11-25 era with HTTP 400
    and the JSON-RPC error :func:`dockyard_shared.stdio.envelope_error` gives it.

    Why: the SDK's 2025-11-25 Streamable HTTP transport validates a POST body against its message union,
    so a non-object, a batch, a missing ``jsonrpc`` or a non-string ``method`` gets -32602 with
    pydantic's whole error text, and a request whose ``id`` is invalid (``{}``, null, true) validates as
    a notification and is accepted (202) with no answer. Its 2026-07-28 transport checks the envelope
    itself, so only the other requests are checked here; the SDK picks the era the same way (an
    ``MCP-Protocol-Version`` header that is absent or a handshake version is 2025-11-25).

    Only POSTs to ``endpoints`` with a JSON content type are read (anything else gets the SDK's own
    answer, e.g. 415). A body that passes is handed to the inner app byte for byte, followed by whatever
    ``receive`` yields next (``http.disconnect``); the response is never touched, so SSE streams still
    stream. A body over ``max_body_size`` (declared or as received) is not checked: it goes on to the
    SDK, whose own limit answers 413, and at most ``max_body_size`` plus one chunk is held here.
    """

    def __init__(
        self, app: ASGIApp, endpoints: Collection[str], max_body_size: int = MAX_MESSAGE_BYTES
    ) -> None:
        self.app = app
        self.endpoints = frozenset(endpoints)
        self.max_body_size = max_body_size

    def _applies(self, scope: Scope) -> bool:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in self.endpoints:
            return False
        headers = scope.get("headers") or ()

        def header(name: bytes) -> str | None:  # the first one, as the SDK reads them
            return next((v.decode("latin-1") for k, v in headers if k.lower() == name), None)

        era = header(MCP_PROTOCOL_VERSION_HEADER.encode())
        if era is not None and era not in HANDSHAKE_PROTOCOL_VERSIONS:
            return False  # a 2026-07-28 request (or an unknown version the SDK refuses itself)
        # The SDK's own Content-Type test: anything else is its 415, not an envelope to check.
        media_types = (header(b"content-type") or "").split(";")[0].split(",")
        if not any(part.strip() == "application/json" for part in media_types):
            return False
        declared = header(b"content-length")
        return declared is None or not declared.isdigit() or int(declared) <= self.max_body_size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._applies(scope):
            await self.app(scope, receive, send)
            return
        body, complete, held = bytearray(), False, deque[Message]()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                held.append(message)  # a disconnect before the body ended
                break
            body += message.get("body", b"")
            if not message.get("more_body", False):
                complete = True
                break
            if len(body) > self.max_body_size:
                break  # the SDK answers 413
        if complete and len(body) <= self.max_body_size and (error := envelope_error(bytes(body))):
            payload = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 400,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(payload)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": payload})
            return
        held.appendleft({"type": "http.request", "body": bytes(body), "more_body": not complete})

        async def replay() -> Message:
            return held.popleft() if held else await receive()

        await self.app(scope, replay, send)


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

    operator, metrics = operator_routes(servers, options.auth_token)

    guards = [
        SessionGuard(
            inner,
            endpoint=options.path,
            init_timeout=options.session_init_timeout,
            idle_timeout=options.session_idle_timeout,
            per_client=options.max_sessions_per_client,
        )
        for inner in inner_apps.values()
    ]
    routes: list[Route | Mount] = [*operator]
    for name, guard in zip(inner_apps, guards, strict=True):
        metrics.count_sessions(name, lambda guard=guard: guard.open_sessions)
        routes.append(Mount(f"/{name}" if prefixed else "", app=guard))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # Starlette does not run a mounted app's lifespan; each FastMCP app's session manager
        # lives in its lifespan, so we enter them all here.
        async with AsyncExitStack() as stack:
            for inner in inner_apps.values():
                await stack.enter_async_context(inner.router.lifespan_context(inner))
            tasks = await stack.enter_async_context(anyio.create_task_group())
            for guard in guards:
                tasks.start_soon(guard.run)
            yield
            tasks.cancel_scope.cancel()

    middleware = []
    if options.trusted_proxies:
        from .http_forwarded import ForwardedClient, parse_networks

        middleware.append(Middleware(ForwardedClient, networks=parse_networks(options.trusted_proxies)))
    middleware += [
        Middleware(
            HostOriginGuardMiddleware,
            allowed_hosts=[*options.allowed_hosts, options.host],
            allowed_origins=list(options.allowed_origins),
            mode="strict",
        )
    ]
    if options.auth_token:
        middleware.append(Middleware(BearerTokenMiddleware, token=options.auth_token))
    # Innermost: a body is read only once the request got past the guard and the token check.
    endpoints = [f"/{name}{options.path}" if prefixed else options.path for name in servers]
    middleware.append(Middleware(EnvelopeCheckMiddleware, endpoints=endpoints))
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.metrics = metrics  # the runner adds what only the server knows (open event streams)
    return app
