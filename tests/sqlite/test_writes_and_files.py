"""Write mode and its confirmations; missing, corrupt and locked files; cancellation."""

from __future__ import annotations

import sqlite3
import time

import anyio
import pytest

from dockyard_shared import Conflict
from dockyard_sqlite.database import Budget
from dockyard_sqlite.database_set import DatabaseSet
from dockyard_sqlite.settings import Limits, parse_database_spec
from tests.harness import LEGACY, open_session
from tests.sqlite.helpers import file_digest, make_server, rows


async def test_execute_exists_only_in_write_mode_with_a_destructive_hint(people, era):
    async with open_session(make_server(people), era=era) as session:
        assert "execute" not in await session.tool_names()
    async with open_session(make_server(people, allow_write=True), era=era) as session:
        (tool,) = [t for t in await session.list_tools() if t.name == "execute"]
    assert tool.annotations.destructive_hint is True and tool.annotations.read_only_hint is False


async def test_execute_inserts_updates_and_reports_what_changed(people, era):
    async with open_session(make_server(people, allow_write=True), era=era) as session:
        inserted = (
            await session.call_ok(
                "execute", {"sql": "INSERT INTO people(name) VALUES (?)", "params": ["Zoë"]}
            )
        ).data
        updated = (
            await session.call_ok(
                "execute", {"sql": "UPDATE pets SET kind = 'dog' WHERE owner_id = :o", "params": {"o": 2}}
            )
        ).data
        returning = (
            await session.call_ok("execute", {"sql": "DELETE FROM pets WHERE id <= 2 RETURNING id"})
        ).data
        still_read_only = await session.call_error("query", {"sql": "DELETE FROM pets"})
    assert inserted["rows_affected"] == 1 and inserted["last_row_id"] == 251
    assert updated["rows_affected"] == 2  # pets 2 and 252 belong to owner 2
    assert sorted(returning["returned_rows"]) == [[1], [2]]
    assert "DELETE on pets is not allowed" in still_read_only
    assert rows(people, "SELECT name FROM people WHERE id = 251") == [("Zoë",)]


@pytest.mark.parametrize(
    "sql",
    [
        "ATTACH DATABASE '{tmp}/x.db' AS x",
        "VACUUM INTO '{tmp}/copy.db'",
        "PRAGMA writable_schema = ON",
        "SELECT load_extension('x')",
        "BEGIN",
    ],
)
async def test_write_mode_still_refuses_attach_vacuum_into_extensions_and_pragma_writes(
    people, tmp_path, sql
):
    before = file_digest(people)
    async with open_session(make_server(people, allow_write=True, trust_model_confirmation=True)) as session:
        text = await session.call_error("execute", {"sql": sql.format(tmp=tmp_path), "confirm": True})
    assert text.startswith("Error (permission_denied)")
    assert file_digest(people) == before and not list(tmp_path.glob("*.db"))[1:]


async def test_execute_refuses_reads(people):
    async with open_session(make_server(people, allow_write=True)) as session:
        text = await session.call_error("execute", {"sql": "SELECT 1"})
    assert "use query" in text.lower()


@pytest.mark.parametrize("sql", ["DROP TABLE pets", "DELETE FROM pets"])
async def test_a_destructive_statement_runs_when_the_user_accepts(people, era, sql):
    asked = []

    def accept(message):
        asked.append(message)
        return {"confirm": True}

    async with open_session(make_server(people, allow_write=True), era=era, elicit=accept) as session:
        await session.call_ok("execute", {"sql": sql})
    assert len(asked) == 1 and "pets" in asked[0]
    assert rows(people, "SELECT count(*) FROM sqlite_master WHERE name = 'pets'")[0][0] == (
        0 if "DROP" in sql else 1
    )
    if "DELETE" in sql:
        assert rows(people, "SELECT count(*) FROM pets") == [(0,)]


async def test_a_declined_destructive_statement_changes_nothing(people, era):
    before = file_digest(people)
    async with open_session(
        make_server(people, allow_write=True), era=era, elicit=lambda message: None
    ) as session:
        text = await session.call_error("execute", {"sql": "DROP TABLE pets"})
    assert "user declined" in text and file_digest(people) == before


async def test_without_elicitation_confirm_true_is_refused_unless_the_operator_trusts_it(people, era):
    async with open_session(make_server(people, allow_write=True), era=era) as session:
        text = await session.call_error("execute", {"sql": "DELETE FROM pets", "confirm": True})
        assert text.startswith("Error (permission_denied)") and "every row of pets" in text
        assert "--trust-model-confirmation" in text
    assert rows(people, "SELECT count(*) FROM pets") == [(300,)]


