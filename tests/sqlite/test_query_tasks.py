"""query as an MCP task (io.modelcontextprotocol/tasks, ``--tasks``), through clients that speak it and ones
that do not.

A recursive CTE counting to a large number is a query SQLite cannot bound before it runs, and runs as
long as the number says: the slow query here. A task gets --task-timeout-ms, polls to its result with its
time used as progress, and cancelling it kills the worker process running the statement.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import time
from pathlib import Path

import pytest
import uvicorn
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.exceptions import ToolError
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier
from fastmcp_tasks import ToolTask, call_tool_task
from mcp.shared.exceptions import MCPError

from dockyard_shared import InvalidArgument
from dockyard_shared.toolsets import Exposure
from dockyard_sqlite.database import Database
from dockyard_sqlite.database.connection import worker_limits
from dockyard_sqlite.query_cost import EQ_FANOUT, weigh
from dockyard_sqlite.server import create_server
from dockyard_sqlite.settings import EXPORT, Limits, Settings, parse_database_spec
from dockyard_sqlite.workers.pool import WorkerPool
from tests.harness import LEGACY, open_session
from tests.sqlite.cli import from_command_line
from tests.sqlite.helpers import file_digest
from tests.waiting import until

TERMINAL = {"completed", "failed", "cancelled"}
COUNT_TO = (
    "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < ?1) SELECT count(*) AS n FROM c"
)
FOREVER = 10**12


class PlainClient(Client):
    """A 2026-07-28 client that does not declare the tasks extension (FastMCP's ``Client`` declares it
    once fastmcp_tasks is imported; ``_auto_internal_extensions`` is the switch its ProxyClient turns off)."""

    _auto_internal_extensions = False


def tasks_server(*paths: Path, pool: WorkerPool | None = None, **limits):
    """dockyard-sqlite --tasks over ``paths``; ``pool``: the worker pool, for a test that watches it."""
    specs = tuple(parse_database_spec(str(p)) for p in paths)
    return create_server(Settings(databases=specs, limits=Limits(**limits), tasks=True), pool=pool)


def cpu_ticks(pid: int) -> int:
    """User and system CPU time of a process, in clock ticks."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])


async def test_a_slow_query_runs_as_a_task_the_client_polls_to_its_result(people):
    server = tasks_server(people)
    async with Client(server) as client:
        assert "io.modelcontextprotocol/tasks" in (client.server_capabilities.extensions or {})
        task = await call_tool_task(client, "query", {"sql": COUNT_TO, "params": [6_000_000]})
        seen = await task.status()
        assert seen.poll_interval_ms == 1_000
        statuses = [seen.status]
        messages = set()
        while seen.status not in TERMINAL:
            seen = await task.status()
            statuses.append(seen.status)
            messages.add(seen.status_message)
            await asyncio.sleep(0.05)
        assert seen.status == "completed", seen
        result = await task.result()
    assert "working" in statuses
    # Progress as it polls: the time used of the task's own limit (60 s by default).
    assert any(m and re.fullmatch(r"running for \d+ s of its 60 s time limit", m) for m in messages), messages
    assert result.structured_content["rows"] == [[6_000_000]]


async def test_a_task_gets_the_longer_time_limit_a_plain_call_does_not(people):
    server = tasks_server(people, timeout_ms=300, task_timeout_ms=60_000)
    arguments = {"sql": COUNT_TO, "params": [3_000_000]}  # ~1.5 s of SQLite's work: past 300 ms
    async with open_session(server, era=LEGACY) as session:
        plain = await session.call_error("query", arguments)
    assert "ran longer than the 300 ms limit" in plain and "--timeout-ms (now 300)" in plain
    async with Client(server) as client:
        task = await call_tool_task(client, "query", arguments)
        assert (await task.wait(timeout=60)).status == "completed"
        assert (await task.result()).structured_content["rows"] == [[3_000_000]]


