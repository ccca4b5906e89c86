"""Catalog answers are kept only while the database file is unchanged, and never when they could be stale."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest

from dockyard_sqlite.catalog_cache import RACY_NS, CatalogCache
from dockyard_sqlite.database import Database
from dockyard_sqlite.database_set import DatabaseSet
from dockyard_sqlite.settings import Limits, parse_database_spec
from tests.harness import open_session
from tests.sqlite.helpers import make_server


def past_the_racy_window() -> None:
    """Let the files' last change fall out of the window in which the cache does not trust their stamps."""
    time.sleep(RACY_NS / 1e9 + 0.05)


def counter(values: list[int]):
    """A compute function that answers 1, 2, 3… so a test can tell a kept answer from a new one."""

    def compute() -> tuple[int, bool]:
        values.append(len(values) + 1)
        return values[-1], True

    return compute


@pytest.fixture
def database_file(tmp_path) -> Path:
    path = tmp_path / "cache.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE t (x)")
    connection.commit()
    connection.close()
    return path


def test_an_answer_is_kept_while_the_file_is_unchanged(database_file):
    past_the_racy_window()
    cache, calls = CatalogCache(database_file), []
    assert cache.answer("k", counter(calls)) == 1
    assert cache.get("k") == 1
    assert cache.answer("k", counter(calls)) == 1
    assert calls == [1]


def test_an_answer_computed_right_after_a_change_is_not_kept(database_file):
    # The file changed within the racy window: a second write in the same clock tick could leave its stamp
    # unchanged, so the answer must not outlive this call.
    os.utime(database_file)
    cache, calls = CatalogCache(database_file), []
    assert cache.answer("k", counter(calls)) == 1
    assert cache.get("k") is None
    assert cache.answer("k", counter(calls)) == 2


@pytest.mark.parametrize("suffix", ["", "-wal", "-journal"])
def test_a_change_to_the_file_its_wal_or_its_journal_discards_the_answer(database_file, suffix):
    past_the_racy_window()
    cache, calls = CatalogCache(database_file), []
    cache.answer("k", counter(calls))
    touched = Path(f"{database_file}{suffix}")
    with touched.open("ab") as handle:  # appears (wal, journal) or grows (the database)
        handle.write(b"\0")
    assert cache.get("k") is None
    assert cache.answer("k", counter(calls)) == 2


def test_an_answer_its_computation_calls_unkeepable_is_not_kept(database_file):
    past_the_racy_window()
    cache = CatalogCache(database_file)
    assert cache.answer("k", lambda: ("partial", False)) == "partial"
    assert cache.get("k") is None


def test_only_the_most_recently_used_answers_are_kept(database_file):
    past_the_racy_window()
    cache = CatalogCache(database_file, max_entries=2)
    for key in ("a", "b"):
        cache.answer(key, lambda key=key: (key, True))
    cache.get("a")  # now the most recently used
    cache.answer("c", lambda: ("c", True))
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == ("a", None, "c")


def open_database(path: Path) -> Database:
    return Database(parse_database_spec(str(path)), writable=False, create=False, limits=Limits())


def test_a_view_whose_rows_change_without_a_write_is_never_kept(database_file):
    connection = sqlite3.connect(database_file)
    connection.executescript(
        """
        INSERT INTO t VALUES (1), (2), (3);
        CREATE VIEW lucky AS SELECT x FROM t WHERE random() % 2 = 0;
        CREATE VIEW today AS SELECT x FROM t WHERE date('now') > '2000-01-01';
        """
    )
    connection.commit()
    connection.close()
    past_the_racy_window()
    database = open_database(database_file)
    database.table_listing()
    assert database.kept_listing() is None
    for view in ("lucky", "today"):
        database.describe_table(view)
        assert database.kept_description(view) is None
    database.describe_table("t")
    assert database.kept_description("t") is not None
    database.schema_ddl()
    assert database.kept_schema() is not None


def test_a_listing_of_tables_and_plain_views_is_kept(database_file):
    connection = sqlite3.connect(database_file)
    connection.execute("CREATE VIEW big AS SELECT x FROM t WHERE x > 1")
    connection.commit()
    connection.close()
    past_the_racy_window()
    database = open_database(database_file)
    listing = database.table_listing()
    assert database.kept_listing() is listing


async def test_the_catalog_tools_see_every_change_another_process_makes(people, era):
    async with open_session(make_server(people), era=era) as session:
        past_the_racy_window()
        for _ in range(2):  # the second answers are the kept ones
            tables = (await session.call_ok("list_tables")).data["tables"]
            pets = (await session.call_ok("describe_table", {"table": "pets"})).data
            schema = await session.read_resource("sqlite://people/schema")
        assert [t["name"] for t in tables] == ["people", "pets"]
        assert pets["row_count"] == 300 and "owners" not in schema

        writer = sqlite3.connect(people)
        writer.executescript(
            """
            INSERT INTO pets(owner_id, kind) VALUES (1, 'dog'), (2, 'dog');
            CREATE TABLE owners (id INTEGER PRIMARY KEY);
            """
        )
        writer.close()
        # At once, inside the racy window, and again once the change is old enough to be trusted.
        for wait in (False, True):
            if wait:
                past_the_racy_window()
            tables = {t["name"]: t for t in (await session.call_ok("list_tables")).data["tables"]}
            pets = (await session.call_ok("describe_table", {"table": "pets"})).data
            schema = await session.read_resource("sqlite://people/schema")
            assert tables["pets"]["row_count"] == 302 and "owners" in tables
            assert pets["row_count"] == 302
            assert "CREATE TABLE owners" in schema


async def test_the_catalog_tools_see_what_execute_wrote(people, era):
    async with open_session(make_server(people, allow_write=True), era=era) as session:
        past_the_racy_window()
        await session.call_ok("list_tables")
        await session.call_ok("list_tables")
        await session.call_ok("execute", {"sql": "DELETE FROM pets WHERE id <= 100"})
        tables = {t["name"]: t for t in (await session.call_ok("list_tables")).data["tables"]}
    assert tables["pets"]["row_count"] == 200


def test_the_warm_up_describes_the_first_tables_ahead_but_no_view_and_no_more_than_its_bound(tmp_path):
    path = tmp_path / "many.db"
    connection = sqlite3.connect(path)
    for name in ("a", "b", "c", "d"):
        connection.execute(f"CREATE TABLE {name} (x)")
    connection.execute("CREATE VIEW a_view AS SELECT x FROM a")
    connection.commit()
    connection.close()
    past_the_racy_window()
    databases = DatabaseSet((parse_database_spec(str(path)),), Limits()).open(writable=False)
    try:
        for _ in databases.warm_up():
            pass
        database = databases.resolve(None)
        assert database.kept_listing() is not None
        assert [name for name in ("a", "b", "c", "d") if database.kept_description(name)] == [
            "a",
            "b",
            "c",
            "d",
        ]
        assert database.kept_description("a_view") is None

        database.catalog.clear()
        database.table_listing()
        assert len(list(databases.describe_ahead(tables=2))) == 2
        assert [name for name in ("a", "b", "c", "d") if database.kept_description(name)] == ["a", "b"]
    finally:
        databases.close()
