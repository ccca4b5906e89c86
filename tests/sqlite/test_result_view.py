"""ui://sqlite/result through the protocol, both eras: the view is a resource of the MCP Apps type, ``query``
names it in its ``_meta``, and the result a host without Apps gets is as complete as before.

The view rendered in a browser is tested in test_result_view_browser.py.
"""

from __future__ import annotations

import json
import re

from dockyard_shared.apps import UI_MIME
from dockyard_shared.toolsets import Exposure
from tests.harness import open_session

from .helpers import make_server

VIEW = "ui://sqlite/result"


async def _read_view(session) -> tuple[str, str | None, dict | None]:
    """The view's (text, mime type, _meta) as resources/read returns them."""
    raw = session.raw
    contents = await raw.read_resource(VIEW)
    contents = getattr(contents, "contents", contents)  # the SDK wraps them, FastMCP's client does not
    (item,) = contents
    return item.text, item.mime_type, item.meta


async def test_query_names_the_view_and_other_tools_do_not(people, era):
    async with open_session(make_server(people), era=era) as session:
        tools = {tool.name: tool for tool in await session.list_tools()}
    ui = (tools["query"].meta or {}).get("ui")
    assert ui is not None, tools["query"].meta
    assert ui["resourceUri"] == VIEW
    # The model still calls query itself; the view calls it too (the next page).
    assert set(ui.get("visibility", ["model", "app"])) == {"model", "app"}
    assert not (tools["list_tables"].meta or {}).get("ui")
    assert not (tools["explain_query"].meta or {}).get("ui")


async def test_the_view_is_an_app_resource_self_contained(people, era):
    async with open_session(make_server(people), era=era) as session:
        listed = {str(resource.uri): resource for resource in await session.list_resources()}
        html, mime, meta = await _read_view(session)
    assert VIEW in listed
    assert listed[VIEW].mime_type == UI_MIME == "text/html;profile=mcp-app"
    assert mime == UI_MIME
    # The frame may reach no other origin: every domain list the host builds its CSP from is empty.
    assert isinstance(meta, dict) and isinstance(meta.get("ui"), dict), meta
    assert all(domains == [] for domains in meta["ui"].get("csp", {}).values()), meta
    assert listed[VIEW].meta["ui"] == meta["ui"]
    assert html.lstrip().lower().startswith("<!doctype html>")
    assert "<!--dockyard-app-bridge-->" not in html, "the bridge was not inlined"
    assert "dockyardApp" in html and 'id="grid"' in html
    # Hosts sandbox the frame: nothing may come from elsewhere (no CDN, no remote font or style).
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html, re.IGNORECASE)
    assert "@import" not in html and "url(" not in html
    # Values reach the page as text only.
    script = html[html.rindex("<script>") :]
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "document.write" not in script
    assert len(html.encode()) < 40_000, f"the view is {len(html.encode()):,} bytes"


async def test_no_query_no_view(people, era):
    server = make_server(people, exposure=Exposure(exclude_tools=("query",)))
    async with open_session(server, era=era) as session:
        uris = {str(resource.uri) for resource in await session.list_resources()}
    assert VIEW not in uris


async def test_a_host_without_apps_still_gets_the_whole_page(people, era):
    """The view adds nothing the result lacks: text and structured content carry every row, NULLs as null
    and the blob as its preview, with the cursor to the next page."""
    async with open_session(make_server(people), era=era) as session:
        outcome = await session.call_ok(
            "query", {"sql": "SELECT id, name, email, photo FROM people ORDER BY id", "max_rows": 3}
        )
    assert outcome.structured["columns"] == ["id", "name", "email", "photo"]
    assert [row[0] for row in outcome.structured["rows"]] == [1, 2, 3]
    assert outcome.structured["rows"][0][3].startswith("<blob 40 bytes: x'")
    assert outcome.structured["rows"][1][3] is None
    assert outcome.structured["next_cursor"]
    assert json.loads(outcome.text) == outcome.structured
