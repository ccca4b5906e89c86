"""Statements and database files built to exhaust the server, sent through stdio as a host would.

Each class of issue 12 (sqlite 5–7 and 9) at its worst: compiles that double per level, single
function calls that run for hours, rows of many 16 MiB values, and database files whose schema names
what this server does not provide. Memory is asserted on what the kernel measured for the server and
its worker processes (:mod:`tests.sqlite.processes`), never on wall time; a hang on the old code shows
as the client's own timeout, not as a timing assertion.
"""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from tests.harness import MODERN, open_session
from tests.sqlite.processes import MemoryWatch, server_process

pytestmark = pytest.mark.slow

# The memory bound the server states by default (--memory-mb).
BOUND_MIB = 512
# How long a client waits for an answer that should come within the time limit plus a margin. Only a
# guard: on the code before the worker processes these calls ran for minutes to hours.
PATIENCE_S = 30

# A 16 MB text, and a set of characters trim() compares with each of its characters: 16,000,000 ×
# 100,001 comparisons per call (hours), three calls in one row.
_LONG = "printf('%.*c', 16000000, 'a')"
TRIM_FAMILY = (
    f"SELECT length(ltrim(x, y)), length(rtrim(x, y)), length(trim(x, y)) "
    f"FROM (SELECT {_LONG} AS x, printf('%.*c', 100000, 'b') || 'a' AS y)"
)
# LIKE and GLOB of a 128-byte pattern against a 16 MB text: ~5 s a call, six in one row.
LIKE_AND_GLOB = (
    "SELECT x LIKE p, x GLOB g, x LIKE p || '', x GLOB g || '', x LIKE '%' || p, x GLOB '*' || g "
    f"FROM (SELECT {_LONG} AS x, '%' || printf('%.*c', 120, 'a') || 'b' AS p, "
    "'*' || printf('%.*c', 120, 'a') || 'b' AS g)"
)


def nested_ctes(levels: int) -> str:
    """About 60 bytes a level; each level names the one below twice, so compiling it doubles the
    work and memory per level (measured on SQLite 3.40: 761 MB and 1.9 s at 18 levels, 3 GB at 20)."""
    parts = ["a0(x) AS (SELECT 1)"]
    parts += [
        f"a{i}(x) AS (SELECT (SELECT x FROM a{i - 1}) + (SELECT x FROM a{i - 1}))"
        for i in range(1, levels + 1)
    ]
    return "WITH " + ", ".join(parts) + f" SELECT x FROM a{levels}"


@pytest.fixture
def plain(tmp_path):
    path = tmp_path / "plain.db"
    connection = sqlite3.connect(path)
    connection.executescript(
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"
        "INSERT INTO notes(body) VALUES ('first'), ('second');"
    )
    connection.commit()
    connection.close()
    return path


@pytest.fixture
def hostile(tmp_path):
    """Next to an ordinary table: a generated column using REGEXP, views calling a refused, an absent
    and an unknown function, and a view that takes gigabytes to compile."""
    path = tmp_path / "hostile.db"
    connection = sqlite3.connect(path)
    # Functions of the writer's own, only so that SQLite accepts the schema when it is written.
    connection.create_function("regexp", 2, lambda pattern, text: 0, deterministic=True)
    connection.create_function("mystery", 1, lambda value: 0, deterministic=True)
    connection.executescript(
        f"""
        CREATE TABLE good (id INTEGER PRIMARY KEY, name TEXT);
        INSERT INTO good(name) VALUES ('ann'), ('bob'), ('cy');
        CREATE TABLE rx (a TEXT, slow INTEGER GENERATED ALWAYS AS (a REGEXP '^(a+)+$'));
        INSERT INTO rx(a) VALUES ('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!');
        CREATE VIEW v_extension AS SELECT load_extension('/tmp/evil.so') AS y;
        CREATE VIEW v_regexp AS SELECT name REGEXP '^(a+)+$' AS y FROM good;
        CREATE VIEW v_unknown AS SELECT mystery(name) AS y FROM good;
        CREATE VIEW v_blowup AS {nested_ctes(30)};
        """
    )
    connection.commit()
    connection.close()
    return path


async def test_compiling_nested_ctes_is_bounded_in_memory_in_query_and_explain(sqlite_launch, plain):
    launch = sqlite_launch("--db", str(plain), "--timeout-ms", "2000")
    async with open_session(launch, era=MODERN, timeout=PATIENCE_S) as session:
        tree = server_process(str(plain))
        with MemoryWatch(tree) as watch:
            meanwhile = asyncio.create_task(session.call_ok("query", {"sql": "SELECT count(*) FROM notes"}))
            queried = await session.call("query", {"sql": nested_ctes(30)})
            explained = await session.call("explain_query", {"sql": nested_ctes(30)})
            answered = await meanwhile
        after = await session.call_ok("query", {"sql": "SELECT body FROM notes ORDER BY id"})
    assert not watch.aborted, f"the server grew past {watch.abort_mib} MiB and was stopped"
    assert watch.peak_mib <= BOUND_MIB, f"peak {watch.peak_mib:.0f} MiB"
    for outcome in (queried, explained):
        assert outcome.is_error and outcome.text.startswith("Error (limit_exceeded)"), outcome.text
        assert "memory" in outcome.text or "2000 ms limit" in outcome.text
    assert answered.data["rows"] == [[2]] and after.data["rows"] == [["first"], ["second"]]


