"""A CSV or TSV file into a new table (import_csv), in one transaction on a write connection.

The file is read twice, streamed: once to check its shape and infer each column's type, once to insert
its rows in batches. Types: with ``types="infer"`` a column is INTEGER when every non-empty cell is a
whole number that fits 64 bits (and none has a leading zero: zip codes and ids stay text), REAL when
every one is a decimal number, else TEXT; an empty cell is NULL in INTEGER and REAL columns and '' in
TEXT ones. With ``types="text"`` every column is TEXT and every cell kept as written.

The table is created and filled by ordinary statements, under the write connection's authorizer; only
the transaction around them is the server's own. Nothing is left behind when anything fails: a
malformed line, a value too long, the growth limit (the file may grow by at most --max-write-mb, however
many statements the import takes).
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
import sqlite3
from collections.abc import Iterator

from dockyard_shared import Conflict, InvalidArgument, LimitExceeded

from ..models import ImportResult
from ..workers.connection import RemoteConnection
from .catalog.names import USER_OBJECTS
from .connection import quote_identifier

__all__ = ["MAX_IMPORT_COLUMNS", "import_rows"]

MAX_IMPORT_COLUMNS = 1_000
_VARIABLES = 10_000  # placeholders per statement (SQLITE_LIMIT_VARIABLE_NUMBER on every connection)
_INTEGER = re.compile(r"[+-]?(0|[1-9][0-9]*)")
_REAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_LEADING_ZERO = re.compile(r"[+-]?0[0-9]")  # 02134, 007: codes, kept as text
_TABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def _rows(fd: int, delimiter: str, name: str) -> Iterator[tuple[int, list[str]]]:
    os.lseek(fd, 0, os.SEEK_SET)
    raw = os.fdopen(os.dup(fd), "rb")
    text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
    reader = csv.reader(text, delimiter=delimiter, strict=True)
    try:
        for row in reader:
            yield reader.line_num, row
    except UnicodeDecodeError as error:
        raise InvalidArgument(
            f"{name} is not UTF-8 text (a byte at line {reader.line_num + 1} cannot be decoded: {error.reason}).",
            next_step="Save the file as UTF-8 and import again.",
        ) from None
    except csv.Error as error:
        raise InvalidArgument(
            f"{name} is not well-formed CSV at line {reader.line_num}: {error}.",
            next_step="Fix that line (quotes must be closed and doubled inside a quoted cell; a cell "
            "holds at most 131,072 characters), then import again.",
        ) from None
    finally:
        text.close()


def _header(cells: list[str]) -> tuple[list[str], list[str]]:
    """Column names from the header row (blank ones named column_N, repeats numbered), and notes."""
    names: list[str] = []
    seen: set[str] = set()
    renamed = 0
    for index, cell in enumerate(cells, 1):
        base = cell.strip()[:128] or f"column_{index}"
        candidate, number = base, 2
        while candidate.lower() in seen:
            candidate, number = f"{base}_{number}", number + 1
        renamed += candidate != cell
        seen.add(candidate.lower())
        names.append(candidate)
    notes = [f"{renamed} header cells were blank, repeated or padded and were renamed."] if renamed else []
    return names, notes


def _kind(cell: str, current: str) -> str:
    if current == "TEXT" or cell == "":
        return current
    if current in ("", "INTEGER") and _INTEGER.fullmatch(cell) and -(2**63) <= int(cell) < 2**63:
        return "INTEGER"
    if _REAL.fullmatch(cell) and not _LEADING_ZERO.match(cell):
        return "REAL"
    return "TEXT"


def _value(cell: str, kind: str) -> str | int | float | None:
    if kind == "TEXT":
        return cell
    if cell == "":
        return None
    return int(cell) if kind == "INTEGER" else float(cell)


def import_rows(
    connection: RemoteConnection,
    fd: int,
    *,
    name: str,
    delimiter: str,
    table: str,
    infer: bool,
    alias: str,
    max_write_bytes: int,
) -> ImportResult:
    if not _TABLE.fullmatch(table) or table.lower().startswith("sqlite_"):
        raise InvalidArgument(
            f"{table[:130]!r} is not a plain table name.",
            next_step="Pass letters, digits and underscores, starting with a letter (not sqlite_…).",
        )
    existing = connection.execute(
        f"SELECT name FROM sqlite_master WHERE {USER_OBJECTS} AND lower(name) = lower(?)",
        (table,),
        prefetch=True,
    ).fetchone()
    if existing:
        raise Conflict(
            f"A table or view named {existing[0]!r} already exists; import_csv only creates new tables.",
            next_step="Pass another table name (to add rows to an existing table, use execute with INSERT).",
        )
    rows = _rows(fd, delimiter, name)
    first = next(rows, None)
    if first is None or not any(cell.strip() for cell in first[1]):
        raise InvalidArgument(
            f"{name} is empty or its first line is blank.", next_step="The first line must name the columns."
        )
    columns, notes = _header(first[1])
    if len(columns) > MAX_IMPORT_COLUMNS:
        raise LimitExceeded(
            f"{name} has {len(columns)} columns; at most {MAX_IMPORT_COLUMNS}.",
            next_step="Import fewer columns.",
        )
    kinds = [""] * len(columns)
    count = 0
    for line, cells in rows:
        if len(cells) != len(columns):
            if not cells:
                continue  # a blank line
            raise InvalidArgument(
                f"{name}, line {line}: {len(cells)} cells where the header has {len(columns)}.",
                next_step="Fix that line (a delimiter inside a cell must be quoted), then import again.",
            )
        count += 1
        if infer:
            kinds = [_kind(cell, kind) for cell, kind in zip(cells, kinds, strict=True)]
    kinds = [(kind or "TEXT") if infer else "TEXT" for kind in kinds]
    quoted = quote_identifier(table)
    definition = ", ".join(f"{quote_identifier(c)} {k}" for c, k in zip(columns, kinds, strict=True))
    batch = max(1, min(500, _VARIABLES // len(columns)))
    with connection.auth_log.own_statement():
        start = connection.execute("PRAGMA page_count", prefetch=True).fetchone()[0]
        page_size = connection.execute("PRAGMA page_size", prefetch=True).fetchone()[0]
        connection.execute("BEGIN IMMEDIATE")
    try:
        connection.execute(f"CREATE TABLE main.{quoted} ({definition})").fetchall()
        pending: list[list[object]] = []

        def flush() -> None:
            placeholders = ", ".join(["(" + ", ".join("?" * len(columns)) + ")"] * len(pending))
            connection.execute(
                f"INSERT INTO main.{quoted} VALUES {placeholders}", [v for row in pending for v in row]
            ).fetchall()
            pending.clear()
            with connection.auth_log.own_statement():
                pages = connection.execute("PRAGMA page_count", prefetch=True).fetchone()[0]
            if (pages - start) * page_size > max_write_bytes:
                raise LimitExceeded(
                    f"The import would grow the database by more than {max_write_bytes // (1024 * 1024)} MiB "
                    "(--max-write-mb); nothing was imported.",
                    next_step="Import a smaller file, or ask the user to raise --max-write-mb.",
                )

        rows = _rows(fd, delimiter, name)
        next(rows)
        for _line, cells in rows:
            if len(cells) != len(columns):
                if not cells:
                    continue
                raise Conflict(
                    f"{name} changed while it was imported.", next_step="Import it again.", retryable=True
                )
            pending.append([_value(cell, kind) for cell, kind in zip(cells, kinds, strict=True)])
            if len(pending) >= batch:
                flush()
        if pending:
            flush()
        with connection.auth_log.own_statement():
            connection.execute("COMMIT").fetchall()
    except BaseException:
        with contextlib.suppress(sqlite3.Error), connection.auth_log.own_statement():
            if connection.in_transaction:  # not after a lost worker: its transaction went with it
                connection.execute("ROLLBACK").fetchall()
        raise
    if infer:
        notes.append("Types were inferred from every cell; empty cells are NULL in INTEGER and REAL columns.")
    return ImportResult(
        database=alias,
        table=table,
        rows=count,
        columns=[f"{c} {k}" for c, k in zip(columns, kinds, strict=True)],
        types="inferred" if infer else "text",
        note=" ".join(notes) or None,
    )
