"""Hostile statements are refused by SQLite itself and leave the database file byte-identical."""

from __future__ import annotations

import asyncio
import sqlite3
import time

import pytest

from dockyard_shared import json_size
from dockyard_sqlite.database import MAX_LISTED_TABLES, Budget, Database
from dockyard_sqlite.settings import Limits, parse_database_spec
from tests.harness import open_session
from tests.sqlite.helpers import file_digest, make_server

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


# -- time limits that Python functions would escape ----------------------------------------------


async def test_regexp_is_refused_at_once_and_cannot_tie_up_the_server(people, era):
    # SQLAlchemy registers a Python regexp() on every connection; SQLite's progress handler never runs
    # inside it, so this took ~1.6 s under a 300 ms limit (each extra 'a' doubles it) and could not be
    # cancelled; a handful at once held every pooled connection.
    catastrophic = "SELECT 'aaaaaaaaaaaaaaaaaaaaaaaa!' REGEXP '^(a+)+$'"
    async with open_session(make_server(people, timeout_ms=300), era=era) as session:
        started = time.monotonic()
        calls = [
            asyncio.create_task(session.call("query", {"sql": sql}))
            for sql in [catastrophic] * 6 + ["SELECT regexp('^(a+)+$', name) FROM people"]
        ]
        meanwhile = await session.call_ok("query", {"sql": "SELECT count(*) FROM pets"})
        outcomes = await asyncio.gather(*calls)
        elapsed = time.monotonic() - started
    assert meanwhile.data["rows"] == [[300]]
    for outcome in outcomes:
        assert outcome.is_error, outcome.text
        assert "REGEXP is not available" in outcome.text and "LIKE" in outcome.text and "GLOB" in outcome.text
    assert elapsed < 3, f"took {elapsed:.1f} s"


def _planted_regexp_column(path):
    """A table whose generated column runs a catastrophic REGEXP on its row (26 a's: ~6 s of
    backtracking in Python's re), next to one using instr(): SQLite names instr() as the unsafe use, so
    the server trusts the schema for the statement (Python cannot mark its bounded instr innocuous),
    and SQLite never asks the authorizer about a generated column's expression."""
    connection = sqlite3.connect(path)
    connection.create_function("regexp", 2, lambda pattern, text: 0, deterministic=True)  # to write it
    connection.executescript(
        """
        CREATE TABLE t (
            a TEXT,
            slow INTEGER GENERATED ALWAYS AS (a REGEXP '^(a+)+$'),
            at INTEGER GENERATED ALWAYS AS (instr(a, 'b'))
        );
        INSERT INTO t(a) VALUES ('aaaaaaaaaaaaaaaaaaaaaaaaaa!');
        """
    )
    connection.commit()
    connection.close()
    return path


def test_a_schema_expression_cannot_reach_sqlalchemys_regexp_on_a_fresh_connection(tmp_path):
    # The first statement on a new connection is the one that runs with the schema trusted; before
    # the fix SQLAlchemy's regexp ran here and the pattern backtracked past every time limit.
    database = Database(
        parse_database_spec(str(_planted_regexp_column(tmp_path / "planted.db"))),
        writable=False,
        create=False,
        limits=Limits(timeout_ms=300),
    )
    started = time.monotonic()
    with pytest.raises(Exception) as refused:
        database.query("SELECT slow FROM t", None, max_rows=None, cursor=None, budget=Budget(300))
    assert time.monotonic() - started < 3
    assert "REGEXP is not available" in str(refused.value) and "generated column" in str(refused.value)


async def test_regexp_in_a_generated_column_is_refused_on_new_and_reused_connections(tmp_path, era):
    path = _planted_regexp_column(tmp_path / "planted.db")
    before = file_digest(path)
    async with open_session(make_server(path, timeout_ms=300), era=era) as session:
        started = time.monotonic()
        # Six at once: the pool opens new connections for some, others reuse one.
        outcomes = await asyncio.gather(
            *(session.call("query", {"sql": "SELECT a, slow FROM t"}) for _ in range(6))
        )
        elapsed = time.monotonic() - started
        plain = (await session.call_ok("query", {"sql": "SELECT a, at FROM t"})).data
    for outcome in outcomes:
        assert outcome.is_error and "REGEXP is not available" in outcome.text, outcome.text
        assert "generated column" in outcome.text and "other columns by name" in outcome.text
    assert elapsed < 3, f"took {elapsed:.1f} s"
    assert plain["rows"] == [["aaaaaaaaaaaaaaaaaaaaaaaaaa!", 0]]
    assert file_digest(path) == before


