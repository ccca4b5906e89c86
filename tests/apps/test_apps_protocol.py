"""The MCP Apps metadata through the protocol, both eras: the view resource, the tools' _meta.ui, the
extension in the server's capabilities, and client_shows_views for clients that do and do not declare it."""

from __future__ import annotations

from types import SimpleNamespace

import mcp.types as mt
import pytest
from fastmcp import Client, FastMCP

from dockyard_shared.apps import (
    BRIDGE_PLACEHOLDER,
    UI_EXTENSION,
    UI_MIME,
    add_view,
    bridge_script,
    client_shows_views,
    load_view,
    view_meta,
)
from tests.apps.host import apps_client
from tests.apps.toy_server import VIEW_URI, build
from tests.harness import LEGACY, MODERN


@pytest.fixture
def toy() -> FastMCP:
    return build()


async def test_view_resource_and_tool_meta(toy: FastMCP, era: str) -> None:
    async with apps_client(toy, era=era) as client:
        listed = {resource.uri: resource for resource in await client.list_resources()}
        view = listed[VIEW_URI]
        assert view.mime_type == UI_MIME
        assert view.meta["ui"]["csp"] == {"connectDomains": [], "resourceDomains": []}

        read = await client.read_resource_mcp(VIEW_URI)
        (content,) = read.contents
        assert content.mime_type == UI_MIME
        assert content.meta["ui"]["csp"] == {"connectDomains": [], "resourceDomains": []}
        assert "window.dockyardApp = app" in content.text  # the bridge is inlined…
        assert BRIDGE_PLACEHOLDER not in content.text  # …where the placeholder was
        assert "src=" not in content.text.replace("srcdoc", "")  # self-contained: nothing loaded from outside

        tools = {tool.name: tool for tool in await client.list_tools()}
        assert tools["greet"].meta["ui"] == {"resourceUri": VIEW_URI, "visibility": ["model", "app"]}
        assert tools["shout"].meta["ui"] == {"resourceUri": VIEW_URI, "visibility": ["app"]}
        assert "ui" not in (tools["plain"].meta or {})


async def test_server_advertises_the_extension_on_2026_07_28(toy: FastMCP) -> None:
    async with apps_client(toy, era=MODERN) as client:
        assert UI_EXTENSION in (client.server_capabilities.extensions or {})


async def test_client_shows_views_follows_the_declaration(toy: FastMCP, era: str) -> None:
    async with apps_client(toy, era=era) as client:
        declared = await client.call_tool("greet", {"name": "Ada"})
    async with Client(toy, mode="legacy" if era == LEGACY else "auto") as client:
        undeclared = await client.call_tool("greet", {"name": "Ada"})
    assert declared.structured_content["shown_as_view"] is True
    assert undeclared.structured_content["shown_as_view"] is False
    # The text result stays complete for hosts without Apps.
    assert "Hello, Ada!" in undeclared.content[0].text


@pytest.mark.parametrize(
    ("capabilities", "shows"),
    [
        (mt.ClientCapabilities(extensions={UI_EXTENSION: {"mimeTypes": [UI_MIME]}}), True),
        (mt.ClientCapabilities(extensions={UI_EXTENSION: {}}), True),
        (mt.ClientCapabilities(extensions={UI_EXTENSION: {"mimeTypes": ["text/html"]}}), False),
        (mt.ClientCapabilities(experimental={UI_EXTENSION: {"mimeTypes": [UI_MIME]}}), True),
        (mt.ClientCapabilities(extensions={"io.example/other": {}}), False),
        (mt.ClientCapabilities(), False),
        (None, False),
    ],
)
def test_client_shows_views_reads_every_declaration(capabilities, shows: bool) -> None:
    ctx = SimpleNamespace(session=SimpleNamespace(client_capabilities=capabilities))
    assert client_shows_views(ctx) is shows


def test_client_shows_views_without_a_session() -> None:
    class NoSession:
        @property
        def session(self):
            raise RuntimeError("no session")

    assert client_shows_views(NoSession()) is False


def test_view_meta_and_add_view_refuse_bad_input() -> None:
    assert view_meta("ui://x/y") == {"ui": {"resourceUri": "ui://x/y", "visibility": ["model", "app"]}}
    with pytest.raises(ValueError, match="ui://"):
        view_meta("https://x/y")
    with pytest.raises(ValueError, match="visibility"):
        view_meta("ui://x/y", visibility=("person",))
    with pytest.raises(ValueError, match="visibility"):
        view_meta("ui://x/y", visibility=())
    with pytest.raises(ValueError, match="ui://"):
        add_view(FastMCP("x"), "file:///x.html", "<p>", name="x", description="x")


def test_load_view_needs_the_placeholder_once() -> None:
    with pytest.raises(ValueError, match="exactly once"):
        load_view("tests.apps", "node/host.html")


def test_bridge_is_small_and_safe_to_inline() -> None:
    script = bridge_script()
    assert len(script.encode()) < 8 * 1024
    assert "</script" not in script.lower()
    code = script.split("*/", 1)[1]  # past the API comment
    assert "innerHTML" not in code  # the bridge itself never renders markup
