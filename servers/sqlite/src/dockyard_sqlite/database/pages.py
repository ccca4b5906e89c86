"""Rows as a reply shows them, a page at a time within a character budget. Pure: no SQLite here but a cursor.

A value is shown as it is unless it cannot be (a blob becomes a short hex preview, NaN/±inf text) or is
too long (a text cut at ``max_cell_chars``, saying how to read on). A page stops at ``limit`` rows or at
``max_chars`` characters of compact JSON, whichever comes first, and a query's next page is found again
by a signed cursor bound to the query it came from.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from itertools import chain
from typing import Any, Protocol

from pydantic_core import to_json

from dockyard_shared import InvalidArgument, LimitExceeded, decode_cursor, encode_cursor, json_size

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

# Values a reply shows as they are (a text only when short enough; a float only when finite).
_PLAIN_TYPES = frozenset({int, float, str, type(None)})

# (rows, more rows exist, what stopped the page: "max_items", "max_chars", "too_wide" or None)
Page = tuple[list[list[Any]], bool, str | None]


class RowSource(Protocol):
    """What a page is read from: a DB-API cursor."""

    def fetchmany(self, size: int = ..., /) -> list[Any]: ...
    def fetchone(self) -> Any: ...


def cell(value: Any, cut: int) -> Any:
    """A value as a reply shows it: a blob as a preview, NaN/±inf as text, a text over ``cut`` cut."""
    if isinstance(value, bytes):
        head = value[:32].hex()
        return f"<blob {len(value)} bytes: x'{head}{'…' if len(value) > 32 else ''}'>"
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return str(value)
    if isinstance(value, str) and len(value) > cut:
        return (
            value[:cut]
            + f"…[cut: {len(value) - cut} more characters; select substr(column, {cut + 1}) to read on]"
        )
    return value


def _special_columns(batch: Sequence[tuple[Any, ...]], max_cell_chars: int) -> list[int]:
    """Columns of ``batch`` holding a value :func:`cell` changes (or that may hold one).

    Decided a column at a time with C-level passes (the types seen, the longest text, the sum of
    the numbers), so the common batch — integers, short texts, finite floats — needs no per-value
    Python work at all.
    """
    special = []
    for index, column in enumerate(zip(*batch, strict=True)):
        kinds = set(map(type, column))
        kinds.discard(type(None))
        if kinds <= {int}:
            continue
        if kinds == {str}:
            if max(map(len, filter(None, column)), default=0) > max_cell_chars:
                special.append(index)
            continue
        if kinds <= {int, float}:
            total = sum(filter(None, column))
            if total - total != 0:  # NaN or ±inf somewhere (or a sum that overflowed: harmless)
                special.append(index)
            continue
        special.append(index)  # blobs, or mixed text and numbers
    return special


def convert(batch: Sequence[tuple[Any, ...]], max_cell_chars: int) -> tuple[list[list[Any]], int]:
    """The rows of ``batch`` as a reply shows them, and their size in JSON characters.

    The common batch — integers, floats, texts shorter than max_cell_chars, NULLs — is copied and
    measured in C: one pass for the types, one pydantic-core encoding (which also reveals NaN and
    ±inf, written as bare NaN/Infinity), and a longest-text pass only when the batch is big
    enough to hold a long text. Anything else (a blob, NaN/inf, a long text, a column mixing texts
    and numbers) is converted only in the columns that need it.
    """
    rows = list(map(list, batch))
    kinds = set(map(type, chain.from_iterable(batch)))
    if kinds <= _PLAIN_TYPES:
        try:
            encoded: bytes | None = to_json(rows)
        except Exception:  # e.g. a lone surrogate: let the careful path decide
            encoded = None
        if (
            encoded is not None
            and not (float in kinds and (b"NaN" in encoded or b"Infinity" in encoded))
            and not (
                str in kinds and len(encoded) > max_cell_chars and _long_text(batch, kinds, max_cell_chars)
            )
        ):
            return rows, _encoded_chars(encoded)
    special = _special_columns(batch, max_cell_chars)
    if special:
        for row in rows:
            for index in special:
                row[index] = cell(row[index], max_cell_chars)
    return rows, json_chars(rows)


def _long_text(batch: Sequence[tuple[Any, ...]], kinds: set[type], max_cell_chars: int) -> bool:
    """Whether a text in ``batch`` is longer than max_cell_chars (True when unsure)."""
    if kinds <= {str, type(None)}:
        return max(map(len, filter(None, chain.from_iterable(batch))), default=0) > max_cell_chars
    return True  # texts mixed with numbers: _special_columns checks column by column


def _shrink(row: tuple[Any, ...], max_chars: int) -> list[Any]:
    """A row larger than a whole page on its own (many long texts): cut each text harder."""
    cut = max(50, max_chars // (3 * max(1, len(row))))
    return [cell(value, cut) for value in row]


def read_page(source: RowSource, limit: int, *, max_chars: int, max_cell_chars: int) -> Page:
    """Up to ``limit`` rows within ``max_chars`` characters of JSON.

    Rows are fetched, converted and measured a batch at a time (:func:`convert`). Only the batch in
    which the budget runs out is measured row by row. A row larger than the whole budget on its own is
    shrunk (each value cut harder); one still too wide for the budget (a thousand blob columns) ends the
    page before it, with ``"too_wide"`` — as the page's first row, with no rows at all.
    """
    rows: list[list[Any]] = []
    chars = 0
    while len(rows) < limit:
        batch = source.fetchmany(min(64, limit - len(rows)))
        if not batch:
            return rows, False, None
        converted, size = convert(batch, max_cell_chars)
        if chars + size <= max_chars:
            rows.extend(converted)
            chars += size
            continue
        for original, row in zip(batch, converted, strict=True):  # the budget ends in this batch
            row_size = json_chars(row)
            if rows and chars + row_size > max_chars:
                return rows, True, "max_chars"
            if row_size > max_chars:
                row = _shrink(original, max_chars)
                row_size = json_chars(row)
                if row_size > max_chars:
                    return rows, True, "too_wide"
            rows.append(row)
            chars += row_size
    more = source.fetchone() is not None
    return rows, more, "max_items" if more else None


def json_chars(value: Any) -> int:
    """Characters of ``value`` as compact JSON, like :func:`json_size` but ~5× faster.

    Only for converted values (no bytes, NaN or inf: pydantic-core would write those as text or as
    bare NaN rather than fail).
    """
    try:
        encoded = to_json(value)
    except Exception:
        return json_size(value)
    return _encoded_chars(encoded)


def _encoded_chars(encoded: bytes) -> int:
    return len(encoded) if encoded.isascii() else len(encoded.decode())


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


def skip_rows(source: RowSource, count: int) -> None:
    """Read past ``count`` rows, keeping none of them."""
    skipped = 0
    while skipped < count:
        batch = source.fetchmany(min(4096, count - skipped))
        if not batch:
            return
        skipped += len(batch)


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
        f"{columns} values cut short.",
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