async def test_a_like_or_glob_pattern_is_bounded_in_length(people, era):
    # One LIKE runs as a single step the time limit cannot stop, costing text length × pattern length
    # (minutes for a 16 MiB text and a long pattern): patterns are capped, with a way around.
    long_pattern = "%" + "ab" * 100 + "%"
    async with open_session(make_server(people), era=era) as session:
        like = await session.call_error(
            "query", {"sql": "SELECT count(*) FROM people WHERE name LIKE ?", "params": [long_pattern]}
        )
        glob = await session.call_error(
            "query", {"sql": f"SELECT count(*) FROM people WHERE name GLOB '*{'ab' * 100}*'"}
        )
        short = await session.call_ok(
            "query",
            {"sql": "SELECT count(*) FROM people WHERE name LIKE ?", "params": ["%" + "a" * 100 + "%"]},
        )
        literal = await session.call_ok(
            "query", {"sql": "SELECT count(*) FROM people WHERE instr(name, ?) > 0", "params": ["ab" * 100]}
        )
    for refused in (like, glob):
        assert "longer than 128 bytes" in refused and "instr(" in refused
    assert short.data["rows"] == [[0]] and literal.data["rows"] == [[0]]


# -- every value, row and reply is bounded --------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT zeroblob(20000000)",
        "SELECT length(replace(printf('%.*c', 1000000, 'x'), 'x', 'xxxxxxxxxxxxxxxxxxxxx'))",
        "SELECT length(group_concat(printf('%.*c', 1000000, 'x'))) FROM pets",
    ],
)
async def test_a_value_over_the_length_limit_is_refused_before_it_is_built(people, sql):
    async with open_session(make_server(people)) as session:
        text = await session.call_error("query", {"sql": sql})
    assert text.startswith("Error (limit_exceeded)") and "16 MiB" in text
    assert "substr(" in text and "length(" in text and "will not help" in text


async def test_printf_cannot_build_a_huge_string(people):
    async with open_session(make_server(people)) as session:
        outcome = await session.call("query", {"sql": "SELECT printf('%.*c', 20000000, 'x') AS big"})
    # SQLite's printf() answers NULL past the limit (a newer SQLite may raise instead): never 20 MB.
    assert (outcome.is_error and "16 MiB" in outcome.text) or outcome.data["rows"] == [[None]]


async def test_a_stored_value_over_the_limit_is_explained_and_its_row_stays_usable(tmp_path):
    path = tmp_path / "huge.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE files (id INTEGER PRIMARY KEY, name TEXT, body BLOB)")
    connection.execute("INSERT INTO files VALUES (1, 'big.bin', zeroblob(17 * 1024 * 1024))")
    connection.commit()
    connection.close()
    async with open_session(make_server(path)) as session:
        everything = await session.call_error("query", {"sql": "SELECT * FROM files"})
        named = (await session.call_ok("query", {"sql": "SELECT id, name, length(body) FROM files"})).data
    assert everything.startswith("Error (limit_exceeded)") and "instead of SELECT *" in everything
    assert named["rows"] == [[1, "big.bin", 17 * 1024 * 1024]]


async def test_a_row_wider_than_a_page_is_cut_to_fit(people):
    columns = ", ".join(f"printf('%.*c', 20000, 'x') AS c{i}" for i in range(200))
    async with open_session(make_server(people, max_chars=100_000)) as session:
        outcome = await session.call_ok("query", {"sql": f"SELECT {columns}"})
    (row,) = outcome.data["rows"]
    assert len(row) == 200 and all("more characters; select substr(column," in value for value in row)
    assert json_size(row) <= 100_000  # was 200 × 10,000 characters: 2 MB in one reply


def _many_tables(path, count: int) -> None:
    connection = sqlite3.connect(path)
    connection.executescript(
        "".join(
            f"CREATE TABLE t{i:04d} (id INTEGER PRIMARY KEY, {', '.join(f'c{j} TEXT' for j in range(10))});"
            for i in range(count)
        )
    )
    connection.commit()
    connection.close()


async def test_the_schema_resource_is_bounded_and_says_where_the_rest_is(tmp_path):
    path = tmp_path / "many.db"
    _many_tables(path, 400)  # ~60,000 characters of DDL
    async with open_session(make_server(path, max_chars=20_000)) as session:
        ddl = await session.read_resource("sqlite://many/schema")
    assert len(ddl) < 21_000
    assert ddl.startswith("CREATE TABLE t0000 ") and "CREATE TABLE t0399 " not in ddl
    assert "-- Truncated" in ddl and "of 400 CREATE statements" in ddl
    assert "list_tables" in ddl and "describe_table" in ddl