@pytest.mark.parametrize("sql", [TRIM_FAMILY, LIKE_AND_GLOB], ids=["trim-family", "like-glob"])
async def test_one_long_function_call_is_stopped_at_the_time_limit(sqlite_launch, plain, sql):
    launch = sqlite_launch("--db", str(plain), "--timeout-ms", "500")
    async with open_session(launch, era=MODERN, timeout=PATIENCE_S) as session:
        tree = server_process(str(plain))
        with MemoryWatch(tree) as watch:
            stopped = await session.call("query", {"sql": sql})
        after = await session.call_ok("query", {"sql": "SELECT count(*) FROM notes"})
    assert stopped.is_error and stopped.text.startswith("Error (limit_exceeded)"), stopped.text
    assert "500 ms limit" in stopped.text and "inside one step" in stopped.text
    assert after.data["rows"] == [[2]]
    assert watch.peak_mib <= BOUND_MIB, f"peak {watch.peak_mib:.0f} MiB"


@pytest.mark.parametrize("era", ["2025-11-25", MODERN])
async def test_a_cancelled_call_stops_burning_cpu(sqlite_launch, plain, era):
    launch = sqlite_launch("--db", str(plain), "--timeout-ms", "600000")
    async with open_session(launch, era=era, timeout=PATIENCE_S) as session:
        tree = server_process(str(plain))
        busy_from = tree.cpu_seconds()
        running = asyncio.create_task(session.call("query", {"sql": TRIM_FAMILY}))
        for _ in range(200):  # until the statement has burnt a little CPU (slowly on a loaded machine)
            await asyncio.sleep(0.1)
            if tree.cpu_seconds() - busy_from > 0.3:
                break
        else:
            raise AssertionError("the statement never started")
        running.cancel()  # the client sends notifications/cancelled
        await asyncio.sleep(1.0)  # the cancellation reaches the server
        idle_from = tree.cpu_seconds()
        await asyncio.sleep(2.0)
        burnt = tree.cpu_seconds() - idle_from
        served_on = tree.alive()  # the same server process, not a restarted one
        after = await session.call_ok("query", {"sql": "SELECT count(*) FROM notes"})
    # An idle server and its idle workers burn next to nothing; the statement alone, a full core.
    assert served_on, "the server process ended when the call was cancelled"
    assert burnt < 0.15, f"{burnt:.2f} s of CPU in 2 s after the call was cancelled"
    assert after.data["rows"] == [[2]]


async def test_every_worker_stuck_is_a_retryable_busy_answer_never_a_fault_of_the_sql(sqlite_launch, plain):
    launch = sqlite_launch("--db", str(plain), "--timeout-ms", "1500")
    async with open_session(launch, era=MODERN, timeout=PATIENCE_S) as session:
        stuck = [asyncio.create_task(session.call("query", {"sql": TRIM_FAMILY})) for _ in range(20)]
        await asyncio.sleep(0.5)
        probe = await session.call("query", {"sql": "SELECT 1"})
        outcomes = await asyncio.wait_for(asyncio.gather(*stuck), PATIENCE_S * 2)
        after = await session.call_ok("query", {"sql": "SELECT 1"})
    for outcome in (probe, *outcomes):
        assert "Fix the SQL" not in outcome.text, outcome.text
    assert not probe.is_error or ("busy" in probe.text and "may succeed if retried" in probe.text), probe.text
    for outcome in outcomes:
        assert outcome.is_error and outcome.text.startswith("Error (limit_exceeded)"), outcome.text
        assert "1500 ms limit" in outcome.text or ("busy" in outcome.text and "Retry" in outcome.text)
    assert after.data["rows"] == [[1]]


async def test_a_row_of_many_16_mib_values_is_refused_within_the_memory_bound(sqlite_launch, plain):
    wide = "SELECT " + ", ".join(f"printf('%.*c', 16000000, '{chr(97 + i % 26)}') AS c{i}" for i in range(40))
    launch = sqlite_launch("--db", str(plain))
    async with open_session(launch, era=MODERN, timeout=PATIENCE_S) as session:
        tree = server_process(str(plain))
        with MemoryWatch(tree) as watch:  # one per worker at once: every worker at its cap together
            outcomes = await asyncio.gather(*(session.call("query", {"sql": wide}) for _ in range(3)))
        after = await session.call_ok("query", {"sql": "SELECT count(*) FROM notes"})
    assert not watch.aborted and watch.peak_mib <= BOUND_MIB, f"peak {watch.peak_mib:.0f} MiB"
    for outcome in outcomes:
        assert outcome.is_error and outcome.text.startswith("Error (limit_exceeded)"), outcome.text
        assert "memory" in outcome.text and "substr(" in outcome.text
    assert after.data["rows"] == [[2]]


