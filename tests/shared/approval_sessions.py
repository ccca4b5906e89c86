"""Sessions of a client that renders MCP Apps (declares the UI extension), for the approval-card tests:
in memory or over HTTP, either protocol era, with or without elicitation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from fastmcp import Client, FastMCP
from fastmcp.client.transports import StreamableHttpTransport
from mcp import ClientSession
from mcp.client.extension import advertise
from mcp.client.streamable_http import streamable_http_client

from tests.harness import LEGACY, Elicit, Era, Session, _fastmcp_elicitation, _sdk_elicitation

UI = "io.modelcontextprotocol/ui"
UI_SETTINGS = {"mimeTypes": ["text/html;profile=mcp-app"]}


@asynccontextmanager
async def views_session(
    target: FastMCP | str,
    *,
    era: Era,
    elicit: Elicit | None = None,
    headers: dict[str, str] | None = None,
    views: bool = True,
) -> AsyncIterator[Session]:
    """A session to ``target`` (a server in memory, or an HTTP endpoint URL) whose client declares the UI
    extension (unless ``views=False``) and answers elicitations only if ``elicit`` is given."""
    async with AsyncExitStack() as stack:
        if isinstance(target, FastMCP) or era != LEGACY:
            source: Any = (
                target
                if isinstance(target, FastMCP)
                else StreamableHttpTransport(target, headers=headers or {})
            )
            client = Client(
                source,
                mode="legacy" if era == LEGACY else "auto",
                elicitation_handler=_fastmcp_elicitation(elicit),
                extensions=[advertise(UI, UI_SETTINGS)] if views else None,
                timeout=60,
            )
            await stack.enter_async_context(client)
            yield Session(client, transport="memory" if isinstance(target, FastMCP) else "http", era=era)
            return
        import httpx2

        http_client = await stack.enter_async_context(httpx2.AsyncClient(headers=headers or {}, timeout=60))
        read, write = await stack.enter_async_context(streamable_http_client(target, http_client=http_client))
        session = await stack.enter_async_context(
            ClientSession(
                read,
                write,
                read_timeout_seconds=60,
                elicitation_callback=_sdk_elicitation(elicit),
                extensions={UI: UI_SETTINGS} if views else None,
            )
        )
        await session.initialize()
        yield Session(session, transport="http", era=era)
