"""dockyard-sqlite as hosts run it: the console script over stdio and Streamable HTTP, in both eras."""

from __future__ import annotations

import pytest

from tests.harness import ERAS, Launch, http_server, open_session
from tests.sqlite.helpers import file_digest

pytestmark = pytest.mark.slow


def test_a_missing_database_file_stops_start_up_with_a_clear_message(sqlite_launch, tmp_path):
    result = sqlite_launch("--db", str(tmp_path / "nope.db")).run()
    assert result.returncode == 2
    assert "does not exist" in result.stderr and "--allow-write --create" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not (tmp_path / "nope.db").exists()


def test_a_corrupt_database_file_stops_start_up_with_a_clear_message(sqlite_launch, tmp_path):
    path = tmp_path / "junk.db"
    path.write_bytes(b"\x00junk" * 1000)
    result = sqlite_launch("--db", str(path)).run()
    assert result.returncode == 2 and "not a valid SQLite database" in result.stderr


@pytest.mark.parametrize("era", ERAS)
async def test_stdio_serves_named_databases(sqlite_launch, people, shop, era):
    before = file_digest(people)
    launch = sqlite_launch("--db", f"team={people}", "--db", str(shop), "--max-rows", "50")
    async with open_session(launch, era=era) as session:
        assert await session.tool_names() == {
            "list_tables",
            "describe_table",
            "query",
            "explain_query",
            "search_schema",
            "query_across",
        }
        page = (
            await session.call_ok(
                "query", {"sql": "SELECT id FROM people", "database": "team", "max_rows": 50}
            )
        ).data
        assert page["row_count"] == 50 and page["truncated"]
        assert "between 1 and 50" in await session.call_error(
            "query", {"sql": "SELECT 1", "database": "shop", "max_rows": 51}
        )
        assert "not allowed" in await session.call_error(
            "query", {"sql": "DELETE FROM people", "database": "team"}
        )
    assert file_digest(people) == before


@pytest.fixture(scope="module")
def demo_over_http(tmp_path_factory, log_dir):
    data = tmp_path_factory.mktemp("xdg")
    launch = Launch("dockyard-sqlite", ("--allow-write",), env={"XDG_DATA_HOME": str(data)})
    with http_server(launch, log_dir=log_dir) as server:
        yield server


@pytest.mark.parametrize("era", ERAS)
async def test_http_serves_the_generated_demo_database(demo_over_http, era):
    async with open_session(demo_over_http.url(), era=era) as session:
        tables = {t["name"]: t for t in (await session.call_ok("list_tables")).data["tables"]}
        top = (
            await session.call_ok(
                "query",
                {
                    "sql": "SELECT country, count(*) AS n FROM customers GROUP BY country ORDER BY n DESC LIMIT 3"
                },
            )
        ).data
        text = await session.call_error("execute", {"sql": "DROP TABLE categories"})
    assert set(tables) == {"categories", "customers", "order_items", "orders", "products", "order_totals"}
    assert tables["orders"]["row_count"] == 25_000
    assert len(top["rows"]) == 3
    # This client declared no elicitation handler, and the server was not started with
    # --trust-model-confirmation: the drop is refused, saying how the operator could allow confirm=true.
    assert text.startswith("Error (permission_denied)") and "--trust-model-confirmation" in text


def test_help_documents_the_server_flags(sqlite_launch):
    result = sqlite_launch().run("--help")
    for flag in ("--db", "--demo", "--allow-write", "--create", "--max-rows", "--timeout-ms", "--transport"):
        assert flag in result.stdout


def test_a_worker_pool_started_early_serves_only_with_the_limits_the_settings_give():
    from dockyard_sqlite.database.connection import worker_limits
    from dockyard_sqlite.database_set import DatabaseSet
    from dockyard_sqlite.settings import Limits
    from dockyard_sqlite.workers.pool import WorkerPool

    limits = Limits()
    matching = WorkerPool(worker_limits(limits))
    assert DatabaseSet((), limits, pool=matching).pool is matching

    other = WorkerPool(worker_limits(Limits(memory_mb=limits.memory_mb * 2)))
    other.start()
    assert other.pids
    databases = DatabaseSet((), limits, pool=other)
    assert databases.pool is not other and databases.pool.limits == worker_limits(limits)
    assert other.pids == []  # its worker stopped, not left for the garbage collector