async def test_a_page_of_large_rows_is_read_a_row_at_a_time_within_the_memory_bound(sqlite_launch, plain):
    tall = (
        "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 64) "
        "SELECT i, printf('%.*c', 15000000, 'z') FROM c"
    )
    launch = sqlite_launch("--db", str(plain), "--timeout-ms", "20000")
    async with open_session(launch, era=MODERN, timeout=PATIENCE_S * 2) as session:
        tree = server_process(str(plain))
        with MemoryWatch(tree) as watch:
            page = (await session.call_ok("query", {"sql": tall, "max_rows": 64})).data
    assert not watch.aborted and watch.peak_mib <= BOUND_MIB, f"peak {watch.peak_mib:.0f} MiB"
    assert page["rows"][0][0] == 1 and "14990000 more characters" in page["rows"][0][1]
    assert page["truncated"] and page["next_cursor"]  # the character budget ended the page


async def test_a_hostile_database_is_listed_object_by_object_and_the_others_are_served(
    sqlite_launch, hostile, plain
):
    launch = sqlite_launch("--db", f"hostile={hostile}", "--db", f"plain={plain}", "--timeout-ms", "2000")
    async with open_session(launch, era=MODERN, timeout=PATIENCE_S) as session:
        tree = server_process(str(hostile))
        with MemoryWatch(tree) as watch:
            listing = (await session.call_ok("list_tables", {"database": "hostile"})).data
        others = (await session.call_ok("list_tables", {"database": "plain"})).data
        good = (await session.call_ok("query", {"sql": "SELECT name FROM good", "database": "hostile"})).data
        plain_part = (await session.call_ok("query", {"sql": "SELECT a FROM rx", "database": "hostile"})).data
        generated = await session.call_error("query", {"sql": "SELECT * FROM rx", "database": "hostile"})
        described = (await session.call_ok("describe_table", {"table": "rx", "database": "hostile"})).data
        functions = (
            await session.call_ok(
                "query",
                {"sql": "SELECT name FROM pragma_function_list WHERE builtin = 0", "database": "hostile"},
            )
        ).data
    assert not watch.aborted and watch.peak_mib <= BOUND_MIB, f"peak {watch.peak_mib:.0f} MiB"
    tables = {t["name"]: t for t in listing["tables"]}
    assert set(tables) == {"good", "rx", "v_extension", "v_regexp", "v_unknown", "v_blowup"}
    assert tables["good"]["row_count"] == 3 and tables["good"]["problem"] is None
    assert tables["rx"]["row_count"] == 1
    assert "load_extension" in tables["v_extension"]["problem"]
    assert "REGEXP" in tables["v_regexp"]["problem"] and "mystery" in tables["v_unknown"]["problem"]
    assert "memory" in tables["v_blowup"]["problem"] or "longer than" in tables["v_blowup"]["problem"]
    assert "cannot be read here" in listing["note"]
    assert [t["name"] for t in others["tables"]] == ["notes"]
    assert good["rows"] == [["ann"], ["bob"], ["cy"]] and plain_part["rows"] == [
        ["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"]
    ]
    assert "REGEXP is not available" in generated and "generated column" in generated
    assert [c["name"] for c in described["columns"]] == ["a"] and described["sample_rows"] == []
    assert "REGEXP" in described["problem"]
    # No application function (SQLAlchemy's regexp, Python replacements…): only what SQLite itself
    # registers, so no schema expression can reach Python code.
    own = sqlite3.connect(":memory:").execute("SELECT name FROM pragma_function_list WHERE builtin = 0")
    assert sorted(r[0] for r in functions["rows"]) == sorted(r[0] for r in own)


async def test_a_database_whose_schema_sqlite_cannot_parse_does_not_stop_the_others(
    sqlite_launch, tmp_path, plain
):
    broken = tmp_path / "broken.db"
    connection = sqlite3.connect(broken)
    connection.executescript("CREATE TABLE t (x); CREATE TABLE u (y);")
    connection.execute("PRAGMA writable_schema = ON")
    # What a newer SQLite, or a hostile writer, may leave in the catalog: this SQLite cannot parse it.
    connection.execute(
        "UPDATE sqlite_master SET sql = 'CREATE TABLE u (y) WITH FUTURE SYNTAX' WHERE name = 'u'"
    )
    connection.commit()
    connection.close()
    launch = sqlite_launch("--db", f"broken={broken}", "--db", f"plain={plain}")
    async with open_session(launch, era=MODERN, timeout=PATIENCE_S) as session:
        served = (
            await session.call_ok("query", {"sql": "SELECT count(*) FROM notes", "database": "plain"})
        ).data
        refused = await session.call_error("list_tables", {"database": "broken"})
    assert served["rows"] == [[2]]
    assert refused.startswith("Error (conflict)") and "malformed database schema" in refused
