"""query_across: one read-only statement over every served database, each attached read-only by the
server under its alias; the model still cannot write, attach, detach or reach another file."""

from __future__ import annotations

import sqlite3

import pytest

from tests.harness import open_session
from tests.sqlite.cli import from_command_line
from tests.sqlite.helpers import file_digest


@pytest.fixture
def orders(tmp_path):
    path = tmp_path / "orders.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, person_id INTEGER, total REAL)")
    connection.executemany(
        "INSERT INTO orders(person_id, total) VALUES (?, ?)", [(1, 10.0), (1, 5.5), (2, 7.0)]
    )
    connection.commit()
    connection.close()
    return path


def both(people, orders, *flags):
    return from_command_line("--db", f"people={people}", "--db", f"shop-orders={orders}", *flags)


async def test_two_files_are_joined_as_alias_dot_table(people, orders, era):
    async with open_session(both(people, orders), era=era) as session:
        page = (
            await session.call_ok(
                "query_across",
                {
                    "sql": 'SELECT p.name, sum(o.total) FROM people.people AS p JOIN "shop-orders".orders AS o '
                    "ON o.person_id = p.id WHERE p.id <= ? GROUP BY p.id ORDER BY p.id",
                    "params": [2],
                },
            )
        ).data
    assert page["database"] == "*" and page["rows"] == [["person 1", 15.5], ["person 2", 7.0]]


async def test_pages_with_a_cursor_as_query_does(people, orders, era):
    async with open_session(both(people, orders), era=era) as session:
        sql = "SELECT id FROM people.people ORDER BY id"
        first = (await session.call_ok("query_across", {"sql": sql, "max_rows": 100})).data
        second = (
            await session.call_ok(
                "query_across", {"sql": sql, "max_rows": 100, "cursor": first["next_cursor"]}
            )
        ).data
    assert second["rows"][0] == [101] and second["offset"] == 100


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM people.pets",
        'INSERT INTO "shop-orders".orders(total) VALUES (1)',
        "CREATE TABLE people.x (a)",
        "CREATE TABLE x (a)",
        "CREATE TEMP TABLE x (a)",
        "ATTACH DATABASE '{tmp}/other.db' AS other",
        "DETACH DATABASE people",
        "PRAGMA people.journal_mode = DELETE",
        "VACUUM INTO '{tmp}/copy.db'",
        "SELECT load_extension('x')",
        "WITH d AS (DELETE FROM people.pets RETURNING id) SELECT * FROM d",
    ],
)
async def test_nothing_can_be_written_attached_or_detached(people, orders, tmp_path, sql, era):
    before = (file_digest(people), file_digest(orders))
    files = set(tmp_path.iterdir())
    async with open_session(both(people, orders, "--allow-write"), era=era) as session:
        text = await session.call_error("query_across", {"sql": sql.format(tmp=tmp_path)})
        still = (await session.call_ok("query_across", {"sql": "SELECT count(*) FROM people.pets"})).data
    assert text.startswith("Error (")
    assert (file_digest(people), file_digest(orders)) == before and set(tmp_path.iterdir()) == files
    assert still["rows"] == [[300]]  # the attachments survive a refused statement


async def test_an_alias_named_main_is_the_main_database(people, orders, era):
    server = from_command_line("--db", f"main={people}", "--db", f"orders={orders}")
    async with open_session(server, era=era) as session:
        page = (
            await session.call_ok("query_across", {"sql": "SELECT count(*) FROM main.people, orders.orders"})
        ).data
    assert page["rows"] == [[750]]


async def test_an_unknown_alias_is_a_clear_error(people, orders, era):
    async with open_session(both(people, orders), era=era) as session:
        text = await session.call_error("query_across", {"sql": "SELECT * FROM nowhere.people"})
    assert "nowhere" in text
