"""The operator's endpoints of an HTTP app, ``GET /health`` and ``GET /metrics``, and who may read what.

``/health`` is open (a supervisor probes it without the secret) but shows each check's ``detail`` only to a
caller that passes the MCP endpoint's authentication; ``/metrics`` needs it. That authentication is the
runner's bearer token (``--auth-token``/``DOCKYARD_AUTH_TOKEN``) when one is set, else the servers' own
(a FastMCP ``auth`` provider, e.g. ``dockyard-tasks --actors``: any token one of them accepts), else none.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .health import Health, without_details
from .metrics import Metrics

__all__ = ["HEALTH_PATH", "METRICS_PATH", "operator_routes"]

HEALTH_PATH = "/health"
METRICS_PATH = "/metrics"


def bearer_of(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return (token.strip() or None) if scheme.lower() == "bearer" else None


def operator_routes(servers: Mapping[str, Any], auth_token: str | None) -> tuple[list[Route], Metrics]:
    """The two routes, and the :class:`Metrics` they expose (its middleware already on every server)."""
    checks = Health(servers)
    metrics = Metrics(servers)
    for name, server in servers.items():
        server.add_middleware(metrics.middleware(name))

    async def authorized(request: Request) -> bool:
        token = bearer_of(request)
        if auth_token:
            return token is not None and hmac.compare_digest(token.encode(), auth_token.encode())
        providers = [server.auth for server in servers.values()]
        if not providers or any(provider is None for provider in providers):
            return True  # the MCP endpoint itself is open (loopback, no token)
        for provider in providers:
            if token is not None and await provider.verify_token(token) is not None:
                return True
        return False

    async def health(request: Request) -> JSONResponse:
        status, body = await checks.report()
        return JSONResponse(body if await authorized(request) else without_details(body), status_code=status)

    async def metrics_endpoint(request: Request) -> Response:
        if not await authorized(request):
            return JSONResponse(
                {
                    "error": "invalid_token",
                    "error_description": "/metrics needs the MCP endpoint's bearer token.",
                },
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="dockyard", error="invalid_token"'},
            )
        return metrics.exposition()

    routes = [
        Route(HEALTH_PATH, health, methods=["GET"]),
        Route(METRICS_PATH, metrics_endpoint, methods=["GET"]),
    ]
    return routes, metrics