async def test_without_elicitation_a_destructive_statement_needs_confirm_true(people, era):
    server = make_server(people, allow_write=True, trust_model_confirmation=True)
    async with open_session(server, era=era) as session:
        text = await session.call_error("execute", {"sql": "DELETE FROM pets"})
        assert "confirm=true" in text and rows(people, "SELECT count(*) FROM pets") == [(300,)]
        await session.call_ok("execute", {"sql": "DELETE FROM pets", "confirm": True})
    assert rows(people, "SELECT count(*) FROM pets") == [(0,)]


async def test_a_delete_with_a_where_clause_needs_no_confirmation(people):
    async with open_session(make_server(people, allow_write=True)) as session:
        result = (await session.call_ok("execute", {"sql": "DELETE FROM pets WHERE id = 1"})).data
    assert result["rows_affected"] == 1


async def test_a_locked_database_is_a_retryable_conflict(people, era):
    server = make_server(people, allow_write=True)
    holder = sqlite3.connect(people)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        async with open_session(server, era=era) as session:
            read = await session.call_error("query", {"sql": "SELECT count(*) FROM pets"})
            write = await session.call_error("execute", {"sql": "DELETE FROM pets WHERE id = 1"})
    finally:
        holder.rollback()
        holder.close()
    for text in (read, write):
        assert text.startswith("Error (conflict)") and "locked" in text and "may succeed if retried" in text


def test_a_corrupt_file_is_refused_at_start_with_a_clear_message(tmp_path):
    path = tmp_path / "corrupt.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(Exception, match="not a valid SQLite database or is corrupt"):
        make_server(path)


def test_a_missing_file_is_refused_unless_created_on_purpose(tmp_path):
    with pytest.raises(Exception, match="does not exist"):
        make_server(tmp_path / "missing.db")
    assert not (tmp_path / "missing.db").exists()
    spec = parse_database_spec(str(tmp_path / "new.db"))
    DatabaseSet((spec,), Limits()).open(writable=True, create=True)
    assert (tmp_path / "new.db").is_file()


async def test_a_cancelled_request_stops_its_statement(people):
    databases = DatabaseSet((parse_database_spec(str(people)),), Limits(timeout_ms=120_000)).open(
        writable=False
    )
    database = databases.resolve(None)
    runaway = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"
    (running,) = databases.pool.pids  # the one worker start-up made: the statement runs in it
    with anyio.move_on_after(0.3):
        await databases.run(
            lambda budget: database.query(runaway, None, max_rows=None, cursor=None, budget=budget)
        )
    for _ in range(100):  # cancelling killed the worker running the statement
        if running not in databases.pool.pids:
            break
        time.sleep(0.05)
    assert running not in databases.pool.pids, "the statement kept running after its request was cancelled"
    assert database.table_names() == ["people", "pets"]  # a new worker serves the next call


def test_the_legacy_era_constant_is_what_the_harness_uses():
    assert LEGACY == "2025-11-25"


# -- emptying a table is judged by what the statement does, not how its WHERE reads ---------------

EMPTYING = [
    "DELETE FROM pets WHERE 1",
    "DELETE FROM pets WHERE true",
    "DELETE FROM pets WHERE id > 0",
    "DELETE FROM pets WHERE 1 = 1 OR kind = 'dog'",
    "DELETE FROM pets WHERE kind = ? RETURNING id",
]


@pytest.mark.parametrize("sql", EMPTYING)
async def test_a_delete_that_empties_a_table_needs_confirmation_whatever_its_where_says(people, era, sql):
    before = file_digest(people)
    params = ["cat"] if "?" in sql else None
    server = make_server(people, allow_write=True, trust_model_confirmation=True)
    async with open_session(server, era=era) as session:
        text = await session.call_error("execute", {"sql": sql, "params": params})
        assert "every row of pets" in text and "confirm=true" in text
        assert file_digest(people) == before  # the trial run left nothing behind
        result = (await session.call_ok("execute", {"sql": sql, "params": params, "confirm": True})).data
    assert result["rows_affected"] == 300
    if "RETURNING" in sql:
        assert len(result["returned_rows"]) == 100  # the first 100 of the 300 deleted ids
    assert rows(people, "SELECT count(*) FROM pets") == [(0,)]


async def test_a_declined_emptying_delete_leaves_the_file_byte_identical(people, era):
    before = file_digest(people)
    asked = []

    def decline(message):
        asked.append(message)
        return None

    async with open_session(make_server(people, allow_write=True), era=era, elicit=decline) as session:
        text = await session.call_error("execute", {"sql": "DELETE FROM pets WHERE id > 0"})
    assert "user declined" in text and len(asked) == 1 and "every row of pets" in asked[0]
    assert file_digest(people) == before


