"""MCP Apps (``io.modelcontextprotocol/ui``, SEP-1865): views a host renders in a sandboxed frame.

A tool names a ``ui://`` resource in ``_meta.ui.resourceUri``; the resource is one self-contained HTML
document (``text/html;profile=mcp-app``) that the host loads into a sandboxed iframe and talks to over
``postMessage`` JSON-RPC (the ext-apps protocol: ``ui/initialize``, tool input and result notifications,
``tools/call`` proxied to the server). Hosts without Apps ignore the metadata, so every tool that names a
view must still return a complete text result.

- :func:`add_view` registers the resource on a FastMCP server; :func:`view_meta` is the tool's ``meta=``.
- :func:`load_view` reads a view shipped as package data and inlines the shared bridge
  (``views/app-bridge.js``, documented at its top) at ``<!--dockyard-app-bridge-->``.
- :func:`client_shows_views` tells whether the calling client declared the extension.

FastMCP advertises the extension in the server's capabilities itself on 2026-07-28 connections
(``capabilities.extensions``); the 2025-11-25 server capabilities have no such field (the SDK strips it),
and there the ext-apps spec relies on the client's declaration alone.
"""

from __future__ import annotations

import functools
import importlib.resources
from typing import Any

from fastmcp import FastMCP
from fastmcp.resources import TextResource

UI_MIME = "text/html;profile=mcp-app"
UI_EXTENSION = "io.modelcontextprotocol/ui"
BRIDGE_PLACEHOLDER = "<!--dockyard-app-bridge-->"

# No external origin at all: the view inlines its script and styles (hosts build the frame's CSP from
# these lists; empty means connect-src/img-src etc. only what the host allows by default, no network).
_SELF_CONTAINED_CSP: dict[str, list[str]] = {"connectDomains": [], "resourceDomains": []}
_VISIBILITIES = frozenset({"model", "app"})


def add_view(server: FastMCP, uri: str, html: str, *, name: str, description: str) -> None:
    """Register the ``ui://`` resource ``uri`` serving ``html`` as an MCP App view on ``server``."""
    if not uri.startswith("ui://"):
        raise ValueError(f"an MCP Apps view URI must use the ui:// scheme, got {uri!r}")
    server.add_resource(
        TextResource(
            uri=uri,
            name=name,
            description=description,
            mime_type=UI_MIME,
            text=html,
            meta={"ui": {"csp": dict(_SELF_CONTAINED_CSP), "prefersBorder": True}},
        )
    )


def view_meta(uri: str, *, visibility: tuple[str, ...] = ("model", "app")) -> dict[str, Any]:
    """The tool ``meta=`` naming the view ``uri``. ``visibility=("app",)`` for tools only the view calls
    (hosts keep those from the model; it is not access control: the server still checks every call)."""
    if not uri.startswith("ui://"):
        raise ValueError(f"an MCP Apps view URI must use the ui:// scheme, got {uri!r}")
    if not visibility or not set(visibility) <= _VISIBILITIES:
        raise ValueError(
            f"visibility must be a non-empty subset of {sorted(_VISIBILITIES)}, got {visibility!r}"
        )
    return {"ui": {"resourceUri": uri, "visibility": list(visibility)}}


def _declared_settings(capabilities: Any) -> Any:
    """The client's settings for the UI extension, or None. 2026-07-28 clients (and the ext-apps hosts on
    2025-11-25) declare it under ``capabilities.extensions``; some older hosts used ``experimental``."""
    if capabilities is None:
        return None
    extras = getattr(capabilities, "model_extra", None) or {}
    for bag in (getattr(capabilities, "extensions", None), extras.get("extensions")):
        if isinstance(bag, dict) and UI_EXTENSION in bag:
            return bag[UI_EXTENSION] if bag[UI_EXTENSION] is not None else {}
    experimental = getattr(capabilities, "experimental", None)
    if isinstance(experimental, dict) and UI_EXTENSION in experimental:
        return experimental[UI_EXTENSION] if experimental[UI_EXTENSION] is not None else {}
    return None


def client_shows_views(ctx: Any) -> bool:
    """Whether the client calling through ``ctx`` (a FastMCP ``Context``) declared the UI extension.

    A declaration whose ``mimeTypes`` list leaves out ``text/html;profile=mcp-app`` does not count; one
    without the list does (the list is how a host names the formats it renders, and ours is the only one).
    """
    try:
        capabilities = ctx.session.client_capabilities
    except (AttributeError, RuntimeError):  # no live session (a background worker, outside a request)
        return False
    settings = _declared_settings(capabilities)
    if settings is None:
        return False
    mime_types = settings.get("mimeTypes") if isinstance(settings, dict) else None
    if mime_types is None:
        return True
    return isinstance(mime_types, list | tuple) and UI_MIME in mime_types


@functools.cache
def bridge_script() -> str:
    """The shared app-side bridge (``views/app-bridge.js``)."""
    return (importlib.resources.files("dockyard_shared") / "views" / "app-bridge.js").read_text("utf-8")


@functools.cache
def load_view(package: str, filename: str) -> str:
    """The view ``filename`` shipped as package data of ``package``, with the shared bridge inlined at
    ``<!--dockyard-app-bridge-->``: one self-contained document."""
    html = (importlib.resources.files(package) / filename).read_text("utf-8")
    if html.count(BRIDGE_PLACEHOLDER) != 1:
        raise ValueError(f"{package}/{filename} must contain {BRIDGE_PLACEHOLDER} exactly once")
    script = bridge_script()
    if "</script" in script.lower():  # would close the inline <script> early
        raise ValueError("views/app-bridge.js must not contain '</script'")
    return html.replace(BRIDGE_PLACEHOLDER, f"<script>\n{script}</script>")
