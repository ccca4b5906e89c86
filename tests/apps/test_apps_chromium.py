"""The toy view in headless Chromium through the test host (the ext-apps SDK's AppBridge), both eras:
it renders the tool result, calls a tool through the host and shows the answer, shows hostile text as
text without running it, follows the host's theme, tears down on request, and leaves a screenshot."""

from __future__ import annotations

import pytest
from fastmcp import FastMCP

from tests.apps.fixtures import OpenView
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
