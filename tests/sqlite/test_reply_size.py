"""The host's context budget: what the tool list costs every turn, and that no single result at the default
limits exceeds MAX_REPLY_CHARS (100,000 characters, ~25,000 tokens at 4 characters a token) — each tool
driven at its worst: the widest rows, the longest names, the largest catalog and plan."""

from __future__ import annotations

import json
import sqlite3

import pytest

from dockyard_shared.toolsets import Exposure
from dockyard_sqlite.settings import MAX_REPLY_CHARS
from tests.harness import open_session
from tests.sqlite.helpers import make_server
from tests.workspace.test_context_budget import tool_chars

MAX_DESCRIPTION_CHARS = 2_048  # where one popular host cuts a tool description
MEAN_LISTING_CHARS = 800  # description + input schema, mean per tool, every toolset on


async def test_the_tool_list_fits_the_hosts_budget(people, era):
    async with open_session(make_server(people, exposure=Exposure(toolsets=("all",))), era=era) as session:
        tools = await session.list_tools()
    assert len(tools) == 9
    # Measured as the workspace budget measures it: compact JSON, as the listing travels.
    sizes = {t.name: tool_chars(t, "sqlite") for t in tools}
    assert all(len(t.description) <= MAX_DESCRIPTION_CHARS for t in tools)
    assert sum(sizes.values()) / len(sizes) <= MEAN_LISTING_CHARS, sizes
    for tool in tools:  # lean: no $defs, no "default": null; no type list (Gemini's Schema refuses one)
        listed = json.dumps(tool.input_schema)
        assert "$defs" not in listed and '"default": null' not in listed, tool.name
        assert not any(isinstance(p.get("type"), list) for p in tool.input_schema["properties"].values())


LONG = 100  # characters of every column name below


@pytest.fixture
def wide(tmp_path):
    """A table at SQLite's column limit with long names, long defaults, long values and many indexes."""
    path = tmp_path / "wide.db"
    names = [f"c{i:04d}_" + "n" * (LONG - 6) for i in range(1_900)]
    connection = sqlite3.connect(path)
    columns = ", ".join(f"{name} TEXT DEFAULT '{'d' * 200}'" for name in names)
    connection.execute(f"CREATE TABLE wide (id INTEGER PRIMARY KEY, {columns})")
    for index in range(40):
        connection.execute(
            f"CREATE INDEX wide_{index} ON wide ({', '.join(names[index * 40 : index * 40 + 40])})"
        )
    connection.executemany(
        f"INSERT INTO wide ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
        [["v" * 5_000] * len(names) for _ in range(3)],
    )
    connection.execute(f"CREATE TABLE blobs ({', '.join(f'b{i} BLOB' for i in range(1_500))})")
    connection.execute(f"INSERT INTO blobs VALUES ({', '.join(['randomblob(64)'] * 1_500)})")
    connection.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, a TEXT, b TEXT, c TEXT)")
    connection.executemany(
        "INSERT INTO rows (a, b, c) VALUES (?, ?, ?)", [("x" * 900, "y" * 900, "z" * 900)] * 5_000
    )
    for i in range(500):
        connection.execute(f'CREATE TABLE "{"t" * 300}{i:04d}" (x)')
    connection.commit()
    connection.close()
    return path


def fits(text: str) -> bool:
    return len(text) <= MAX_REPLY_CHARS


async def test_no_query_page_exceeds_one_reply(wide):
    async with open_session(make_server(wide)) as session:
        many = await session.call_ok("query", {"sql": "SELECT * FROM rows", "max_rows": 10_000})
        widest = await session.call("query", {"sql": "SELECT * FROM wide"})
        blobs = await session.call("query", {"sql": "SELECT * FROM blobs"})
        aliases = ", ".join(f"1 AS {'a' * 1_000}{i}" for i in range(100))
        named = await session.call("query", {"sql": f"SELECT {aliases}"})
    assert fits(many.text) and many.data["truncated"] and many.data["next_cursor"]
    assert 0 < len(many.data["rows"]) < 10_000
    for outcome in (widest, blobs, named):
        assert fits(outcome.text)
    assert blobs.is_error and "does not fit one reply" in blobs.text and "Select fewer columns" in blobs.text
    assert named.is_error and "column names alone" in named.text
    assert widest.is_error or len(widest.data["rows"]) == 1


async def test_describe_table_of_the_widest_table_fits_and_says_what_it_left_out(wide):
    async with open_session(make_server(wide)) as session:
        outcome = await session.call_ok("describe_table", {"table": "wide"})
        resource = await session.read_resource("sqlite://wide/tables/wide")
    assert fits(outcome.text) and fits(resource)
    described = outcome.data
    assert 0 < len(described["columns"]) < 1_901
    assert "columns fit one reply" in described["note"] and "pragma_table_info('wide')" in described["note"]
    assert "…[cut:" in described["create_sql"]


async def test_list_tables_with_long_names_fits(wide):
    async with open_session(make_server(wide)) as session:
        outcome = await session.call_ok("list_tables")
    assert fits(outcome.text)
    assert outcome.data["truncated"] and "tables and views are listed" in outcome.data["note"]


async def test_the_plan_of_the_largest_statement_fits(wide):
    union = " UNION ALL ".join(f"SELECT a FROM rows WHERE b = 'x{i}'" for i in range(500))
    async with open_session(make_server(wide)) as session:
        outcome = await session.call_ok("explain_query", {"sql": union})
    assert fits(outcome.text)


async def test_returning_rows_and_the_schema_fit(wide):
    async with open_session(make_server(wide, allow_write=True)) as session:
        outcome = await session.call_ok(
            "execute", {"sql": "UPDATE rows SET a = a WHERE id <= 100 RETURNING *"}
        )
        schema = await session.read_resource("sqlite://wide/schema")
    assert fits(outcome.text) and outcome.data["rows_affected"] == 100
    assert "only the first" in outcome.data["note"] and len(outcome.data["returned_rows"]) < 100
    assert fits(schema) and "-- Truncated" in schema