async def test_a_task_past_its_own_limit_says_which_flag_sets_it(people):
    server = tasks_server(people, timeout_ms=200, task_timeout_ms=400)
    async with Client(server) as client:
        task = await call_tool_task(
            client, "query", {"sql": COUNT_TO, "params": [FOREVER]}, raise_on_error=False
        )
        await task.wait(timeout=60)
        failed = await task.result()
    assert failed.is_error
    (text,) = [block.text for block in failed.content]
    assert "ran longer than the 400 ms limit" in text and "--task-timeout-ms (now 400)" in text


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        ("SELECT 1", []),
        ("SELECT * FROM people WHERE id = ?", [7]),  # a point read by key
        ("SELECT p.name, k.kind FROM pets k JOIN people p ON p.id = k.owner_id WHERE k.id = ?", [3]),
        ("SELECT * FROM people", []),  # streams: the page is all it reads
    ],
)
async def test_a_cheap_query_is_answered_in_place_even_for_a_client_that_takes_tasks(people, sql, params):
    server = tasks_server(people, task_rows=100)  # people has 250 rows: over the bound when read whole
    async with Client(server) as client:
        with pytest.raises(ToolError, match="did not run as a task"):
            await call_tool_task(client, "query", {"sql": sql, "params": params, "max_rows": 10})
        answered = await client.call_tool("query", {"sql": sql, "params": params, "max_rows": 10})
    assert answered.structured_content["rows"]


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT count(*) FROM people", [[250]]),  # an aggregate reads every row
        ("SELECT count(*) FROM people WHERE name LIKE '%9%'", [[43]]),  # a filter without an index
        ("SELECT kind, count(*) FROM pets GROUP BY kind", [["cat", 300]]),
    ],
)
async def test_a_read_of_a_whole_large_table_runs_as_a_task(people, sql, expected):
    server = tasks_server(people, task_rows=100)
    async with Client(server) as client:
        task = await call_tool_task(client, "query", {"sql": sql})
        assert (await task.wait(timeout=60)).status == "completed"
        assert (await task.result()).structured_content["rows"] == expected


async def test_a_page_of_a_view_is_weighed_as_the_view_reads_not_as_its_name_reads(people):
    connection = sqlite3.connect(people)
    connection.execute("CREATE VIEW rare_pets AS SELECT * FROM pets WHERE kind = 'dog'")  # filters every row
    connection.close()
    server = tasks_server(people, task_rows=100)
    async with Client(server) as client:
        task = await call_tool_task(client, "query", {"sql": "SELECT * FROM rare_pets", "max_rows": 10})
        assert (await task.wait(timeout=60)).status == "completed"
        assert (await task.result()).structured_content["rows"] == []


async def test_cancelling_the_task_kills_its_worker_and_the_next_query_works(people):
    limits = Limits(workers=1)
    pool = WorkerPool(worker_limits(limits))
    before = file_digest(people)
    try:
        server = tasks_server(people, pool=pool, workers=1)
        async with Client(server) as client:
            task = await call_tool_task(client, "query", {"sql": COUNT_TO, "params": [FOREVER]})
            await until(lambda: len(pool.pids) == 1, "the worker")
            (pid,) = pool.pids
            spent = cpu_ticks(pid)
            await until(lambda: cpu_ticks(pid) >= spent + 20, "the worker to run the statement")
            await task.cancel()
            assert (await task.status()).status == "cancelled"
            await until(lambda: not Path(f"/proc/{pid}").exists(), "the worker process to be gone")
            again = await client.call_tool("query", {"sql": "SELECT 42 AS answer"})
            assert again.structured_content["rows"] == [[42]]
            assert pool.pids and pid not in pool.pids  # a fresh worker answered
            assert (await task.status()).status == "cancelled"
    finally:
        pool.close()
    assert file_digest(people) == before
    assert sorted(p.name for p in people.parent.iterdir() if p.name.startswith(people.name)) == [people.name]


