"""The toy view in headless Chromium through the test host (the ext-apps SDK's AppBridge), both eras:
it renders the tool result, calls a tool through the host and shows the answer, shows hostile text as
text without running it, follows the host's theme, tears down on request, and leaves a screenshot."""

from __future__ import annotations

import pytest
from fastmcp import FastMCP
from fastmcp.utilities.tests import run_server_async

from dockyard_shared.apps import UI_MIME, add_view, bridge_script, view_meta
from tests.apps.fixtures import OpenView
from tests.apps.host import BrowserThread, apps_client
from tests.apps.toy_server import build

HOSTILE = """<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=2</script>"""


@pytest.fixture
def toy() -> FastMCP:
    return build()


async def test_view_renders_calls_a_tool_and_escapes(open_view: OpenView, toy: FastMCP, era: str) -> None:
    view = await open_view(toy, "greet", {"name": HOSTILE}, era=era)

    # The tool result arrived through ui/notifications/tool-result and shows as text, not markup.
    assert await view.wait_for_text("#name", "<img") == HOSTILE
    assert await view.text("#escaped") == f"Hello, {HOSTILE}!"
    assert await view.locator("img").count() == 0
    assert await view.evaluate("() => window.__pwned") is None

    # A click calls the app-only tool through the host, over MCP, and the answer shows.
    await view.click("#shout")
    assert await view.wait_for_text("#shouted", "<IMG SRC=X") == HOSTILE.upper() + "!"
    assert await view.tool_calls() == [{"name": "shout", "arguments": {"text": HOSTILE}}]
    assert await view.evaluate("() => window.__pwned") is None

    # The handshake ran through the SDK (the view named itself), and the view reported its size.
    (initialized,) = await view.events("initialized")
    assert initialized["params"]["name"] == "Toy greeting"
    sizes = await view.wait_for_event("size-changed")
    assert sizes[-1]["params"]["height"] > 0

    path = await view.screenshot(f"toy-greeting-{era}")
    assert path.stat().st_size > 1000 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="already taken"):
        await view.screenshot(f"toy-greeting-{era}")
    view.assert_no_errors()


async def test_view_follows_host_context_and_tears_down(open_view: OpenView, toy: FastMCP) -> None:
    view = await open_view(toy, "greet", {"name": "Ada"}, host_context={"theme": "dark"})
    await view.wait_for_text("#theme", "theme: dark")
    assert await view.evaluate("() => document.documentElement.dataset.theme") == "dark"
    await view.set_host_context({"theme": "light"})
    await view.wait_for_text("#theme", "theme: light")
    assert await view.teardown() == {}
    view.assert_no_errors()


async def test_view_sees_a_pushed_result(open_view: OpenView, toy: FastMCP) -> None:
    view = await open_view(toy, "greet", {"name": "Ada"})
    await view.wait_for_text("#name", "Ada")
    newer = await view.peer.call_tool("greet", {"name": "Grace"})
    await view.send_tool_result(newer)
    await view.wait_for_text("#name", "Grace")
    await view.push("greet", {"name": "Linus"})
    await view.wait_for_text("#name", "Linus")


async def test_a_tool_error_reaches_the_view(open_view: OpenView, toy: FastMCP) -> None:
    view = await open_view(toy, "greet", {"name": ""})
    await view.wait_for("#shout:not([disabled])")
    await view.click("#shout")
    assert "nothing to shout" in await view.wait_for_text("#shouted", "nothing to shout")
    assert await view.attribute("#answer", "data-error") == "1"


async def test_a_view_that_loads_from_outside_is_caught(open_view: OpenView) -> None:
    """The host's CSP allows no origin: a view that is not self-contained shows up in view.errors."""
    server = FastMCP("leaky")
    html = (
        "<!doctype html><html><head><title>leaky</title><script>"
        + bridge_script()
        + "</script></head><body><img id=logo src='http://127.0.0.1:9/logo.png'></body></html>"
    )
    add_view(server, "ui://leaky/view", html, name="leaky", description="loads an image from outside")

    @server.tool(meta=view_meta("ui://leaky/view"))
    def leak() -> str:
        """A tool whose view is not self-contained."""
        return "leak"

    view = await open_view(server, "leak")
    await view.wait_for("#logo", state="attached")
    assert "127.0.0.1:9/logo.png" in await view.wait_for_error("Content Security Policy")
    with pytest.raises(AssertionError, match="Content Security Policy"):
        view.assert_no_errors()


