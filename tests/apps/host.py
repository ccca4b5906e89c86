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
import re
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import mcp.types as mt
from fastmcp import Client
from mcp import ClientSession
from mcp.client.extension import advertise

from dockyard_shared.apps import UI_EXTENSION, UI_MIME
from tests.apps.browser import (
    NODE_DIR,
    BrowserThread,
    RemoteLocator,
    StaticServer,
    build_host_page,
    chromium_path,
    missing_tools,
)
from tests.harness import LEGACY, MODERN, Era, Session

__all__ = [
    "NODE_DIR",
    "BrowserThread",
    "McpPeer",
    "RemoteLocator",
    "StaticServer",
    "View",
    "ViewHost",
    "apps_client",
    "build_host_page",
    "chromium_path",
    "missing_tools",
    "ui_resource_uri",
]

DEFAULT_TIMEOUT_S = 15.0
T = TypeVar("T")
_SCREENSHOTS_TAKEN: set[Path] = set()


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
    """One view rendered in the test host; every method waits up to ``timeout_s`` for its condition."""

    browser: BrowserThread
    page: Any  # Playwright objects: touch them only inside run()
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

    @property
    def _ms(self) -> float:
        return self.timeout_s * 1000

    async def run(self, make: Callable[[Any, Any], Awaitable[T]]) -> T:
        """Escape hatch: ``await view.run(lambda page, frame: frame.locator("tr").count())`` runs any
        Playwright call (page: the host page, frame: the view's frame) on the browser's loop."""
        return await self.browser.run(lambda: make(self.page, self.frame))

    def locator(self, selector: str) -> RemoteLocator:
        """A locator inside the view: ``await view.locator("tr").count()``."""
        return RemoteLocator(self.browser, self.frame.locator(selector))

    async def wait_for(self, selector: str, *, state: str = "visible") -> None:
        await self.browser.run(lambda: self.frame.wait_for_selector(selector, state=state, timeout=self._ms))

    async def wait_for_text(self, selector: str, text: str) -> str:
        """Wait until the first ``selector``'s text contains ``text``; returns its whole text."""

        async def wait() -> str:
            from playwright.async_api import expect

            locator = self.frame.locator(selector).first
            await expect(locator).to_contain_text(text, timeout=self._ms)
            return await locator.inner_text(timeout=self._ms)

        return await self.browser.run(wait)

    async def wait_for_count(self, selector: str, count: int) -> None:
        """Wait until exactly ``count`` elements match ``selector``."""

        async def wait() -> None:
            from playwright.async_api import expect

            await expect(self.frame.locator(selector)).to_have_count(count, timeout=self._ms)

        await self.browser.run(wait)

    async def text(self, selector: str) -> str:
        return await self.browser.run(lambda: self.frame.locator(selector).first.inner_text(timeout=self._ms))

    async def texts(self, selector: str) -> list[str]:
        """The text of every element matching ``selector`` now (possibly none)."""
        return await self.browser.run(lambda: self.frame.locator(selector).all_inner_texts())

    async def count(self, selector: str) -> int:
        return await self.browser.run(lambda: self.frame.locator(selector).count())

    async def attribute(self, selector: str, name: str) -> str | None:
        return await self.browser.run(
            lambda: self.frame.locator(selector).first.get_attribute(name, timeout=self._ms)
        )

    async def click(self, selector: str) -> None:
        await self.browser.run(lambda: self.frame.locator(selector).first.click(timeout=self._ms))

    async def fill(self, selector: str, value: str) -> None:
        await self.browser.run(lambda: self.frame.locator(selector).first.fill(value, timeout=self._ms))

    async def drag(self, source: str, target: str) -> None:
        """Drag the first ``source`` onto the first ``target`` (HTML5 drag and drop)."""
        await self.browser.run(
            lambda: self.frame.locator(source).first.drag_to(
                self.frame.locator(target).first, timeout=self._ms
            )
        )

    async def evaluate(self, expression: str, arg: Any = None) -> Any:
        """Run JavaScript in the view's frame (e.g. read a global the view set)."""
        return await self.browser.run(lambda: self.frame.evaluate(expression, arg))

    async def screenshot(self, name: str) -> Path:
        """Save the view (the iframe as shown) as ``<artifacts>/<name>.png``; returns the path."""
        if not re.fullmatch(r"[\w.-]+", name):
            raise ValueError(f"screenshot name {name!r}: letters, digits, _ . - only")
        path = self.artifacts / f"{name}.png"
        if path in _SCREENSHOTS_TAKEN:  # a second test with the same name would silently replace the first
            raise ValueError(f"screenshot {name!r} was already taken in this run: name it per test (and era)")
        _SCREENSHOTS_TAKEN.add(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        await self.browser.run(
            lambda: self.page.locator("#view").screenshot(path=str(path), timeout=self._ms)
        )
        return path

    async def _host(self, expression: str, arg: Any = None) -> Any:
        return await self.browser.run(lambda: self.page.evaluate(expression, arg))

    async def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        """What the view asked of the host, in order: ``tools/call``, ``resources/read``,
        ``size-changed``, ``open-link``, ``message``, ``update-model-context``, ``log``,
        ``request-teardown``, ``initialized``, ``teardown-done``."""
        events = await self._host("() => window.dockyardHost.events")
        return [event for event in events if kind is None or event["kind"] == kind]

    async def tool_calls(self) -> list[dict[str, Any]]:
        """The ``tools/call`` params the view sent through the host (name, arguments)."""
        return [event["params"] for event in await self.events("tools/call")]

    async def wait_for_event(self, kind: str, count: int = 1) -> list[dict[str, Any]]:
        """Wait until the view has sent at least ``count`` events of ``kind``; returns them."""
        await self.browser.run(
            lambda: self.page.wait_for_function(
                "([kind, count]) => window.dockyardHost.events.filter(e => e.kind === kind).length >= count",
                arg=[kind, count],
                timeout=self._ms,
            )
        )
        return await self.events(kind)

    async def send_tool_result(self, result: dict[str, Any]) -> None:
        """Push another tool result to the view (``ui/notifications/tool-result``), e.g. after a change;
        ``result`` as :meth:`McpPeer.call_tool` returns it."""
        await self._host("(r) => window.dockyardHost.sendToolResult(r)", result)

    async def push(self, tool_name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call ``tool_name`` over MCP and send its result to the view, as a host does when the model
        calls the tool again (e.g. the board after a change made elsewhere); returns the result."""
        result = await self.peer.call_tool(tool_name, arguments)
        await self.send_tool_result(result)
        return result

    async def send_tool_input(self, arguments: dict[str, Any]) -> None:
        await self._host("(a) => window.dockyardHost.sendToolInput(a)", arguments)

    async def send_tool_cancelled(self, reason: str) -> None:
        await self._host("(r) => window.dockyardHost.sendToolCancelled(r)", reason)

    async def set_host_context(self, context: dict[str, Any]) -> None:
        """Change the host context (theme, displayMode…): the view gets host-context-changed."""
        await self._host("(c) => window.dockyardHost.setHostContext(c)", context)

    async def teardown(self) -> dict[str, Any]:
        """Ask the view to tear down (``ui/resource-teardown``) and wait for its answer."""
        return await self._host("() => window.dockyardHost.teardown()")

    async def wait_for_error(self, fragment: str) -> str:
        """Wait until an error containing ``fragment`` was reported (console messages arrive late)."""
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        while not (found := [error for error in self.errors if fragment in error]):
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"no error containing {fragment!r}; errors: {self.errors}")
            await asyncio.sleep(0.05)  # polling a list the browser thread appends to
        return found[0]

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
    """The test host for one test: renders views in the session's Chromium (a new browser context per
    view) and closes them, and the MCP clients it opened, when the test ends."""

    def __init__(
        self, browser: BrowserThread, page_url: str, artifacts: Path, *, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.browser = browser
        self.page_url = page_url
        self.artifacts = artifacts
        self.timeout_s = timeout_s
        self._stack = AsyncExitStack()
        self._contexts: list[Any] = []

    async def __aenter__(self) -> ViewHost:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        try:
            for context in self._contexts:
                await self.browser.run(context.close)
        finally:
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

        # The view's requests arrive on the browser's loop; the MCP session lives on this one.
        test_loop = asyncio.get_running_loop()

        def on_test_loop(coroutine: Awaitable[T]) -> Awaitable[T]:
            return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, test_loop))

        async def call_tool(params: dict[str, Any]) -> dict[str, Any]:
            return await on_test_loop(peer.call_tool(params["name"], params.get("arguments") or {}))

        async def read_resource(params: dict[str, Any]) -> dict[str, Any]:
            return await on_test_loop(peer.read_resource(params["uri"]))

        errors: list[str] = []
        context = {"theme": "light", "displayMode": "inline", "platform": "web", "locale": "en-US"}
        context.update(host_context or {})

        async def render() -> tuple[Any, Any]:
            browser_context = await self.browser.browser.new_context(
                viewport={"width": viewport[0], "height": viewport[1]}
            )
            self._contexts.append(browser_context)
            page = await browser_context.new_page()
            page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
            page.on(
                "console",
                lambda message: (
                    errors.append(f"console.{message.type}: {message.text}")
                    if message.type == "error"
                    else None
                ),
            )
            await page.expose_function("dockyardHostCallTool", call_tool)
            await page.expose_function("dockyardHostReadResource", read_resource)
            await page.goto(self.page_url)
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
                    f"{uri} did not finish the ui/initialize handshake within {self.timeout_s:.0f}s (does it "
                    "inline the bridge at <!--dockyard-app-bridge-->, via load_view?); errors: "
                    + "; ".join(errors)
                ) from None
            frame = await (await page.query_selector("#view")).content_frame()
            return page, frame

        page, frame = await self.browser.run(render)
        return View(
            self.browser, page, frame, peer, tool, resource, result, self.artifacts, errors, self.timeout_s
        )