async def test_while_every_worker_is_busy_even_a_cheap_query_waits_its_turn_as_a_task(people):
    pool = WorkerPool(worker_limits(Limits(workers=1)))
    try:
        async with Client(tasks_server(people, pool=pool, workers=1)) as client:
            busy = await call_tool_task(client, "query", {"sql": COUNT_TO, "params": [FOREVER]})
            (pid,) = pool.pids
            spent = cpu_ticks(pid)
            await until(lambda: cpu_ticks(pid) >= spent + 10, "the only worker to be busy")
            started = time.monotonic()
            waiting = await call_tool_task(client, "query", {"sql": "SELECT 1 AS one"})  # not planned in time
            assert time.monotonic() - started < 5  # answered with a task, not held until a worker frees
            assert (await waiting.status()).status == "working"
            await busy.cancel()
            assert (await waiting.wait(timeout=60)).status == "completed"
            assert (await waiting.result()).structured_content["rows"] == [[1]]
    finally:
        pool.close()


async def test_a_task_id_this_server_did_not_mint_is_refused(tmp_path, people):
    other_copy = tmp_path / "other.db"
    other_copy.write_bytes(people.read_bytes())
    one, other = tasks_server(people), tasks_server(other_copy)
    async with Client(one) as first, Client(other) as second:
        task = await call_tool_task(first, "query", {"sql": COUNT_TO, "params": [FOREVER]})
        created = task.create_result
        forged = created.model_copy(update={"task_id": "x" + created.task_id[1:]})
        for client, handle in ((second, created), (first, forged)):
            with pytest.raises(MCPError, match="not found"):
                await ToolTask(client, "query", handle).status()
            with pytest.raises(MCPError, match="not found"):
                await ToolTask(client, "query", handle).cancel()
        assert (await task.status()).status == "working"  # the real one is untouched
        await task.cancel()


TOKENS = {
    "alice-token-" + "a" * 20: {"client_id": "alice", "scopes": []},
    "bob-token-" + "b" * 20: {"client_id": "bob", "scopes": []},
}


async def test_a_task_of_another_actor_is_refused_over_authenticated_http(people):
    server = tasks_server(people)
    server.auth = StaticTokenVerifier(tokens=TOKENS)  # as a deployment behind sign-in has it
    uv = uvicorn.Server(uvicorn.Config(server.http_app(), host="127.0.0.1", port=0, log_level="warning"))
    serving = asyncio.create_task(uv.serve())
    await until(lambda: uv.started, "the server to listen")
    url = f"http://127.0.0.1:{uv.servers[0].sockets[0].getsockname()[1]}/mcp"
    alice_token, bob_token = list(TOKENS)
    try:
        async with (
            Client(StreamableHttpTransport(url, auth=alice_token)) as alice,
            Client(StreamableHttpTransport(url, auth=bob_token)) as bob,
        ):
            task = await call_tool_task(alice, "query", {"sql": COUNT_TO, "params": [FOREVER]})
            stolen = ToolTask(bob, "query", task.create_result)
            with pytest.raises(MCPError, match="not found"):
                await stolen.status()
            with pytest.raises(MCPError, match="not found"):
                await stolen.cancel()
            assert (await task.status()).status == "working"  # bob's cancel did nothing
            await task.cancel()
            assert (await task.status()).status == "cancelled"
    finally:
        uv.should_exit = True
        await serving


async def test_clients_without_the_extension_get_the_plain_call_with_the_same_answer(
    people, era, monkeypatch
):
    planned = []
    plan_steps = Database.plan_steps
    monkeypatch.setattr(Database, "plan_steps", lambda *a, **k: planned.append(a[1]) or plan_steps(*a, **k))
    server = tasks_server(people)
    arguments = {"sql": COUNT_TO, "params": [5_000]}
    async with Client(server) as client:  # declares the extension: a task, polled to its result
        tasked = await (await call_tool_task(client, "query", arguments)).result()
    assert planned == [COUNT_TO]
    if era == LEGACY:
        async with open_session(server, era=era) as session:
            plain = (await session.call_ok("query", arguments)).data
    else:
        async with PlainClient(server) as client:
            assert "io.modelcontextprotocol/tasks" in (client.server_capabilities.extensions or {})
            plain = (await client.call_tool("query", arguments)).structured_content
    assert planned == [COUNT_TO]  # the server did not even plan it for a client that cannot take a task
    assert plain["rows"] == tasked.structured_content["rows"] == [[5_000]]
    assert plain == tasked.structured_content


