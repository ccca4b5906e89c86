"""Rows as a reply shows them, a page at a time within a character budget and a memory budget.

This module runs in the worker processes (:mod:`.workers.child`), next to the cursor, so only a bounded
page ever leaves SQLite's process: it imports nothing but the standard library and pydantic-core.

A value is shown as it is unless it cannot be (a blob becomes a short hex preview, NaN/±inf text) or is
too long (a text cut at ``max_cell_chars``, saying how to read on). A page stops at ``limit`` rows or at
``max_chars`` characters of compact JSON, whichever comes first.

Rows are fetched in batches whose size follows the size of the rows seen so far (:data:`BATCH_BYTES`):
64 small rows at a time, but one at a time when each holds megabytes, so a page of 16 MiB texts holds
one of them in memory at once, not sixty-four; and such rows are never encoded whole.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import chain
from typing import Any, Protocol

from pydantic_core import to_json

__all__ = ["BATCH_BYTES", "Page", "RowSource", "cell", "convert", "json_chars", "read_page", "skip_rows"]

# Values a reply shows as they are (a text only when short enough; a float only when finite).
_PLAIN_TYPES = frozenset({int, float, str, type(None)})
# About how many bytes of fetched values one batch may hold: the next batch is sized from the rows
# seen so far, from one row up to 64.
BATCH_BYTES = 4 * 1024 * 1024
_MAX_BATCH = 64

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
    """The rows of ``batch`` as a reply shows them, and their size in JSON characters (see
    :func:`_convert`)."""
    rows, chars, _ = _convert(batch, max_cell_chars)
    return rows, chars


def _convert(
    batch: Sequence[tuple[Any, ...]], max_cell_chars: int, *, careful: bool = False
) -> tuple[list[list[Any]], int, int]:
    """The rows of ``batch`` as a reply shows them, their size in JSON characters, and about how many
    bytes the fetched values took (for sizing the next batch). ``careful`` skips the fast path, whose
    one encoding of the whole batch would copy any long text it holds (twice over, as the encoder
    grows its buffer): for a batch that may hold megabytes.

    The common batch — integers, floats, texts shorter than max_cell_chars, NULLs — is copied and
    measured in C: one pass for the types, one pydantic-core encoding (which also reveals NaN and
    ±inf, written as bare NaN/Infinity), and a longest-text pass only when the batch is big
    enough to hold a long text. Anything else (a blob, NaN/inf, a long text, a column mixing texts
    and numbers) is converted only in the columns that need it.
    """
    rows = list(map(list, batch))
    kinds = set(map(type, chain.from_iterable(batch)))
    if kinds <= _PLAIN_TYPES and not careful:
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
            return rows, _encoded_chars(encoded), len(encoded)
    special = _special_columns(batch, max_cell_chars)
    fetched = 0
    if special:
        for row in rows:
            for index in special:
                value = row[index]
                if isinstance(value, (str, bytes)):
                    fetched += len(value)
                row[index] = cell(value, max_cell_chars)
    chars = json_chars(rows)
    return rows, chars, fetched + chars


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

    Rows are fetched, converted and measured a batch at a time (:func:`convert`); the first batch is
    one row and each next one is sized from the bytes per row seen so far (:data:`BATCH_BYTES`). Only
    the batch in which the budget runs out is measured row by row. A row larger than the whole budget
    on its own is shrunk (each value cut harder); one still too wide for the budget (a thousand blob
    columns) ends the page before it, with ``"too_wide"`` — as the page's first row, with no rows at all.
    """
    rows: list[list[Any]] = []
    chars = 0
    size = 1
    careful = True  # until the rows are known to be small
    while len(rows) < limit:
        batch = source.fetchmany(min(size, limit - len(rows)))
        if not batch:
            return rows, False, None
        converted, batch_chars, fetched = _convert(batch, max_cell_chars, careful=careful)
        per_row = max(1, fetched // len(batch))
        size = max(1, min(_MAX_BATCH, size * 4, BATCH_BYTES // per_row))
        careful = per_row > max_cell_chars
        if chars + batch_chars <= max_chars:
            rows.extend(converted)
            chars += batch_chars
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


def skip_rows(source: RowSource, count: int) -> None:
    """Read past ``count`` rows, keeping none of them (in batches sized like :func:`read_page`'s)."""
    skipped = 0
    size = 1
    while skipped < count:
        batch = source.fetchmany(min(size, count - skipped))
        if not batch:
            return
        skipped += len(batch)
        fetched = sum(len(v) for v in chain.from_iterable(batch) if isinstance(v, (str, bytes)))
        size = max(1, min(4096, size * 4, BATCH_BYTES // max(1, fetched // len(batch))))


def json_chars(value: Any) -> int:
    """Characters of ``value`` as compact JSON (pydantic-core's encoder, ~5× faster than ``json``).

    Only for converted values (no bytes, NaN or inf: pydantic-core would write those as text or as
    bare NaN rather than fail).
    """
    try:
        encoded = to_json(value)
    except Exception:
        return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))
    return _encoded_chars(encoded)


def _encoded_chars(encoded: bytes) -> int:
    return len(encoded) if encoded.isascii() else len(encoded.decode())