@pytest.fixture
def cascading(tmp_path):
    path = tmp_path / "cascade.db"
    connection = sqlite3.connect(path)
    connection.executescript(
        """
        CREATE TABLE owners (id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE cars (id INTEGER PRIMARY KEY, owner_id INTEGER REFERENCES owners(id) ON DELETE CASCADE);
        CREATE TABLE audit (what TEXT);
        CREATE TABLE resets (at TEXT);
        CREATE TRIGGER wipe_audit AFTER INSERT ON resets BEGIN DELETE FROM audit WHERE 1; END;
        INSERT INTO owners VALUES (1, 'ann'), (2, 'bob');
        INSERT INTO cars(owner_id) VALUES (1), (1), (1);
        INSERT INTO audit VALUES ('created'), ('checked');
        """
    )
    connection.commit()
    connection.close()
    return path


@pytest.mark.parametrize(
    ("sql", "emptied"),
    [
        ("DELETE FROM owners WHERE id = 1", "cars"),  # ON DELETE CASCADE removes every car
        ("INSERT INTO resets SELECT 'now' WHERE 1", "audit"),  # a trigger empties the audit table
    ],
)
async def test_emptying_a_table_through_a_cascade_or_a_trigger_needs_confirmation(cascading, sql, emptied):
    before = file_digest(cascading)
    async with open_session(
        make_server(cascading, allow_write=True, trust_model_confirmation=True)
    ) as session:
        text = await session.call_error("execute", {"sql": sql})
        assert f"every row of {emptied}" in text and file_digest(cascading) == before
        await session.call_ok("execute", {"sql": sql, "confirm": True})
    assert rows(cascading, f"SELECT count(*) FROM {emptied}") == [(0,)]


async def test_a_delete_that_leaves_rows_runs_without_confirmation(people, cascading):
    async with open_session(make_server(people, allow_write=True)) as session:
        result = (await session.call_ok("execute", {"sql": "DELETE FROM pets WHERE id > 1"})).data
    assert result["rows_affected"] == 299 and rows(people, "SELECT id FROM pets") == [(1,)]
    async with open_session(make_server(cascading, allow_write=True)) as session:
        await session.call_ok("execute", {"sql": "DELETE FROM owners WHERE id = 2"})  # bob has no cars
    assert rows(cascading, "SELECT count(*) FROM cars") == [(3,)]


def test_an_unconfirmed_delete_that_empties_a_table_after_the_check_is_rolled_back(people):
    # The gap between the trial run and the real one: the trial saw a row left behind, then another
    # writer deleted that row, and the same statement now empties the table nobody was asked about.
    database = (
        DatabaseSet((parse_database_spec(str(people)),), Limits()).open(writable=True).resolve("people")
    )
    statement = "DELETE FROM pets WHERE id > 1"
    assert database.destructive_effect(statement, None) is None
    other_writer = sqlite3.connect(people)
    other_writer.execute("DELETE FROM pets WHERE id = 1")
    other_writer.commit()
    other_writer.close()
    before = file_digest(people)
    with pytest.raises(Conflict) as refused:
        database.execute(statement, None, budget=Budget(5_000), refuse_emptying=True)
    assert "every row of pets" in refused.value.what and "Nothing was changed" in refused.value.what
    assert refused.value.retryable and file_digest(people) == before
    assert rows(people, "SELECT count(*) FROM pets") == [(299,)]
    # Once confirmed, the same statement runs.
    done = database.execute(statement, None, budget=Budget(5_000), refuse_emptying=False)
    assert done.rows_affected == 299 and rows(people, "SELECT count(*) FROM pets") == [(0,)]


async def test_a_runaway_trial_run_is_stopped_by_the_time_limit_and_changes_nothing(people):
    before = file_digest(people)
    runaway = (
        "DELETE FROM pets WHERE id NOT IN "
        "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c WHERE x < 0)"
    )
    async with open_session(make_server(people, allow_write=True, timeout_ms=300)) as session:
        text = await session.call_error("execute", {"sql": runaway})
        after = (await session.call_ok("execute", {"sql": "DELETE FROM pets WHERE id = 1"})).data
    assert text.startswith("Error (limit_exceeded)") and "300 ms limit" in text
    assert after["rows_affected"] == 1
    assert rows(people, "SELECT count(*) FROM pets") == [(299,)] and before != file_digest(people)


async def test_in_write_mode_a_value_over_the_length_limit_is_refused(people):
    before = file_digest(people)
    async with open_session(make_server(people, allow_write=True)) as session:
        text = await session.call_error(
            "execute", {"sql": "UPDATE people SET photo = zeroblob(17 * 1024 * 1024) WHERE id = 1"}
        )
    assert text.startswith("Error (limit_exceeded)") and "16 MiB" in text
    assert file_digest(people) == before