async def test_a_failure_inside_the_task_reaches_the_model_in_the_same_words_as_a_plain_call(people):
    server = tasks_server(people)
    sql = (
        "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000) "
        "SELECT count(json(CASE WHEN n = 500 THEN 'x{' ELSE '1' END)) FROM c"
    )
    async with Client(server) as client:
        task = await call_tool_task(client, "query", {"sql": sql}, raise_on_error=False)
        failed = await task.result()
    async with open_session(server, era=LEGACY) as session:
        plain = await session.call_error("query", {"sql": sql})
    assert failed.is_error
    (text,) = [block.text for block in failed.content]
    assert text == plain
    assert "malformed JSON" in text and "Next step:" in text


async def test_the_console_script_with_tasks_serves_them_over_stdio(people, sqlite_launch):
    async with open_session(sqlite_launch("--db", str(people), "--tasks")) as session:
        client = session.raw
        assert "io.modelcontextprotocol/tasks" in (client.server_capabilities.extensions or {})
        task = await call_tool_task(client, "query", {"sql": COUNT_TO, "params": [100_000]})
        assert (await task.wait(timeout=60)).status == "completed"
        assert (await task.result()).structured_content["rows"] == [[100_000]]
        with pytest.raises(ToolError, match="did not run as a task"):
            await call_tool_task(client, "query", {"sql": "SELECT 1"})


async def test_query_across_weighs_a_table_by_the_largest_of_its_name_among_the_databases(people, tmp_path):
    pets_only = tmp_path / "zoo.db"
    connection = sqlite3.connect(pets_only)
    connection.execute("CREATE TABLE pets (id INTEGER PRIMARY KEY, kind TEXT)")
    connection.commit()
    connection.close()
    server = tasks_server(people, pets_only, task_rows=100)
    async with Client(server) as client:
        whole = "SELECT count(*) FROM people.pets UNION ALL SELECT count(*) FROM zoo.pets"
        task = await call_tool_task(client, "query_across", {"sql": whole})
        assert (await task.wait(timeout=60)).status == "completed"
        assert (await task.result()).structured_content["rows"] == [[300], [0]]
        with pytest.raises(ToolError, match="did not run as a task"):
            await call_tool_task(client, "query_across", {"sql": "SELECT * FROM people.pets WHERE id = 1"})


# -- export_csv: every row of a large read is written as a task ----------------------------------


def exporting_server(path: Path, folder: Path, pool: WorkerPool | None = None, **limits):
    settings = Settings(
        databases=(parse_database_spec(str(path)),),
        exposure=Exposure().enabling(EXPORT.name),
        limits=Limits(**limits),
        export_dir=folder,
        tasks=True,
    )
    return create_server(settings, pool=pool)


async def test_an_export_of_a_large_table_runs_as_a_task_and_a_small_one_in_place(people, tmp_path):
    folder = tmp_path / "exports"
    folder.mkdir()
    server = exporting_server(people, folder, task_rows=100)
    async with Client(server) as client:
        task = await call_tool_task(client, "export_csv", {"file": "people.csv", "table": "people"})
        assert (await task.wait(timeout=60)).status == "completed"
        assert (await task.result()).structured_content["rows"] == 250
        one = {"file": "one.csv", "sql": "SELECT * FROM people WHERE id = ?", "params": [1]}
        with pytest.raises(ToolError, match="did not run as a task"):
            await call_tool_task(client, "export_csv", one)
    assert len((folder / "people.csv").read_text().splitlines()) == 251
    assert (folder / "one.csv").exists()  # the plain call wrote it


