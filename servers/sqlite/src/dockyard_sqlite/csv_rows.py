"""Rows as CSV or TSV text, a chunk at a time, for export_csv.

Runs in the worker processes (:mod:`.workers.child`), next to the cursor, so rows travel to the server
already formatted and a chunk at a time: the server only appends the chunks to the export file and
checks its size. Standard library only.

Values: NULL is an empty cell, a blob is its hex digits, numbers as SQLite returns them. A text cell a
spreadsheet would run as a formula — one starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return, and not a plain number — is written with a leading ``'`` (OWASP's advice against CSV injection),
and counted, so the reply can say how many cells were changed.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any, Protocol

__all__ = ["CHUNK_BYTES", "FORMULA_START", "csv_chunk", "neutralise"]

# About how many bytes one chunk holds before it is sent (a single row may make it longer).
CHUNK_BYTES = 1024 * 1024
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_BATCH = 64


class RowSource(Protocol):
    description: Any

    def fetchmany(self, size: int = ..., /) -> list[Any]: ...


def neutralise(text: str) -> str | None:
    """``text`` made inert for a spreadsheet, or None when it needs no change."""
    if text.startswith(FORMULA_START) and not _NUMBER.fullmatch(text):
        return "'" + text
    return None


def csv_chunk(
    cursor: RowSource, delimiter: str, header: bool, max_bytes: int
) -> tuple[bytes, int, int, bool]:
    """The next rows of ``cursor`` as UTF-8 CSV (the column names first when ``header``), stopping once
    the text passes ``max_bytes``: (data, rows, cells neutralised, whether the cursor is done)."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\r\n")
    neutralised = 0
    if header:
        names = [d[0] for d in cursor.description or ()]
        cells = []
        for name in names:
            safe = neutralise(name)
            neutralised += safe is not None
            cells.append(name if safe is None else safe)
        writer.writerow(cells)
    count = 0
    while out.tell() < max_bytes:
        # Sized from the rows so far, as rows.py does: one at a time when each holds megabytes.
        per_row = out.tell() / count if count else max_bytes
        size = max(1, min(_BATCH, int((max_bytes - out.tell()) / max(per_row, 1))))
        batch = cursor.fetchmany(size)
        if not batch:
            return out.getvalue().encode(), count, neutralised, True
        for row in batch:
            cells = []
            for value in row:
                if value is None:
                    cells.append("")
                elif isinstance(value, str):
                    safe = neutralise(value)
                    if safe is not None:
                        neutralised += 1
                        value = safe
                    cells.append(value)
                elif isinstance(value, bytes):
                    cells.append(value.hex())
                else:
                    cells.append(value)
            writer.writerow(cells)
        count += len(batch)
    return out.getvalue().encode(), count, neutralised, False
