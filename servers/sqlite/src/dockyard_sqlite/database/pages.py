"""Rows as a reply shows them, a page at a time within a character budget, and the cursor to the next page.

Reading and cutting rows happens next to SQLite, in the worker process (:mod:`...rows`, re-exported
here); a remote cursor's ``read_page`` runs it there.

A value is shown as it is unless it cannot be (a blob becomes a short hex preview, NaN/±inf text) or is
too long (a text cut at ``max_cell_chars``, saying how to read on). A page stops at ``limit`` rows or at
``max_chars`` characters of compact JSON, whichever comes first, and a query's next page is found again
by a signed cursor bound to the query it came from.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from dockyard_shared import InvalidArgument, LimitExceeded, decode_cursor, encode_cursor
from dockyard_shared.words import plural

from ..rows import Page, RowSource, cell, convert, json_chars, read_page, skip_rows

__all__ = [
    "Page",
    "RowSource",
    "cell",
    "continuation",
    "convert",
    "json_chars",
    "offset_from",
    "query_fingerprint",
    "read_page",
    "rows_budget",
    "skip_rows",
    "too_wide",
]


# -- paging a query ----------------------------------------------------------------------------


def query_fingerprint(alias: str, sql: str, params: Any) -> str:
    """What a cursor is bound to: the same database, statement and parameters."""
    payload = json.dumps([alias, sql, params], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def offset_from(cursor: str | None, fingerprint: str) -> int:
    """Rows before the page ``cursor`` asks for (0 without one)."""
    if not cursor:
        return 0
    state = decode_cursor(cursor, tool="query")
    if state.get("q") != fingerprint:
        raise InvalidArgument(
            "This cursor belongs to a different query (the sql, params or database changed).",
            next_step="Repeat the exact same sql, params and database with the cursor, or drop the cursor to start over.",
        )
    return int(state.get("offset", 0))


def rows_budget(columns: list[str], max_chars: int) -> int:
    """What is left of a page's ``max_chars`` for its rows once the column names are in; refused when the
    names alone would take half of it (a row would hardly fit beside them)."""
    names = json_chars(columns)
    if names > max_chars // 2:
        raise LimitExceeded(
            f"The statement's {len(columns)} column names alone take {names:,} characters, more than half "
            f"of one reply ({max_chars:,}).",
            next_step="Select fewer columns, or name them shorter with AS.",
        )
    return max_chars - names


def too_wide(row_number: int, columns: int, max_chars: int) -> LimitExceeded:
    """The problem for a row that does not fit one reply even with its values cut short."""
    return LimitExceeded(
        f"Row {row_number} does not fit one reply ({max_chars:,} characters) even with each of its "
        f"{plural(columns, 'value')} cut short.",
        next_step="Select fewer columns, or parts of long values: substr(column, start, count), length(blob).",
    )


def continuation(fingerprint: str, offset: int, shown: int, stopped_by: str | None) -> tuple[str, str]:
    """The next page's cursor, and the note saying why this one stopped and how to go on."""
    next_offset = offset + shown
    reason = "max_rows" if stopped_by == "max_items" else "the page size limit in characters"
    note = (
        f"Truncated at {reason}: rows {offset + 1}–{next_offset} shown; more rows exist. "
        "Call query again with the same sql, params and database plus cursor=next_cursor for the next page, "
        "or narrow the query (WHERE, fewer columns, an aggregate)."
    )
    return encode_cursor({"q": fingerprint, "offset": next_offset}), note
