"""Write mode: every destructive change asks the user, nothing TEMP outlives a call, and one call's
growth of the file is capped (issue 12, sqlite 8)."""

from __future__ import annotations

import sqlite3

import pytest

from tests.harness import open_session
from tests.sqlite.helpers import file_digest, make_server, rows


@pytest.fixture
def shop(tmp_path):
    path = tmp_path / "shop.db"
    connection = sqlite3.connect(path)
    connection.executescript(
        """
        CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, email TEXT);
        INSERT INTO people(name, email) VALUES ('ann', 'a@x'), ('bob', 'b@x'), ('cy', 'c@x');
        CREATE TABLE pets (id INTEGER PRIMARY KEY, owner_id INTEGER REFERENCES people(id), kind TEXT);
        INSERT INTO pets(owner_id, kind) VALUES (1, 'cat'), (1, 'dog'), (2, 'cat'), (3, 'eel');
        CREATE INDEX pets_by_owner ON pets(owner_id);
        CREATE VIEW pet_names AS SELECT p.name, q.kind FROM people p JOIN pets q ON q.owner_id = p.id;
        CREATE TRIGGER pets_touched AFTER INSERT ON pets BEGIN SELECT 1; END;
        CREATE TABLE tags (name TEXT PRIMARY KEY, uses INTEGER) WITHOUT ROWID;
        INSERT INTO tags VALUES ('red', 1), ('blue', 2);
        CREATE TABLE docs (body TEXT);
        CREATE TABLE audit (note TEXT);
        CREATE TRIGGER audit_rewrites AFTER INSERT ON audit BEGIN UPDATE people SET email = NULL; END;
        """
    )
    connection.commit()
    connection.close()
    return path


DESTRUCTIVE = [
    ("ALTER TABLE people DROP COLUMN email", "it drops column email of people"),
    ("UPDATE pets SET kind = 'dog'", "it changes every row of pets"),
    ("UPDATE pets SET kind = kind WHERE id > 0", "it changes every row of pets"),
    ("UPDATE tags SET uses = 0", "it changes every row of tags"),  # WITHOUT ROWID
    ("INSERT INTO audit VALUES ('hello')", "it changes every row of people"),  # through a trigger
    ("DROP INDEX pets_by_owner", "it drops pets_by_owner"),
    ("DROP VIEW pet_names", "it drops pet_names"),
    ("DROP TRIGGER pets_touched", "it drops pets_touched"),
]


@pytest.mark.parametrize(("sql", "effect"), DESTRUCTIVE)
async def test_a_destructive_change_asks_the_user_and_a_refusal_changes_nothing(shop, era, sql, effect):
    asked = []

    def decline(message):
        asked.append(message)
        return None

    before = file_digest(shop)
    async with open_session(make_server(shop, allow_write=True), era=era, elicit=decline) as session:
        text = await session.call_error("execute", {"sql": sql})
    assert "user declined" in text and effect in text
    assert len(asked) == 1 and effect in asked[0]
    assert file_digest(shop) == before  # the trial run left nothing behind


async def test_an_accepted_column_drop_and_full_update_run(shop):
    asked = []

    def accept(message):
        asked.append(message)
        return {"confirm": True}

    async with open_session(make_server(shop, allow_write=True), elicit=accept) as session:
        await session.call_ok("execute", {"sql": "ALTER TABLE people DROP COLUMN email"})
        updated = (await session.call_ok("execute", {"sql": "UPDATE pets SET kind = 'dog'"})).data
    assert len(asked) == 2 and updated["rows_affected"] == 4
    assert [r[1] for r in rows(shop, "PRAGMA table_info(people)")] == ["id", "name"]
    assert rows(shop, "SELECT DISTINCT kind FROM pets") == [("dog",)]


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE pets SET kind = 'dog' WHERE owner_id = 1",
        "ALTER TABLE people ADD COLUMN age INTEGER",
        "ALTER TABLE people RENAME COLUMN email TO mail",
        "INSERT INTO pets(owner_id, kind) VALUES (2, 'owl')",
        "DELETE FROM pets WHERE kind = 'eel'",
    ],
)
async def test_a_change_that_destroys_nothing_runs_without_asking(shop, sql):
    asked = []

    def record(message):
        asked.append(message)
        return None

    async with open_session(make_server(shop, allow_write=True), elicit=record) as session:
        await session.call_ok("execute", {"sql": sql})
    assert asked == []


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TEMP TRIGGER rewrite AFTER INSERT ON main.pets BEGIN UPDATE people SET name = 'pwned'; END",
        "CREATE TEMP VIEW everyone AS SELECT * FROM people",
        "CREATE TEMP TABLE scratch (x)",
        "CREATE TABLE temp.scratch (x)",
    ],
)
async def test_temp_objects_are_refused_so_nothing_invisible_rewrites_later_writes(shop, era, sql):
    async with open_session(make_server(shop, allow_write=True), era=era) as session:
        refused = await session.call_error("execute", {"sql": sql})
        for kind in ("owl", "yak", "emu"):  # later calls, on the same worker and connection
            await session.call_ok(
                "execute", {"sql": "INSERT INTO pets(owner_id, kind) VALUES (1, ?)", "params": [kind]}
            )
        temp = (await session.call_ok("query", {"sql": "SELECT count(*) FROM sqlite_temp_master"})).data
    assert refused.startswith("Error (permission_denied)") and "TEMP" in refused
    assert rows(shop, "SELECT name FROM people ORDER BY id") == [("ann",), ("bob",), ("cy",)]
    assert temp["rows"] == [[0]]


async def test_one_call_cannot_grow_the_file_past_the_write_limit(shop, era):
    big = (
        "INSERT INTO docs(body) SELECT printf('%.*c', 100000, 'x') FROM "
        "(WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 50) SELECT i FROM c)"
    )
    before = file_digest(shop)
    async with open_session(make_server(shop, allow_write=True, max_write_mb=1), era=era) as session:
        refused = await session.call_error("execute", {"sql": big})
        after_refusal = file_digest(shop)
        small = (await session.call_ok("execute", {"sql": big.replace("i < 50", "i < 5")})).data
    assert refused.startswith("Error (limit_exceeded)") and "more than 1 MiB" in refused
    assert "--max-write-mb" in refused and "Nothing was changed" in refused
    assert after_refusal == before
    assert small["rows_affected"] == 5