async def test_cancelling_an_export_kills_its_worker_and_removes_the_partial_file(people, tmp_path):
    folder = tmp_path / "exports"
    folder.mkdir()
    pool = WorkerPool(worker_limits(Limits(workers=1)))
    endless = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < ?1) SELECT n FROM c"
    try:
        async with Client(exporting_server(people, folder, pool=pool, workers=1)) as client:
            task = await call_tool_task(
                client, "export_csv", {"file": "all.csv", "sql": endless, "params": [FOREVER]}
            )
            await until(
                lambda: any(p.stat().st_size > 0 for p in folder.iterdir()), "rows in the partial file"
            )
            (pid,) = pool.pids
            await task.cancel()
            assert (await task.status()).status == "cancelled"
            await until(lambda: not Path(f"/proc/{pid}").exists(), "the worker process to be gone")
            await until(lambda: not list(folder.iterdir()), "the partial file to be removed")
            again = await client.call_tool("query", {"sql": "SELECT 7 AS n"})
            assert again.structured_content["rows"] == [[7]]
    finally:
        pool.close()


# -- the estimate itself, on plans SQLite makes --------------------------------------------------


def plan(sql: str) -> list[str]:
    connection = sqlite3.connect(":memory:")
    connection.executescript(
        "CREATE TABLE big (id INTEGER PRIMARY KEY, x, y); CREATE INDEX big_x ON big(x);"
        "CREATE TABLE small (id INTEGER PRIMARY KEY, big_id, z);"
    )
    return [row[3] for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}")]


COUNTS = {"big": 2_000_000, "small": 50}


@pytest.mark.parametrize(
    ("sql", "rows"),
    [
        ("SELECT 1", 101),
        ("SELECT * FROM big", 101),  # streams
        ("SELECT * FROM big WHERE id = 5", 1),
        ("SELECT * FROM big WHERE x = 5", EQ_FANOUT),
        ("SELECT * FROM big WHERE x > 5", 2_000_000),  # a range may cover the table
        ("SELECT count(*) FROM big", 2_000_000),
        ("SELECT * FROM big ORDER BY y", 2_000_000),  # a sort reads everything first
        ("SELECT * FROM big b WHERE b.y = 1", 2_000_000),  # a plan names the alias
        ("SELECT * FROM small s JOIN big b ON b.id = s.big_id WHERE s.z = 1", 50),
        ("SELECT * FROM small, big WHERE small.z = big.y", 100_000_000),
        ("SELECT * FROM big LIMIT 10 OFFSET 5000000", 2_000_000),
        ("WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM c WHERE n < 5) SELECT n FROM c", None),
        ("SELECT 'where' AS \"group\" FROM big -- count(*)", 101),  # words in literals and comments
    ],
)
def test_the_weight_of_a_plan(sql, rows):
    assert weigh(sql, plan(sql), COUNTS, page_rows=101).rows == rows


def test_an_unknown_table_size_weighs_as_unbounded():
    sql = "SELECT count(*) FROM big"
    assert weigh(sql, plan(sql), {"big": None, "small": 50}, page_rows=101).rows is None


def test_the_task_time_limit_cannot_be_shorter_than_a_plain_call(people):
    with pytest.raises(InvalidArgument, match="--task-timeout-ms 8000 is below --timeout-ms 9000"):
        from_command_line("--db", people, "--tasks", "--timeout-ms", 9000, "--task-timeout-ms", 8000)


def test_a_long_plain_limit_without_a_task_limit_gives_tasks_the_same(people):
    """--timeout-ms alone, above the task default: a task gets as long, the server starts (it refused)."""
    from dockyard_sqlite.__main__ import entry
    from dockyard_sqlite.settings import settings_from

    args = entry.parser(with_runner=False).parse_args(["--db", str(people), "--timeout-ms", "600000"])
    assert settings_from(args).limits.task_timeout_ms == 600_000


async def test_the_command_line_serves_tasks_only_with_the_flag(people):
    for argv, served in ((("--tasks",), True), ((), False)):
        async with Client(from_command_line("--db", people, *argv)) as client:
            extensions = client.server_capabilities.extensions or {}
            assert ("io.modelcontextprotocol/tasks" in extensions) is served
