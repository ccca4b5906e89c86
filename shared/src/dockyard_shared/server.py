"""How every Dockyard server is constructed, so they all behave alike on the wire."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from fastmcp import FastMCP
from mcp.server.caching import CacheHint

from .errors import ProblemMiddleware
from .fastmcp_compat import DockyardServer, lowlevel_server
from .icons import package_icons
from .schema import ListedSchemas

__all__ = ["FIXED_LISTS", "LIST_TTL_MS", "ArgumentCompleter", "complete_arguments", "new_server"]

# What a Dockyard server lists is fixed for the life of its process (the selection flags are read at
# start, nothing is added later), so a 2026-07-28 client may keep these answers (``ttlMs``). Not
# ``resources/list`` (dockyard-tasks lists a resource per project, and says when that changes) and never
# ``resources/read``: FastMCP's own ``cache_ttl`` would cover both, so the hint is set per method instead.
FIXED_LISTS = ("tools/list", "prompts/list", "resources/templates/list", "server/discover")
LIST_TTL_MS = 3_600_000  # an hour: a restarted server with other flags is re-listed within it

# (argument name, the value typed so far, the arguments already given) -> candidate values.
ArgumentCompleter = Callable[[str, str, Mapping[str, str]], Awaitable[list[str]]]


def new_server(
    name: str, *, instructions: str, distribution: str | None = None, lifespan: Any = None
) -> FastMCP:
    """A FastMCP server with Dockyard's error handling (its session-state store made on first write:
    :class:`~dockyard_shared.fastmcp_compat.DockyardServer`).

    ``lifespan`` (a ``fastmcp.server.lifespan.lifespan`` function) holds what lives as long as the server:
    an HTTP client, a connection pool.

    ``mask_error_details`` is on: an unexpected exception's text (which may hold paths or secrets)
    never reaches the client; :class:`ProblemMiddleware` words expected failures for the model;
    :class:`ListedSchemas` lists output schemas in the form clients validate fastest, with their
    references inlined (FastMCP's own dereferencing pass is off: ``dereference_schemas=False``).
    """
    try:
        server_version = version(distribution or name)
    except PackageNotFoundError:
        server_version = "0.0.0"
    server = DockyardServer(
        name,
        instructions=instructions,
        version=server_version,
        icons=package_icons(distribution or name) or None,  # the server package's own icon files
        mask_error_details=True,
        lifespan=lifespan,
        dereference_schemas=False,  # ListedSchemas inlines references, without importing jsonref
    )
    server.add_middleware(ProblemMiddleware())
    server.add_middleware(ListedSchemas())
    # `cache_hints` is the SDK low-level server's public per-method table (mcp.server.caching); only the
    # way to it, FastMCP's `_mcp_server`, is private (fastmcp_compat.lowlevel_server).
    hint = CacheHint(ttl_ms=LIST_TTL_MS, scope="private")
    lowlevel_server(server).cache_hints.update(dict.fromkeys(FIXED_LISTS, hint))
    return server


def complete_arguments(server: FastMCP, complete: ArgumentCompleter) -> None:
    """Answer ``completion/complete`` for every prompt argument and resource-template parameter by name.

    Every Dockyard server completes by the argument's name alone (a ``database`` is a database alias
    wherever it appears), so ``complete`` sees plain strings, not the protocol's reference objects;
    FastMCP sends at most 100 values and says when there were more.
    """

    async def answer(reference: Any, argument: Any, context: Any) -> list[str]:
        given = (context.arguments or {}) if context is not None else {}
        return await complete(argument.name, argument.value, given)

    server.add_completion_handler(answer)
