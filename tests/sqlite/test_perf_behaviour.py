"""What users feel: list_tables costs a bounded amount per table after a write, and says which kind of count
each row carries; a statement stopped by the time limit says how the operator raises it and which index
would help. Through a client session, both eras."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.harness import open_session
from tests.sqlite.helpers import make_server


@pytest.fixture
def sizes(tmp_path) -> Path:
    """Tables on both sides of list_tables' exact-count bound (10,000 rows), with and without a rowid."""
    path = tmp_path / "sizes.db"
    connection = sqlite3.connect(path)
    series = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {})"
    connection.executescript(
        f"""
        CREATE TABLE big (id INTEGER PRIMARY KEY, v TEXT);
        {series.format(30_000)} INSERT INTO big SELECT i, 'v' || i FROM n;
        CREATE TABLE small (id INTEGER PRIMARY KEY, v TEXT);
        {series.format(9_999)} INSERT INTO small SELECT i, 'v' || i FROM n;
        CREATE TABLE empty (a);
        CREATE TABLE keyed (k TEXT PRIMARY KEY, v) WITHOUT ROWID;
        {series.format(12_000)} INSERT INTO keyed SELECT 'k' || i, i FROM n;
        CREATE TABLE tiny_keyed (k TEXT PRIMARY KEY) WITHOUT ROWID;
        INSERT INTO tiny_keyed VALUES ('a'), ('b');
        -- A column named rowid: max(rowid) would read this column (every row), not the row ids.
        CREATE TABLE shadow (rowid TEXT, oid TEXT);
        {series.format(20)} INSERT INTO shadow SELECT 'r' || i, 'o' || i FROM n;
        -- Sparse row ids: few rows, a wide range.
        CREATE TABLE sparse (id INTEGER PRIMARY KEY);
        INSERT INTO sparse VALUES (-5), (1), (50000);
        CREATE VIEW big_view AS SELECT * FROM big;
        CREATE VIEW small_view AS SELECT * FROM small WHERE id <= 3;
        """
    )
    connection.commit()
    connection.close()
    return path


async def test_list_tables_says_which_kind_of_count_each_row_carries(sizes, era):
    async with open_session(make_server(sizes), era=era) as session:
        listing = (await session.call_ok("list_tables")).data
        exact = (await session.call_ok("describe_table", {"table": "big"})).data
    counts = {t["name"]: (t["row_count"], t["row_count_is"]) for t in listing["tables"]}
    assert counts == {
        "big": (30_000, "estimate"),  # the rowid range: two index seeks, no row read
        "small": (9_999, "exact"),
        "empty": (0, "exact"),
        "keyed": (10_001, "at least"),  # no rowid: counted one row past the bound, then stopped
        "tiny_keyed": (2, "exact"),
        "shadow": (20, "exact"),
        "sparse": (50_006, "estimate"),
        "big_view": (10_001, "at least"),
        "small_view": (3, "exact"),
    }
    assert "over 10,000 rows are not exact" in listing["note"] and "describe_table" in listing["note"]
    # describe_table still counts one table exactly.
    assert exact["row_count"] == 30_000 and exact["row_count_exact"] is True


async def test_a_listing_whose_counts_are_bounded_is_still_kept_and_seen_to_change(sizes, era):
    async with open_session(make_server(sizes), era=era) as session:
        first = (await session.call_ok("list_tables")).data
        connection = sqlite3.connect(sizes)
        connection.execute("INSERT INTO small VALUES (10000, 'last')")
        connection.execute("INSERT INTO small VALUES (10001, 'past the bound')")
        connection.commit()
        connection.close()
        second = (await session.call_ok("list_tables")).data
    small = {t["name"]: t for t in first["tables"]}["small"]
    after = {t["name"]: t for t in second["tables"]}["small"]
    assert (small["row_count"], small["row_count_is"]) == (9_999, "exact")
    assert (after["row_count"], after["row_count_is"]) == (10_001, "estimate")


