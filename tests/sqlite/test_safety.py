"""Hostile statements are refused by SQLite itself and leave the database file byte-identical."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from tests.harness import open_session
from tests.sqlite.conftest import file_digest, make_server

HOSTILE = [
    ("VACUUM INTO '{tmp}/copy.db'", "ATTACH or VACUUM INTO"),
    ("ATTACH DATABASE '{tmp}/other.db' AS other", "ATTACH"),
    ("DETACH DATABASE main", None),
    ("DELETE FROM people", "DELETE on people"),
    ("UPDATE people SET name = 'x'", "UPDATE on people"),
    ("INSERT INTO people(name) VALUES ('x')", "INSERT on people"),
    ("DROP TABLE pets", "changing the schema"),
    ("CREATE TABLE evil (x)", "changing the schema"),
    ("ALTER TABLE people ADD COLUMN evil TEXT", None),
    ("CREATE TEMP TABLE t AS SELECT 1", None),
    ("PRAGMA writable_schema = ON", "PRAGMA writable_schema"),
    ("PRAGMA journal_mode = WAL", "PRAGMA journal_mode"),
    ("PRAGMA user_version = 7", "PRAGMA user_version=7"),
    ("PRAGMA query_only = OFF", None),
    ("PRAGMA trusted_schema = ON", None),
    ("SELECT load_extension('/tmp/evil.so')", "load_extension"),
    ("SELECT writefile('{tmp}/x', 'y')", None),
    ("BEGIN IMMEDIATE", "transaction control"),
    ("SAVEPOINT s", None),
    ("REINDEX", None),
    ("ANALYZE", None),
    ("SELECT 1; DELETE FROM people", "one SQL statement"),
    ("/* harmless */ DELETE FROM people -- select", "DELETE on people"),
    ("WITH x AS (SELECT 1) DELETE FROM people", "DELETE on people"),
    ("CREATE VIRTUAL TABLE v USING fts5(x)", None),
]


@pytest.mark.parametrize(("sql", "expected"), HOSTILE)
async def test_a_hostile_statement_is_refused_and_changes_nothing(people, tmp_path, era, sql, expected):
    before = file_digest(people)
    statement = sql.format(tmp=tmp_path)
    async with open_session(make_server(people), era=era) as session:
        text = await session.call_error("query", {"sql": statement})
    assert text.startswith("Error ("), text
    if expected:
        assert expected in text
    assert "Traceback" not in text
    assert file_digest(people) == before
    assert (
        not (tmp_path / "copy.db").exists()
        and not (tmp_path / "other.db").exists()
        and not (tmp_path / "x").exists()
    )


async def test_read_only_pragmas_and_pragma_functions_stay_usable(people, era):
    async with open_session(make_server(people), era=era) as session:
        info = (await session.call_ok("query", {"sql": "PRAGMA table_info(pets)"})).data
        function = (
            await session.call_ok("query", {"sql": "SELECT name FROM pragma_table_info('people')"})
        ).data
        version = (await session.call_ok("query", {"sql": "PRAGMA user_version"})).data
    assert [r[1] for r in info["rows"]] == ["id", "owner_id", "kind"]
    assert [r[0] for r in function["rows"]] == ["id", "name", "email", "photo"]
    assert version["rows"] == [[0]]


async def test_a_runaway_recursive_query_is_stopped_and_the_server_keeps_answering(people, era):
    runaway = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"
    async with open_session(make_server(people, timeout_ms=300), era=era) as session:
        stopped = asyncio.create_task(session.call("query", {"sql": runaway}))
        meanwhile = await session.call_ok("query", {"sql": "SELECT count(*) FROM pets"})
        outcome = await stopped
    assert meanwhile.data["rows"] == [[300]]
    assert outcome.is_error and outcome.text.startswith("Error (limit_exceeded)")
    assert "300 ms limit" in outcome.text and "recursive CTE" in outcome.text


async def test_a_huge_text_value_is_cut_and_says_how_to_read_on(tmp_path, era):
    path = tmp_path / "big.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE docs (body TEXT)")
    connection.execute("INSERT INTO docs VALUES (?)", ("y" * 50_000,))
    connection.commit()
    connection.close()
    async with open_session(make_server(path), era=era) as session:
        (value,) = (await session.call_ok("query", {"sql": "SELECT body FROM docs"})).data["rows"][0]
    assert len(value) < 10_200 and "40000 more characters" in value and "substr(column, 10001)" in value