async def test_the_bridge_reaches_the_host(open_view: OpenView, toy: FastMCP) -> None:
    """The rest of the bridge's API, through the SDK's AppBridge: resources/read (over MCP), open-link,
    message, log; and tool input as the host sent it."""
    view = await open_view(toy, "greet", {"name": "Ada"})
    await view.wait_for_text("#name", "Ada")
    mime = await view.evaluate(
        "() => dockyardApp.readResource('ui://toy/greeting').then(r => r.contents[0].mimeType)"
    )
    assert mime == UI_MIME
    assert await view.evaluate("() => new Promise(r => dockyardApp.onToolInput(r))") == {"name": "Ada"}
    await view.evaluate(
        "() => Promise.all([dockyardApp.openLink('https://example.org/'), dockyardApp.sendMessage('hi')])"
    )
    await view.evaluate("() => dockyardApp.log('info', {step: 1})")
    (link,) = await view.events("open-link")
    assert link["params"] == {"url": "https://example.org/"}
    (message,) = await view.events("message")
    assert message["params"]["content"] == [{"type": "text", "text": "hi"}]
    (log,) = await view.wait_for_event("log")
    assert log["params"] == {"level": "info", "data": {"step": 1}}
    assert [read["params"]["uri"] for read in await view.events("resources/read")] == ["ui://toy/greeting"]
    view.assert_no_errors()


async def test_the_hostile_check_catches_an_unescaped_view(open_view: OpenView) -> None:
    """The control for the escaping tests: a view that puts a value into innerHTML does run the hostile
    handler under the host's CSP, so `window.__pwned` stays unset only where a view escapes."""
    server = FastMCP("careless")
    html = (
        "<!doctype html><html><head><title>careless</title><script>"
        + bridge_script()
        + "</script></head><body><p id=out></p><script>dockyardApp.onToolResult(function (r) {"
        " document.getElementById('out').innerHTML = r.structuredContent.result; });</script></body></html>"
    )
    add_view(server, "ui://careless/view", html, name="careless", description="does not escape")

    @server.tool(meta=view_meta("ui://careless/view"))
    def echo(text: str) -> str:
        """Echo."""
        return text

    view = await open_view(server, "echo", {"text": HOSTILE})
    await view.wait_for("#out img", state="attached")
    await view.run(lambda page, frame: frame.wait_for_function("() => window.__pwned === 1"))


async def test_view_over_streamable_http(open_view: OpenView, toy: FastMCP, era: str) -> None:
    """The same view with the host's session over Streamable HTTP (a client the test opened, as a
    server's own HTTP tests would pass it)."""
    async with run_server_async(toy) as url, apps_client(url, era=era) as client:
        view = await open_view(client, "greet", {"name": "Ada"})
        assert view.tool_result["structuredContent"]["shown_as_view"] is True
        await view.wait_for_text("#name", "Ada")
        await view.click("#shout")
        assert await view.wait_for_text("#shouted", "ADA!") == "ADA!"
        view.assert_no_errors()


async def test_a_view_opened_outside_a_host_knows_it(view_browser: BrowserThread, toy: FastMCP) -> None:
    """A view's page opened on its own (no host frame above it): `ready` rejects at once, so a page that
    also serves outside a host (a plain web page) can fall back instead of waiting forever."""
    async with apps_client(toy) as client:
        html = (await client.read_resource_mcp("ui://toy/greeting")).contents[0].text

    async def outside() -> str:
        page = await view_browser.browser.new_page()
        try:
            await page.set_content(html)
            return await page.evaluate("() => dockyardApp.ready.then(() => 'ready', (e) => e.message)")
        finally:
            await page.close()

    assert await view_browser.run(outside) == "Method not found: ui/initialize"


async def test_the_bridge_render_helpers_refuse_markup(open_view: OpenView, toy: FastMCP) -> None:
    view = await open_view(toy, "greet", {"name": "Ada"})
    await view.wait_for_text("#name", "Ada")
    outcome = await view.evaluate(
        """() => {
          const app = dockyardApp, refused = (f) => { try { f(); return false; } catch (e) { return true; } };
          return {
            esc: app.esc(`<a href='x'>"&"</a>`),
            escNull: app.esc(null) + app.esc(undefined),
            text: app.h("p", {text: "<b>bold</b>"}, ["<u>", app.h("span", {text: 1})]).innerHTML,
            title: app.h("p", {title: "<i>"}).getAttribute("title"),
            onAttribute: refused(() => app.h("div", {onclick: "window.__pwned = 3"})),
            scriptUrl: refused(() => app.h("a", {href: " JavaScript:window.__pwned = 4"})),
            textOf: app.textOf({content: [{type: "text", text: "a"}, {type: "image"}, {type: "text", text: "b"}]}),
          };
        }"""
    )
    assert outcome == {
        "esc": "&lt;a href=&#39;x&#39;&gt;&quot;&amp;&quot;&lt;/a&gt;",
        "escNull": "",
        "text": "&lt;b&gt;bold&lt;/b&gt;&lt;u&gt;<span>1</span>",
        "title": "<i>",
        "onAttribute": True,
        "scriptUrl": True,
        "textOf": "a\nb",
    }
    assert await view.evaluate("() => window.__pwned") is None
