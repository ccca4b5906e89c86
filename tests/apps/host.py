"""A minimal MCP Apps host for tests: a view rendered in headless Chromium by the ext-apps SDK's AppBridge.

How one view is opened (:func:`open_view`):

1. an MCP client session that declares the UI extension lists the tools, reads the tool's
   ``_meta.ui.resourceUri`` and ``resources/read``s the view (its MIME type must be the Apps one);
2. the tool is called through the same session;
3. Chromium (Debian's, through Playwright for Python: no browser download) opens the host page
   (``node/host.html`` + ``node/host.js`` bundled with the SDK by esbuild) from a loopback static server;
   the page puts the view's HTML into a sandboxed iframe (``allow-scripts`` only, a strict CSP), runs the
   ``ui/initialize`` handshake through the SDK's AppBridge and sends the tool input and result;
4. every ``tools/call`` and ``resources/read`` the view makes goes page → Python (``expose_function``) →
   the MCP session → the server, so the whole path is the protocol.

:class:`View` is the handle a test drives (wait, click, read text, screenshot). The fixtures that build
it are in ``fixtures.py``; ``README.md`` shows how to write a view test.
"""

from __future__ import annotations

import asyncio
import functools
import http.server
import os
import re
import shutil
import subprocess
import threading
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp.types as mt
from fastmcp import Client
from mcp import ClientSession
from mcp.client.extension import advertise

from dockyard_shared.apps import UI_EXTENSION, UI_MIME
from tests.harness import LEGACY, MODERN, Era, Session

NODE_DIR = Path(__file__).resolve().parent / "node"
DEFAULT_TIMEOUT_S = 15.0


def chromium_path() -> str | None:
    """Debian's Chromium (``DOCKYARD_CHROMIUM`` overrides), or None."""
    configured = os.environ.get("DOCKYARD_CHROMIUM")
    if configured:
        return configured if Path(configured).exists() else None
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def missing_tools() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    if chromium_path() is None:
        return "no Chromium (apt-get install chromium, or set DOCKYARD_CHROMIUM)"
    if shutil.which("node") is None:
        return "no Node.js on PATH (tests/interop/prepare.sh installs it)"
    if not (NODE_DIR / "node_modules" / "@modelcontextprotocol" / "ext-apps").is_dir():
        return "tests/apps/node has no node_modules (run: cd tests/apps/node && npm ci)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "playwright (Python) is not installed (uv sync --all-packages)"
    return None


def build_host_page(into: Path) -> Path:
    """Bundle ``node/host.js`` with the SDK into ``into`` and copy ``host.html`` beside it."""
    into.mkdir(parents=True, exist_ok=True)
    esbuild = NODE_DIR / "node_modules" / ".bin" / "esbuild"
    subprocess.run(
        [
            str(esbuild),
            str(NODE_DIR / "host.js"),
            "--bundle",
            "--format=iife",
            "--platform=browser",
            "--target=chrome120",
            f"--outfile={into / 'host.js'}",
            "--log-level=warning",
        ],
        check=True,
        cwd=NODE_DIR,
        timeout=120,
    )
    shutil.copyfile(NODE_DIR / "host.html", into / "host.html")
    return into


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass


@dataclass
class StaticServer:
    """The host page on a loopback port the OS chose; stops with :meth:`close`."""

    root: Path
    _server: http.server.ThreadingHTTPServer | None = None

    def start(self) -> str:
        handler = functools.partial(_QuietHandler, directory=str(self.root))
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self._server.server_address[1]}/host.html"

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def _wire(model: Any) -> dict[str, Any]:
    """A protocol result as the JSON the wire carries (what the host page hands the view)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class McpPeer:
    """The MCP session the host forwards to: a FastMCP ``Client`` or an official SDK ``ClientSession``."""

    def __init__(self, raw: Client | ClientSession) -> None:
        self.raw = raw

    async def list_tools(self) -> list[mt.Tool]:
        if isinstance(self.raw, ClientSession):
            return list((await self.raw.list_tools()).tools)
        return await self.raw.list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        if isinstance(self.raw, ClientSession):
            return _wire(await self.raw.call_tool(name, arguments or {}))
        return _wire(await self.raw.call_tool_mcp(name, arguments or {}))

    async def read_resource(self, uri: str) -> dict[str, Any]:
        if isinstance(self.raw, ClientSession):
            return _wire(await self.raw.read_resource(uri))
        return _wire(await self.raw.read_resource_mcp(uri))


def apps_client(target: Any, *, era: Era = MODERN, **kwargs: Any) -> Client:
    """A FastMCP client that declares the UI extension (as an Apps host does), in ``era``."""
    return Client(
        target,
        mode="legacy" if era == LEGACY else "auto",
        extensions=[advertise(UI_EXTENSION, {"mimeTypes": [UI_MIME]})],
        **kwargs,
    )


@dataclass
class View:
    """One view rendered in the test host. ``frame`` is the view's own frame (Playwright ``Frame``)."""

    page: Any
    frame: Any
    peer: McpPeer
    tool: mt.Tool
    resource: dict[str, Any]
    tool_result: dict[str, Any]
    artifacts: Path
    errors: list[str] = field(default_factory=list)
    timeout_s: float = DEFAULT_TIMEOUT_S

    @property
    def html(self) -> str:
        return self.resource["contents"][0]["text"]

    def locator(self, selector: str) -> Any:
        """A Playwright locator inside the view (use with ``playwright.async_api.expect``)."""
        return self.frame.locator(selector)

    async def wait_for(self, selector: str, *, state: str = "visible") -> None:
        await self.frame.wait_for_selector(selector, state=state, timeout=self.timeout_s * 1000)

    async def wait_for_text(self, selector: str, text: str) -> str:
        """Wait until ``selector``'s text contains ``text``; returns the whole text."""
        from playwright.async_api import expect

        await expect(self.locator(selector).first).to_contain_text(text, timeout=self.timeout_s * 1000)
        return await self.text(selector)

    async def text(self, selector: str) -> str:
        return await self.locator(selector).first.inner_text(timeout=self.timeout_s * 1000)

    async def texts(self, selector: str) -> list[str]:
        return await self.locator(selector).all_inner_texts()

    async def click(self, selector: str) -> None:
        await self.locator(selector).first.click(timeout=self.timeout_s * 1000)

    async def fill(self, selector: str, value: str) -> None:
        await self.locator(selector).first.fill(value, timeout=self.timeout_s * 1000)

    async def evaluate(self, expression: str, arg: Any = None) -> Any:
        """Run JavaScript in the view's frame (e.g. read a global the view set)."""
        return await self.frame.evaluate(expression, arg)

    async def screenshot(self, name: str) -> Path:
        """Save the view (the iframe as shown) as ``<artifacts>/<name>.png``; returns the path."""
        if not re.fullmatch(r"[\w.-]+", name):
            raise ValueError(f"screenshot name {name!r}: letters, digits, _ . - only")
        path = self.artifacts / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        await self.page.locator("#view").screenshot(path=str(path), timeout=self.timeout_s * 1000)
        return path

    async def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        """What the view asked of the host, in order: ``tools/call``, ``resources/read``,
        ``size-changed``, ``open-link``, ``message``, ``update-model-context``, ``log``,
        ``request-teardown``, ``initialized``, ``teardown-done``."""
        events = await self.page.evaluate("() => window.dockyardHost.events")
        return [event for event in events if kind is None or event["kind"] == kind]

    async def tool_calls(self) -> list[dict[str, Any]]:
        """The ``tools/call`` params the view sent through the host (name, arguments)."""
        return [event["params"] for event in await self.events("tools/call")]

    async def wait_for_event(self, kind: str, count: int = 1) -> list[dict[str, Any]]:
        """Wait until the view has sent at least ``count`` events of ``kind``; returns them."""
        await self.page.wait_for_function(
            "([kind, count]) => window.dockyardHost.events.filter(e => e.kind === kind).length >= count",
            arg=[kind, count],
            timeout=self.timeout_s * 1000,
        )
        return await self.events(kind)

    async def send_tool_result(self, result: dict[str, Any]) -> None:
        """Push another tool result to the view (``ui/notifications/tool-result``), e.g. after a change."""
        await self.page.evaluate("(r) => window.dockyardHost.sendToolResult(r)", result)

    async def send_tool_input(self, arguments: dict[str, Any]) -> None:
        await self.page.evaluate("(a) => window.dockyardHost.sendToolInput(a)", arguments)

    async def set_host_context(self, context: dict[str, Any]) -> None:
        """Change the host context (theme, displayMode…): the view gets host-context-changed."""
        await self.page.evaluate("(c) => window.dockyardHost.setHostContext(c)", context)

    async def teardown(self) -> dict[str, Any]:
        """Ask the view to tear down (``ui/resource-teardown``) and wait for its answer."""
        return await self.page.evaluate("() => window.dockyardHost.teardown()")

    def assert_no_errors(self) -> None:
        """No uncaught error, console error or CSP violation in the host page or the view so far."""
        assert not self.errors, "the view reported errors:\n" + "\n".join(self.errors)


