"""How every Dockyard server is constructed, so they all behave alike on the wire."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from fastmcp import FastMCP

from .errors import ProblemMiddleware
from .schema import LeanOutputSchemas

__all__ = ["new_server"]


def new_server(
    name: str, *, instructions: str, distribution: str | None = None, lifespan: Any = None
) -> FastMCP:
    """A FastMCP server with Dockyard's error handling.

    ``lifespan`` (a ``fastmcp.server.lifespan.lifespan`` function) holds what lives as long as the server:
    an HTTP client, a connection pool.

    ``mask_error_details`` is on: an unexpected exception's text (which may hold paths or secrets)
    never reaches the client; :class:`ProblemMiddleware` words expected failures for the model;
    :class:`LeanOutputSchemas` lists output schemas in the form clients validate fastest.
    """
    try:
        server_version = version(distribution or name)
    except PackageNotFoundError:
        server_version = "0.0.0"
    server = FastMCP(
        name, instructions=instructions, version=server_version, mask_error_details=True, lifespan=lifespan
    )
    server.add_middleware(ProblemMiddleware())
    server.add_middleware(LeanOutputSchemas())
    return server