async def test_list_tables_is_capped(tmp_path):
    path = tmp_path / "many.db"
    _many_tables(path, MAX_LISTED_TABLES + 20)
    async with open_session(make_server(path)) as session:
        tables = (await session.call_ok("list_tables")).data["tables"]
    assert len(tables) == MAX_LISTED_TABLES and tables[-1]["name"] == f"t{MAX_LISTED_TABLES - 1:04d}"
    listing = Database(
        parse_database_spec(str(path)), writable=False, create=False, limits=Limits()
    ).table_listing()
    assert listing.truncated and listing.total == MAX_LISTED_TABLES + 20
    assert f"first {MAX_LISTED_TABLES} of {MAX_LISTED_TABLES + 20}" in listing.note


async def test_a_misspelt_column_lists_the_columns_of_the_table_the_statement_names(people, era):
    async with open_session(make_server(people), era=era) as session:
        text = await session.call_error("query", {"sql": "SELECT nme FROM people WHERE id = 1"})
        joined = await session.call_error(
            "query", {"sql": "SELECT p.nme FROM people p JOIN pets q ON q.owner_id = p.id"}
        )
    assert "no such column: nme" in text and "Did you mean 'name' (in people)?" in text
    assert "Columns of people: id, name, email, photo." in text
    assert "Did you mean 'name' (in people)?" in joined and "Columns of" not in joined


# -- single function calls the progress handler cannot stop ----------------------------------------


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        # SQLite 3.40.1 keeps looping after it gives up on the value: ~20 s in one step.
        ("SELECT printf('%.*c', 2147483647, 'x')", None),
        ("SELECT format('%.2147483647c', 'x')", None),
        # Each repeat fits, but SQLite writes them all before it gives up: ~8 s.
        ("SELECT printf(?, 'x')", ["%.100000c" * 10_000]),
    ],
)
async def test_printf_that_would_loop_for_seconds_is_stopped_at_the_time_limit(people, era, sql, params):
    async with open_session(make_server(people, timeout_ms=300), era=era) as session:
        # Fewer than the server's workers: one stays free for the call made meanwhile.
        hostile = [
            asyncio.create_task(session.call("query", {"sql": sql, "params": params})) for _ in range(2)
        ]
        meanwhile = await session.call_ok("query", {"sql": "SELECT printf('%d pets', count(*)) FROM pets"})
        outcomes = await asyncio.gather(*hostile)
    assert meanwhile.data["rows"] == [["300 pets"]]
    for outcome in outcomes:
        assert outcome.is_error and outcome.text.startswith("Error (limit_exceeded)"), outcome.text
        assert "300 ms limit" in outcome.text and "will not help" in outcome.text


async def test_views_and_generated_columns_using_printf_instr_and_replace_read(tmp_path, era):
    path = tmp_path / "schema.db"
    connection = sqlite3.connect(path)
    connection.executescript(
        """
        CREATE TABLE t (a TEXT, at INTEGER GENERATED ALWAYS AS (instr(a, 'b')));
        CREATE INDEX t_swapped ON t(replace(a, 'x', 'y'));
        CREATE VIEW v AS SELECT replace(a, 'x', 'y') AS r, printf('%5s|', a) AS p, format('%d', at) AS f FROM t;
        INSERT INTO t(a) VALUES ('xbq'), ('abc');
        """
    )
    connection.commit()
    connection.close()
    before = file_digest(path)
    async with open_session(make_server(path), era=era) as session:
        table = (await session.call_ok("query", {"sql": "SELECT a, at FROM t ORDER BY a"})).data
        view = (await session.call_ok("query", {"sql": "SELECT * FROM v ORDER BY r"})).data
        indexed = (
            await session.call_ok("query", {"sql": "SELECT a FROM t WHERE replace(a, 'x', 'y') = 'ybq'"})
        ).data
        # SQLite's own printf/instr/replace: innocuous, so the schema may use them with trusted_schema off.
        refused = await session.call_error("query", {"sql": "SELECT r, 'a' REGEXP 'a' FROM v"})
    assert table["rows"] == [["abc", 2], ["xbq", 2]]
    assert view["rows"] == [["abc", "  abc|", "2"], ["ybq", "  xbq|", "2"]]
    assert indexed["rows"] == [["xbq"]]
    assert "REGEXP is not available" in refused
    assert file_digest(path) == before
