"""search_schema: tables, views and columns by name and type, in levels, paged and bounded, so a model
explores a database of thousands of tables without listing it whole."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.harness import open_session
from tests.sqlite.cli import from_command_line


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """2,000 tables (every tenth with a customer_id column, every hundredth with a created_at DATE),
    and a view."""
    path = tmp_path_factory.mktemp("wide") / "wide.db"
    connection = sqlite3.connect(path)
    for i in range(2000):
        extra = ", customer_id INTEGER REFERENCES t0000(id)" if i % 10 == 0 else ""
        extra += ", created_at DATE" if i % 100 == 0 else ""
        connection.execute(f"CREATE TABLE t{i:04d} (id INTEGER PRIMARY KEY, label TEXT{extra})")
    connection.execute("CREATE VIEW customer_view AS SELECT id, customer_id FROM t0010")
    connection.commit()
    connection.close()
    return path


async def search(session, **arguments):
    return (await session.call_ok("search_schema", arguments)).data


async def test_names_level_finds_columns_across_two_thousand_tables_and_pages(wide, era):
    async with open_session(from_command_line("--db", wide), era=era) as session:
        first = await search(session, pattern="customer_id")
        second = await search(session, pattern="customer_id", offset=first["next_offset"])
    # 200 tables carry the column; the view does too (and its name matches "customer" but not the pattern).
    assert first["total"] == 201 and first["detail"] == "names"
    assert first["names"][:2] == ["t0000.customer_id", "t0010.customer_id"]
    assert len(first["names"]) == 200 and first["next_offset"] == 200
    assert "pass offset=200" in first["note"]
    assert second["names"] == ["customer_view.customer_id"] and second["next_offset"] is None


async def test_a_glob_matches_table_names_and_a_type_filter_matches_declared_types(wide, era):
    async with open_session(from_command_line("--db", wide), era=era) as session:
        tables = await search(session, pattern="T19?9")
        dates = await search(session, column_type="date", detail="summary")
    assert tables["names"] == [f"t19{i}9" for i in range(10)]  # any case
    assert dates["total"] == 20
    assert dates["tables"][0] == {
        "name": "t0000",
        "type": "table",
        "column_count": 4,
        "columns": ["created_at DATE"],
    } | {k: None for k in ("column_details", "foreign_keys", "problem")}


async def test_full_level_gives_every_column_and_foreign_keys(wide, era):
    async with open_session(from_command_line("--db", wide), era=era) as session:
        full = await search(session, pattern="t0010", detail="full")
    (table,) = full["tables"]
    assert [c["name"] for c in table["column_details"]] == ["id", "label", "customer_id"]
    assert table["column_details"][0]["primary_key"] is True
    assert table["foreign_keys"] == [
        {"columns": ["customer_id"], "referred_table": "t0000", "referred_columns": ["id"], "on_delete": None}
    ]


async def test_every_level_fits_a_reply_and_says_how_to_go_on(wide, era):
    async with open_session(from_command_line("--db", wide), era=era) as session:
        for detail in ("names", "summary", "full"):
            page = await session.call_ok("search_schema", {"detail": detail})
            assert len(json.dumps(page.data)) < 100_000
            assert page.data["total"] == 2001 and page.data["next_offset"] is not None


async def test_a_table_too_wide_for_a_reply_is_cut_and_says_so(tmp_path, era):
    path = tmp_path / "wide_columns.db"
    connection = sqlite3.connect(path)
    columns = ", ".join(f"c{i}_{'x' * 900} TEXT" for i in range(1500))
    connection.execute(f"CREATE TABLE huge ({columns})")
    connection.close()
    async with open_session(from_command_line("--db", path), era=era) as session:
        page = await session.call_ok("search_schema", {"detail": "full"})
    assert len(json.dumps(page.data)) < 100_000
    (table,) = page.data["tables"]
    assert table["column_count"] == 1500 and len(table["column_details"]) < 1500
    assert "columns fit one reply" in table["problem"]


async def test_an_unreadable_view_is_reported_and_the_rest_searched(tmp_path, era):
    path = tmp_path / "broken.db"
    connection = sqlite3.connect(path)
    connection.create_function("custom", 1, lambda x: x)
    connection.executescript(
        "CREATE TABLE orders (id INTEGER, total REAL); CREATE VIEW odd AS SELECT custom(id) AS c FROM orders;"
    )
    connection.close()
    async with open_session(from_command_line("--db", path), era=era) as session:
        page = await search(session, detail="summary")
    by_name = {t["name"]: t for t in page["tables"]}
    assert by_name["orders"]["columns"] == ["id INTEGER", "total REAL"]
    assert "custom" in by_name["odd"]["problem"]


async def test_bad_arguments_get_a_clear_error(wide, era):
    async with open_session(from_command_line("--db", wide), era=era) as session:
        long = await session.call_error("search_schema", {"pattern": "x" * 500})
        negative = await session.call_error("search_schema", {"offset": -1})
        level = await session.call_error("search_schema", {"detail": "everything"})
    assert "at most 200" in long and "offset" in negative and "detail" in level


async def test_a_search_is_answered_again_from_the_file_after_a_change(tmp_path, era):
    path = tmp_path / "changing.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE first (amount REAL)")
    connection.commit()
    async with open_session(from_command_line("--db", path), era=era) as session:
        before = await search(session, pattern="amount")
        again = await search(session, pattern="amount")
        connection.execute("CREATE TABLE second (amount_due REAL)")
        connection.commit()
        after = await search(session, pattern="amount")
    connection.close()
    assert before == again and before["names"] == ["first.amount"]
    assert after["names"] == ["first.amount", "second.amount_due"]
