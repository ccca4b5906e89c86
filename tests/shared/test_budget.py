from __future__ import annotations

import itertools

import pytest

from dockyard_shared import InvalidArgument, bound_items, bound_text, decode_cursor, encode_cursor, json_size


def test_short_text_is_returned_whole_and_not_marked_truncated():
    result = bound_text("hello\nworld\n", 100)
    assert (result.text, result.truncated, result.next_offset, result.note) == (
        "hello\nworld\n",
        False,
        None,
        None,
    )


def test_long_text_is_cut_at_a_line_end_and_says_how_to_continue():
    text = "".join(f"line {i:04d}\n" for i in range(1000))
    result = bound_text(text, 100, how_to_continue=lambda n: f"call git_show with offset={n}")
    assert result.truncated
    assert result.text.endswith("\n") and len(result.text) <= 100
    assert result.next_offset == len(result.text)
    assert f"call git_show with offset={result.next_offset}" in result.note
    assert "narrow" in result.note


def test_paging_through_text_with_offsets_yields_the_whole_text_exactly():
    text = "".join(f"{i}: " + "x" * (i % 37) + "\n" for i in range(500))
    pieces, offset = [], 0
    while True:
        page = bound_text(text, 257, offset=offset)
        pieces.append(page.text)
        if not page.truncated:
            break
        offset = page.next_offset
    assert "".join(pieces) == text


def test_a_line_longer_than_the_budget_is_cut_mid_line_so_paging_progresses():
    result = bound_text("y" * 1000, 100)
    assert result.text == "y" * 100 and result.next_offset == 100


@pytest.mark.parametrize(("max_chars", "offset"), [(0, 0), (10, -1), (10, 99)])
def test_bad_budgets_and_offsets_are_invalid_arguments(max_chars, offset):
    with pytest.raises(InvalidArgument):
        bound_text("short", max_chars, offset=offset)


def test_bound_items_stops_at_max_items_and_knows_more_exist():
    result = bound_items(range(10), max_items=3)
    assert result.items == [0, 1, 2] and result.truncated and result.stopped_by == "max_items"
    exact = bound_items(range(3), max_items=3)
    assert exact.items == [0, 1, 2] and not exact.truncated


def test_bound_items_stops_at_the_character_budget_but_always_returns_one_item():
    rows = [{"text": "x" * 50} for _ in range(10)]
    result = bound_items(rows, max_items=100, max_chars=150)
    assert len(result.items) == 2 and result.truncated and result.stopped_by == "max_chars"
    assert result.chars == 2 * json_size(rows[0])
    huge = bound_items([{"text": "x" * 1000}], max_items=10, max_chars=10)
    assert len(huge.items) == 1 and not huge.truncated


def test_bound_items_consumes_at_most_one_item_past_the_budget():
    consumed = itertools.count()
    source = (next(consumed) for _ in itertools.repeat(None))  # infinite: materialising would hang
    result = bound_items(source, max_items=5)
    assert result.items == [0, 1, 2, 3, 4]
    assert next(consumed) == 6  # items 0..5 were drawn; nothing more


def test_cursors_round_trip_and_refuse_tampering():
    state = {"offset": 100, "sql": "select 1"}
    cursor = encode_cursor(state)
    assert decode_cursor(cursor, tool="query") == state
    tampered = cursor[:-2] + ("A" if cursor[-2] != "A" else "B") + cursor[-1]
    for bad in (tampered, "not-a-cursor", "", "!!!"):
        with pytest.raises(InvalidArgument, match="Call query again without a cursor"):
            decode_cursor(bad, tool="query")
