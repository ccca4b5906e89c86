"""Rows as a reply shows them, a page at a time: the pure paging logic, without a server."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from dockyard_shared import Problem, json_size
from dockyard_sqlite.database.pages import (
    cell,
    continuation,
    convert,
    json_chars,
    offset_from,
    query_fingerprint,
    read_page,
    skip_rows,
)


def rows_cursor(rows: list[tuple]) -> sqlite3.Cursor:
    """A real cursor over ``rows`` (one column per tuple item)."""
    connection = sqlite3.connect(":memory:")
    width = len(rows[0]) if rows else 1
    connection.execute(f"CREATE TABLE t({', '.join(f'c{i}' for i in range(width))})")
    connection.executemany(f"INSERT INTO t VALUES ({', '.join('?' * width)})", rows)
    return connection.execute("SELECT * FROM t ORDER BY rowid")


def test_a_cell_previews_blobs_writes_non_finite_floats_as_text_and_cuts_long_text():
    assert cell(bytes(range(40)), 100) == f"<blob 40 bytes: x'{bytes(range(32)).hex()}…'>"
    assert cell(b"\x01\x02", 100) == "<blob 2 bytes: x'0102'>"
    assert [cell(v, 100) for v in (math.nan, math.inf, -math.inf)] == ["nan", "inf", "-inf"]
    assert cell("x" * 30, 10) == "x" * 10 + "…[cut: 20 more characters; select substr(column, 11) to read on]"
    assert cell("short", 10) == "short" and cell(7, 10) == 7 and cell(None, 10) is None


def test_a_plain_batch_is_copied_and_measured_as_compact_json():
    batch = [(1, "a", 2.5, None), (2, "b", -1.0, None)]
    rows, size = convert(batch, max_cell_chars=100)
    assert rows == [[1, "a", 2.5, None], [2, "b", -1.0, None]]
    assert size == len(json.dumps(rows, separators=(",", ":")))


def test_only_the_values_that_need_it_are_converted():
    batch = [(1, b"\xff", math.nan, "x" * 50), (2, None, 1.0, "ok")]
    rows, size = convert(batch, max_cell_chars=20)
    assert rows[0][0] == 1 and rows[0][1] == "<blob 1 bytes: x'ff'>" and rows[0][2] == "nan"
    assert rows[0][3].startswith("x" * 20 + "…[cut: 30 more")
    assert rows[1] == [2, None, 1.0, "ok"]
    assert size == json_size(rows)


def test_json_chars_counts_characters_not_bytes():
    assert json_chars(["é"]) == len('["é"]') and json_chars([1, None]) == len("[1,null]")


def test_a_page_stops_at_its_row_limit_and_says_more_exist():
    rows, more, stopped_by = read_page(
        rows_cursor([(i,) for i in range(10)]), 4, max_chars=10_000, max_cell_chars=100
    )
    assert rows == [[0], [1], [2], [3]] and more and stopped_by == "max_items"
    rows, more, stopped_by = read_page(
        rows_cursor([(i,) for i in range(4)]), 4, max_chars=10_000, max_cell_chars=100
    )
    assert len(rows) == 4 and not more and stopped_by is None


def test_a_page_stops_at_its_character_budget():
    source = rows_cursor([("y" * 90,) for _ in range(100)])
    rows, more, stopped_by = read_page(source, 100, max_chars=1_000, max_cell_chars=1_000)
    assert 0 < len(rows) < 100 and more and stopped_by == "max_chars"
    assert json_size(rows) <= 1_000


def test_a_row_wider_than_the_whole_budget_is_shrunk_to_fit():
    wide = tuple("z" * 5_000 for _ in range(40))
    rows, more, _ = read_page(rows_cursor([wide, wide]), 10, max_chars=10_000, max_cell_chars=10_000)
    assert len(rows) == 1 and more
    assert json_size(rows[0]) <= 10_000 and rows[0][0].startswith("z" * (10_000 // (3 * 40)) + "…[cut:")


def test_skipping_reads_past_rows_and_stops_at_the_end():
    source = rows_cursor([(i,) for i in range(10)])
    skip_rows(source, 7)
    assert source.fetchall() == [(7,), (8,), (9,)]
    short = rows_cursor([(1,)])
    skip_rows(short, 100)
    assert short.fetchall() == []


def test_a_cursor_continues_only_the_query_it_came_from():
    fingerprint = query_fingerprint("shop", "SELECT * FROM t", [1])
    assert query_fingerprint("shop", "SELECT * FROM t", [1]) == fingerprint
    assert query_fingerprint("shop", "SELECT * FROM t", [2]) != fingerprint
    assert query_fingerprint("other", "SELECT * FROM t", [1]) != fingerprint
    cursor, note = continuation(fingerprint, 100, 50, "max_items")
    assert offset_from(cursor, fingerprint) == 150 and offset_from(None, fingerprint) == 0
    assert note.startswith("Truncated at max_rows: rows 101–150 shown") and "cursor=next_cursor" in note
    _, by_size = continuation(fingerprint, 0, 3, "max_chars")
    assert by_size.startswith("Truncated at the page size limit in characters: rows 1–3 shown")
    with pytest.raises(Problem, match="belongs to a different query"):
        offset_from(cursor, query_fingerprint("shop", "SELECT 1", None))
