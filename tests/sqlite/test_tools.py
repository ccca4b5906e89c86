"""Every dockyard-sqlite tool, resource, completion and prompt, through a client session (both eras)."""

from __future__ import annotations

import asyncio
import sqlite3

import mcp.types as mt
import pytest
from mcp.shared.exceptions import MCPError

from dockyard_shared import missing_description_sections
from tests.harness import open_session
from tests.sqlite.helpers import make_server


async def test_every_tool_has_a_complete_description_and_read_only_hint(people, era):
    async with open_session(make_server(people), era=era) as session:
        tools = await session.list_tools()
    assert {t.name for t in tools} == {
        "list_tables",
        "describe_table",
        "query",
        "explain_query",
        "search_schema",
        "query_across",
    }
    for tool in tools:
        assert missing_description_sections(tool.description) == [], tool.name
        assert tool.annotations.read_only_hint is True
        assert tool.output_schema is not None


async def test_list_tables_counts_rows_and_columns(people, era):
    async with open_session(make_server(people), era=era) as session:
        result = (await session.call_ok("list_tables")).data
    tables = {t["name"]: t for t in result["tables"]}
    assert tables["people"] == {
        "name": "people",
        "type": "table",
        "row_count": 250,
        "row_count_is": "exact",
        "column_count": 4,
        "problem": None,
    }
    assert tables["pets"]["row_count"] == 300


async def test_describe_table_gives_columns_keys_indexes_ddl_and_samples(people, era):
    async with open_session(make_server(people), era=era) as session:
        pets = (await session.call_ok("describe_table", {"table": "pets"})).data
        people_table = (await session.call_ok("describe_table", {"table": "PEOPLE"})).data
    assert [c["name"] for c in pets["columns"]] == ["id", "owner_id", "kind"]
    assert pets["foreign_keys"] == [
        {"columns": ["owner_id"], "referred_table": "people", "referred_columns": ["id"], "on_delete": None}
    ]
    assert pets["indexes"] == [{"name": "pets_by_owner", "columns": ["owner_id"], "unique": False}]
    assert pets["create_sql"].startswith("CREATE TABLE pets")
    assert len(pets["sample_rows"]) == 3
    name = next(c for c in people_table["columns"] if c["name"] == "name")
    assert name == {"name": "name", "type": "TEXT", "nullable": False, "default": None, "primary_key": False}
    assert people_table["sample_rows"][0][3].startswith("<blob 40 bytes: x'000102")


async def test_an_unknown_table_lists_close_matches(people, era):
    async with open_session(make_server(people), era=era) as session:
        text = await session.call_error("describe_table", {"table": "peple"})
    assert text.startswith("Error (not_found)") and "Did you mean 'people'" in text


async def test_query_binds_positional_and_named_params(people, era):
    async with open_session(make_server(people), era=era) as session:
        positional = (
            await session.call_ok("query", {"sql": "SELECT id, name FROM people WHERE id = ?", "params": [7]})
        ).data
        named = (
            await session.call_ok(
                "query", {"sql": "SELECT name FROM people WHERE id = :id", "params": {"id": 8}}
            )
        ).data
    assert positional["columns"] == ["id", "name"] and positional["rows"] == [[7, "person 7"]]
    assert positional["truncated"] is False and positional["next_cursor"] is None
    assert named["rows"] == [["person 8"]]


async def test_a_misspelt_column_suggests_the_right_one(people, era):
    async with open_session(make_server(people), era=era) as session:
        text = await session.call_error("query", {"sql": "SELECT nme FROM people"})
    assert "no such column: nme" in text and "Did you mean 'name' (in people)" in text


async def test_paging_through_every_page_yields_exactly_the_full_result(people, era):
    sql = "SELECT p.id, p.name, q.kind FROM people p JOIN pets q ON q.owner_id = p.id ORDER BY q.id"
    async with open_session(make_server(people), era=era) as session:
        rows, cursor, pages = [], None, 0
        while True:
            arguments = {"sql": sql, "max_rows": 7} | ({"cursor": cursor} if cursor else {})
            page = (await session.call_ok("query", arguments)).data
            rows += page["rows"]
            pages += 1
            if not page["truncated"]:
                assert page["next_cursor"] is None
                break
            assert "cursor" in page["note"]
            cursor = page["next_cursor"]
        full = (await session.call_ok("query", {"sql": sql, "max_rows": 1000})).data
    assert pages == 43 and len(rows) == 300
    assert rows == full["rows"]


async def test_a_page_is_bounded_in_characters_too(tmp_path, era):
    path = tmp_path / "wide.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE t (v TEXT)")
    connection.executemany("INSERT INTO t VALUES (?)", [("x" * 5000,) for _ in range(100)])
    connection.commit()
    connection.close()
    async with open_session(make_server(path), era=era) as session:
        page = (await session.call_ok("query", {"sql": "SELECT v FROM t", "max_rows": 100})).data
    assert page["truncated"] and 1 <= page["row_count"] < 100
    assert "characters" in page["note"]


