"""ui://sqlite/result rendered in headless Chromium by the test host (tests/apps: the ext-apps SDK's AppBridge):
a page shows, a header click sorts it, *Next page* reads the continuation through the host, *Copy CSV* gives
the page as CSV, and hostile names and values stay text. Screenshots go to ``$DOCKYARD_TEST_ARTIFACTS/views``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.apps.fixtures import open_view, view_artifacts, view_browser, view_host, view_page_url  # noqa: F401
from tests.harness import ERAS, MODERN

from .helpers import make_server

HOSTILE = '<img src=x onerror="window.__pwned=1">'
SQL = "SELECT id, name, note, photo FROM items ORDER BY id"

# (name, note, photo): NULL next to the text 'NULL', formulas, quoting, a blob, an empty text.
ITEMS = [
    ("pear", None, bytes(range(40))),
    ("apple", "NULL", None),
    ("fig", "=1+2", None),
    ("Zebra", "-5", None),
    ("kiwi", 'say "hi", then\nleave', None),
    ("date", "", b"\x00" * 3000),
    ("lime", "@SUM(A1)", None),
    ("plum", "+x", None),
]


@pytest.fixture
def items(tmp_path: Path) -> Path:
    path = tmp_path / "items.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, note TEXT, photo BLOB)")
    connection.executemany("INSERT INTO items (name, note, photo) VALUES (?, ?, ?)", ITEMS)
    connection.commit()
    connection.close()
    return path


async def _column(view, index: int) -> list[str]:
    return await view.texts(f"#grid tbody tr td:nth-child({index})")


@pytest.mark.parametrize("era", ERAS)
async def test_a_page_renders_with_null_blob_and_its_place(open_view, items, era):  # noqa: F811
    view = await open_view(make_server(items), "query", {"sql": SQL, "max_rows": 5}, era=era)
    await view.wait_for("#grid tbody tr")
    assert await view.texts("#grid thead th") == ["id", "name", "note", "photo"]
    assert await _column(view, 1) == ["1", "2", "3", "4", "5"]
    assert await view.wait_for_text("#status", "Rows 1–5, more follow")
    # NULL is marked as such; the text 'NULL' is plain text.
    null_cell = view.locator("#grid tbody tr:nth-child(1) td:nth-child(3)")
    text_cell = view.locator("#grid tbody tr:nth-child(2) td:nth-child(3)")
    assert (await null_cell.inner_text(), await null_cell.get_attribute("class")) == ("NULL", "null")
    assert (await text_cell.inner_text(), await text_cell.get_attribute("class")) == ("NULL", None)
    assert await _column(view, 4) == ["blob, 40 B", "NULL", "NULL", "NULL", "NULL"]
    assert await view.evaluate("document.documentElement.dataset.theme") == "light"
    await view.screenshot(f"sqlite-result-{era}")
    await view.set_host_context({"theme": "dark"})
    await view.run(
        lambda page, frame: frame.wait_for_function("document.documentElement.dataset.theme === 'dark'")
    )
    await view.screenshot(f"sqlite-result-dark-{era}")
    assert await view.tool_calls() == []
    view.assert_no_errors()


async def test_clicking_a_header_sorts_the_page_shown(open_view, items):  # noqa: F811
    view = await open_view(make_server(items), "query", {"sql": SQL}, era=MODERN)
    await view.wait_for("#grid tbody tr")
    name = "#grid thead th:nth-child(2) button"
    await view.click(name)
    assert await _column(view, 2) == sorted(row[0] for row in ITEMS)  # SQLite's BINARY order: "Zebra" first
    assert await view.locator("#grid thead th:nth-child(2)").get_attribute("aria-sort") == "ascending"
    await view.click(name)
    assert await _column(view, 2) == sorted((row[0] for row in ITEMS), reverse=True)
    await view.click(name)  # a third click: the query's own order again
    assert await _column(view, 2) == [row[0] for row in ITEMS]
    # Mixed types sort as SQLite orders them: NULL, then text (the empty text first).
    await view.click("#grid thead th:nth-child(3) button")
    assert (await _column(view, 3))[:3] == ["NULL", "", "+x"]
    await view.click("#grid thead th:nth-child(4) button")  # blobs by size, after the NULLs
    assert (await _column(view, 4))[-2:] == ["blob, 40 B", "blob, 2.9 KiB"]
    assert await view.tool_calls() == []  # sorting asks the server nothing
    view.assert_no_errors()


@pytest.mark.parametrize("era", ERAS)
async def test_next_page_reads_the_continuation_through_the_host(open_view, items, era):  # noqa: F811
    arguments = {"sql": SQL, "max_rows": 3}
    view = await open_view(make_server(items), "query", arguments, era=era)
    await view.wait_for("#grid tbody tr")
    first_cursor = view.tool_result["structuredContent"]["next_cursor"]
    await view.click("#next")
    await view.wait_for_text("#status", "Rows 4–6, more follow")
    assert await _column(view, 1) == ["4", "5", "6"]
    (call,) = await view.tool_calls()
    assert call["name"] == "query"
    assert call["arguments"] == {**arguments, "cursor": first_cursor, "database": "items"}
    await view.click("#next")
    await view.wait_for_text("#status", "Rows 7–8, the last page")
    assert await view.locator("#next").is_disabled()
    await view.click("#prev")
    await view.wait_for_text("#status", "Rows 4–6")
    assert len(await view.tool_calls()) == 2  # going back shows the page read, it does not ask again
    view.assert_no_errors()


async def test_copy_as_csv_gives_the_page_shown_quoted_and_neutralised(open_view, items):  # noqa: F811
    view = await open_view(make_server(items), "query", {"sql": SQL}, era=MODERN)
    await view.wait_for("#grid tbody tr")
    await view.click("#grid thead th:nth-child(1) button")
    await view.click("#grid thead th:nth-child(1) button")  # descending: the CSV follows the order shown
    await view.click("#copy")  # the handler fills the text box before the click returns
    csv = await view.evaluate("document.getElementById('csv').value")
    # The test host grants the frame no clipboard-write (nor do hosts unless asked): the view copies from
    # its text box instead, left visible and selected in case the host blocks that too.
    assert await view.locator("#csv").is_visible()
    assert await view.text("#status") == "Copied 8 rows as CSV."
    await view.run(lambda page, frame: page.context.grant_permissions(["clipboard-read"]))
    pasted = await view.run(lambda page, frame: page.evaluate("navigator.clipboard.readText()"))
    assert pasted == csv  # what a paste would give
    blob = f"<blob 40 bytes: x'{bytes(range(32)).hex()}…'>"
    big = f"<blob 3000 bytes: x'{'00' * 32}…'>"
    assert csv == (
        "id,name,note,photo\n"
        "8,plum,'+x,\n"
        "7,lime,'@SUM(A1),\n"
        f'6,date,"",{big}\n'
        '5,kiwi,"say ""hi"", then\nleave",\n'
        "4,Zebra,-5,\n"
        "3,fig,'=1+2,\n"
        "2,apple,NULL,\n"
        f"1,pear,,{blob}\n"
    )
    view.assert_no_errors()


async def test_hostile_names_and_values_stay_text(open_view, items):  # noqa: F811
    quoted = HOSTILE.replace('"', '""')
    arguments = {
        "sql": f'SELECT ? AS "{quoted}", ? AS plain',
        "params": [HOSTILE, "<script>window.__pwned=2</script>"],
    }
    view = await open_view(make_server(items), "query", arguments, era=MODERN)
    await view.wait_for("#grid tbody tr")
    assert await view.texts("#grid thead th") == [HOSTILE, "plain"]
    assert await view.texts("#grid tbody td") == [HOSTILE, "<script>window.__pwned=2</script>"]
    assert await view.evaluate("typeof window.__pwned") == "undefined"
    assert await view.evaluate("document.querySelectorAll('img, #grid script').length") == 0
    assert await view.text("#status") == "Row 1 · items"
    await view.screenshot("sqlite-result-hostile")
    # An error result (the host pushes the model's next call, which failed) is shown as text too.
    await view.send_tool_result({"content": [{"type": "text", "text": HOSTILE}], "isError": True})
    assert await view.wait_for_text("#error", HOSTILE) == HOSTILE
    assert await view.texts("#grid tbody tr") == []
    assert await view.evaluate("typeof window.__pwned") == "undefined"
    view.assert_no_errors()