def ui_resource_uri(tool: mt.Tool) -> str:
    """The view a tool names in ``_meta.ui.resourceUri`` (fails the test when it names none)."""
    ui = (tool.meta or {}).get("ui")
    uri = ui.get("resourceUri") if isinstance(ui, dict) else None
    assert isinstance(uri, str) and uri.startswith("ui://"), (
        f"tool {tool.name!r} names no ui:// view in _meta.ui.resourceUri: {tool.meta!r}"
    )
    return uri


class ViewHost:
    """Chromium and the host page; :meth:`open` renders views. One per test (``open_view`` fixture)."""

    def __init__(self, page_url: str, artifacts: Path, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.page_url = page_url
        self.artifacts = artifacts
        self.timeout_s = timeout_s
        self._stack = AsyncExitStack()
        self._browser: Any = None

    async def __aenter__(self) -> ViewHost:
        from playwright.async_api import async_playwright

        playwright = await self._stack.enter_async_context(async_playwright())
        self._browser = await playwright.chromium.launch(executable_path=chromium_path(), headless=True)
        self._stack.push_async_callback(self._browser.close)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._stack.aclose()

    async def session(self, target: Any, *, era: Era) -> McpPeer:
        """An MCP peer for ``target``: an open ``Client``/``ClientSession``/harness ``Session`` as it is;
        anything else (a FastMCP server, an HTTP URL) gets a new UI-declaring client closed with the host."""
        if isinstance(target, Session):
            return McpPeer(target.raw)
        if isinstance(target, Client | ClientSession):
            return McpPeer(target)
        client = await self._stack.enter_async_context(apps_client(target, era=era))
        return McpPeer(client)

    async def open(
        self,
        target: Any,
        tool_name: str,
        arguments: dict[str, Any] | None = None,
        *,
        era: Era = MODERN,
        host_context: dict[str, Any] | None = None,
        viewport: tuple[int, int] = (900, 700),
    ) -> View:
        peer = await self.session(target, era=era)
        tools = {tool.name: tool for tool in await peer.list_tools()}
        assert tool_name in tools, f"no tool {tool_name!r} (have {sorted(tools)})"
        tool = tools[tool_name]
        uri = ui_resource_uri(tool)
        resource = await peer.read_resource(uri)
        contents = resource["contents"]
        assert len(contents) == 1 and contents[0].get("mimeType") == UI_MIME, (
            f"{uri} must be one {UI_MIME} document, got {[c.get('mimeType') for c in contents]}"
        )
        result = await peer.call_tool(tool_name, arguments)

        page = await self._browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
        page.on(
            "console",
            lambda message: (
                errors.append(f"console.{message.type}: {message.text}") if message.type == "error" else None
            ),
        )

        async def call_tool(params: dict[str, Any]) -> dict[str, Any]:
            return await peer.call_tool(params["name"], params.get("arguments") or {})

        async def read_resource(params: dict[str, Any]) -> dict[str, Any]:
            return await peer.read_resource(params["uri"])

        await page.expose_function("dockyardHostCallTool", call_tool)
        await page.expose_function("dockyardHostReadResource", read_resource)
        await page.goto(self.page_url)
        context = {"theme": "light", "displayMode": "inline", "platform": "web", "locale": "en-US"}
        context.update(host_context or {})
        load = page.evaluate(
            "(a) => window.dockyardHost.load(a)",
            {
                "html": contents[0]["text"],
                "toolInput": arguments or {},
                "toolResult": result,
                "hostContext": context,
            },
        )
        try:
            await asyncio.wait_for(load, timeout=self.timeout_s)
        except TimeoutError:
            raise AssertionError(
                f"{uri} did not finish the ui/initialize handshake within {self.timeout_s:.0f}s (does it inline "
                "the bridge at <!--dockyard-app-bridge-->, via load_view?); errors: " + "; ".join(errors)
            ) from None
        frame = await (await page.query_selector("#view")).content_frame()
        return View(page, frame, peer, tool, resource, result, self.artifacts, errors, self.timeout_s)