async def test_a_cursor_for_another_query_is_refused(people, era):
    async with open_session(make_server(people), era=era) as session:
        first = (await session.call_ok("query", {"sql": "SELECT id FROM people", "max_rows": 5})).data
        text = await session.call_error(
            "query", {"sql": "SELECT name FROM people", "cursor": first["next_cursor"]}
        )
        forged = await session.call_error(
            "query", {"sql": "SELECT id FROM people", "cursor": "eyJvZmZzZXQiOjB9"}
        )
    assert "belongs to a different query" in text
    assert "cursor is not valid" in forged


async def test_max_rows_above_the_ceiling_is_refused(people, era):
    async with open_session(make_server(people, max_rows=50), era=era) as session:
        text = await session.call_error("query", {"sql": "SELECT 1", "max_rows": 51})
    assert "between 1 and 50" in text


async def test_explain_query_shows_the_plan_and_the_index_that_would_help(people, era):
    async with open_session(make_server(people), era=era) as session:
        scan = (
            await session.call_ok(
                "explain_query", {"sql": "SELECT * FROM people WHERE email = ?", "params": ["x"]}
            )
        ).data
        seek = (await session.call_ok("explain_query", {"sql": "SELECT * FROM pets WHERE owner_id = 3"})).data
    assert scan["plan"][0]["detail"] == "SCAN people"
    assert "index on people(email)" in scan["full_scans"][0]
    assert "USING INDEX pets_by_owner" in seek["plan"][0]["detail"] and seek["full_scans"] == []


async def test_explain_query_counts_a_unique_constraint_as_an_index(tmp_path, era):
    path = tmp_path / "unique.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, email TEXT UNIQUE, note TEXT)")
    connection.close()
    async with open_session(make_server(path), era=era) as session:
        plan = (
            await session.call_ok("explain_query", {"sql": "SELECT email, note FROM accounts ORDER BY note"})
        ).data
    assert plan["plan"][0]["detail"].startswith("SCAN accounts")
    assert "index on accounts(note)" in plan["full_scans"][0] and "email" not in plan["full_scans"][0]


async def test_several_databases_need_a_name_and_suggest_one(people, shop, era):
    async with open_session(make_server(people, shop), era=era) as session:
        ambiguous = await session.call_error("list_tables")
        unknown = await session.call_error("list_tables", {"database": "shp"})
        named = (await session.call_ok("list_tables", {"database": "shop"})).data
    assert "people, shop" in ambiguous and "Did you mean 'shop'" in unknown
    assert {t["name"] for t in named["tables"]} >= {"orders", "customers", "order_totals"}


async def test_resources_give_the_schema_and_a_table(people, era):
    async with open_session(make_server(people), era=era) as session:
        templates = {t.uri_template for t in await session.list_resource_templates()}
        ddl = await session.read_resource("sqlite://people/schema")
        table = await session.read_resource("sqlite://people/tables/pets")
        with pytest.raises(MCPError, match="no table or view named 'nope'"):
            await session.read_resource("sqlite://people/tables/nope")
    assert templates == {"sqlite://{database}/schema", "sqlite://{database}/tables/{table}"}
    assert "CREATE TABLE people" in ddl and "CREATE INDEX pets_by_owner" in ddl
    assert '"name":"pets"' in table.replace(" ", "")


async def test_completions_offer_database_and_table_names(people, shop, era):
    ref = mt.ResourceTemplateReference(type="ref/resource", uri="sqlite://{database}/tables/{table}")
    async with open_session(make_server(people, shop), era=era) as session:
        databases = await session.complete(ref, "database", "s")
        tables = await session.complete(ref, "table", "order", context={"database": "shop"})
    assert databases == ["shop"]
    assert set(tables) == {"order_items", "orders", "order_totals"}


async def test_the_exploration_prompt_walks_through_the_tools(people, era):
    async with open_session(make_server(people), era=era) as session:
        prompts = {p.name for p in await session.list_prompts()}
        (text,) = await session.get_prompt("explore_database", {"database": "people"})
    assert prompts == {"explore_database"}
    assert "list_tables" in text and "describe_table" in text and "'people'" in text


async def test_concurrent_queries_run_side_by_side(people, era):
    # The slow query is a fixed ~0.6 s of CPU: on a machine oversubscribed six times over that is near the
    # plain 5 s wall-clock limit, which this test is not about, so the limit here is far above it. What it
    # asserts is the overlap: the five short queries are answered while the slow one is still running (one
    # at a time, the calls sent after it would be answered after it).
    slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) FROM c"
    finished: list[str] = []

    async def call(label: str, sql: str):
        result = await session.call("query", {"sql": sql})
        finished.append(label)
        return result

    async with open_session(make_server(people, timeout_ms=120_000), era=era) as session:
        results = await asyncio.gather(
            call("slow", slow), *(call("short", "SELECT count(*) FROM people") for _ in range(5))
        )
    assert all(not r.is_error for r in results)
    assert results[0].data["rows"] == [[3000000]]
    assert all(r.data["rows"] == [[250]] for r in results[1:])
    assert finished == ["short"] * 5 + ["slow"]