async def test_list_tables_counts_many_tables_with_their_kinds(tmp_path, era):
    # More tables than one counting statement takes (100), one of them unreadable here.
    path = tmp_path / "many.db"
    connection = sqlite3.connect(path)
    for index in range(250):
        connection.execute(f"CREATE TABLE t{index:03d} (id INTEGER PRIMARY KEY)")
        connection.execute(f"INSERT INTO t{index:03d} VALUES ({index + 1})")
    connection.create_function("mystery", 1, lambda value: 0, deterministic=True)
    connection.execute("CREATE VIEW v_mystery AS SELECT mystery(id) AS m FROM t000")
    connection.commit()
    connection.close()
    async with open_session(make_server(path), era=era) as session:
        listing = (await session.call_ok("list_tables")).data
    counts = {t["name"]: (t["row_count"], t["row_count_is"]) for t in listing["tables"]}
    assert len(counts) == 251
    assert all(counts[f"t{index:03d}"] == (1, "exact") for index in range(250))
    assert counts["v_mystery"] == (None, "not counted")
    assert "mystery" in {t["name"]: t for t in listing["tables"]}["v_mystery"]["problem"]


# -- a statement stopped by the time limit -------------------------------------------------------

# A nested loop over two scans of a 20,000-row table: hundreds of millions of steps, far past any
# time limit a test sets, on any machine.
SLOW = (
    "SELECT o.customer_id, count(*) FROM orders AS o, orders AS p "
    "WHERE o.customer_id + 0 = p.customer_id + 1 GROUP BY o.customer_id ORDER BY 2 DESC LIMIT 5"
)


@pytest.fixture
def orders(tmp_path) -> Path:
    path = tmp_path / "orders.db"
    connection = sqlite3.connect(path)
    connection.executescript(
        """
        CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT, customer_id INTEGER, total REAL);
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
        INSERT INTO orders SELECT i, 'n' || i, i % 700, i / 7.0 FROM n;
        """
    )
    connection.commit()
    connection.close()
    return path


def _says_how_to_raise_the_limit_and_which_index(text: str, limit_ms: int) -> None:
    assert text.startswith("Error (limit_exceeded)"), text
    assert f"{limit_ms} ms limit" in text
    assert f"--timeout-ms (now {limit_ms})" in text
    assert 'CREATE INDEX "orders_by_customer_id" ON "orders"("customer_id")' in text
    assert "this server never does" in text


async def test_a_query_stopped_by_the_time_limit_names_the_flag_and_the_index(orders, era):
    async with open_session(make_server(orders, timeout_ms=300), era=era) as session:
        text = await session.call_error("query", {"sql": SLOW})
        plan = (await session.call_ok("explain_query", {"sql": SLOW})).data
        # The advice was only advice: no index exists afterwards.
        indexes = (
            await session.call_ok("query", {"sql": "SELECT name FROM pragma_index_list('orders')"})
        ).data
    _says_how_to_raise_the_limit_and_which_index(text, 300)
    assert indexes["rows"] == []
    assert plan["full_scans"]


async def test_a_write_stopped_by_the_time_limit_names_the_flag_and_the_index(orders, sqlite_launch, era):
    # Over stdio, with the operator's own flag.
    launch = sqlite_launch("--db", str(orders), "--allow-write", "--timeout-ms", "250")
    slow_update = (
        "UPDATE orders SET total = total + 1 WHERE customer_id IN "
        "(SELECT o.customer_id FROM orders AS o, orders AS p WHERE o.customer_id + 0 = p.customer_id + 1) "
        "AND id < 10"
    )
    async with open_session(launch, era=era) as session:
        text = await session.call_error("execute", {"sql": slow_update})
    _says_how_to_raise_the_limit_and_which_index(text, 250)


async def test_a_runaway_without_a_table_scan_suggests_no_index(orders, era):
    runaway = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"
    async with open_session(make_server(orders, timeout_ms=200), era=era) as session:
        text = await session.call_error("query", {"sql": runaway})
    assert "--timeout-ms (now 200)" in text and "CREATE INDEX" not in text


async def test_no_index_is_suggested_for_a_column_that_is_only_selected(orders, era):
    # Both scans read note only to show it and group by the primary key: no index would help.
    cross = "SELECT o.note, count(*) AS n FROM orders AS o, orders AS p GROUP BY o.id ORDER BY n DESC"
    async with open_session(make_server(orders, timeout_ms=200), era=era) as session:
        text = await session.call_error("query", {"sql": cross})
    assert "200 ms limit" in text and "--timeout-ms (now 200)" in text
    assert "CREATE INDEX" not in text


async def test_explain_query_names_the_table_behind_an_alias_in_a_full_scan(orders, era):
    sql = "SELECT o.id FROM orders AS o WHERE o.note = 'n5'"
    async with open_session(make_server(orders), era=era) as session:
        plan = (await session.call_ok("explain_query", {"sql": sql})).data
    assert plan["full_scans"] and "an index on orders(note)" in plan["full_scans"][0]
