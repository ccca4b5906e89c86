"""Searching the catalog by name and type, in levels, so a model explores a database of thousands of tables
without listing it whole (search_schema).

The columns of every table and view are read once (:func:`all_columns`: one statement, or one object at a
time when one of them cannot be read) and kept in the catalog cache while the file is unchanged; a search
filters them here. Levels: ``names`` (just what matched), ``summary`` (each table's column count and its
matching columns with their types) and ``full`` (every column, and the foreign keys). Every level is paged
by tables (``offset``/``next_offset``) and bounded by the page budget.
"""

from __future__ import annotations

import fnmatch
import json
import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

from dockyard_shared import InvalidArgument

from ...models import ColumnInfo, ForeignKeyInfo, SchemaMatch, SchemaSearch
from ...workers.connection import RemoteConnection
from ..connection import Budget
from .listing import OBJECT_SLICE_MS, object_problem
from .names import USER_OBJECTS, cut_name

__all__ = [
    "MAX_SEARCHED_OBJECTS",
    "PAGE_TABLES",
    "CatalogColumns",
    "Entry",
    "all_columns",
    "foreign_keys",
    "search",
]

# The most tables and views a search looks at (tables first, then views, by name).
MAX_SEARCHED_OBJECTS = 10_000
# Tables per page at each level (the page budget may stop a page sooner).
PAGE_TABLES = {"names": 200, "summary": 50, "full": 10}
# Matching columns a summary lists per table.
SUMMARY_COLUMNS = 50
MAX_PATTERN_CHARS = 200

Column = tuple[str, str, bool, str | None, bool]  # name, declared type, not null, default, primary key


@dataclass(frozen=True)
class Entry:
    name: str
    type: str
    columns: tuple[Column, ...]
    problem: str | None = None


@dataclass(frozen=True)
class CatalogColumns:
    entries: tuple[Entry, ...]
    total: int  # tables and views in the database, searched or not


def all_columns(connection: RemoteConnection, overall: Budget) -> tuple[CatalogColumns, bool]:
    """Every table's and view's columns (the first :data:`MAX_SEARCHED_OBJECTS`); keepable unless an
    object was left unread for lack of time."""
    total = connection.execute(f"SELECT count(*) FROM sqlite_master WHERE {USER_OBJECTS}", prefetch=True)
    listed = f"SELECT name, type FROM sqlite_master WHERE {USER_OBJECTS} ORDER BY type, name LIMIT ?"
    try:
        rows = connection.execute(
            f'SELECT m.name, m.type, c.name, c.type, c."notnull", c.dflt_value, c.pk FROM ({listed}) AS m '
            "LEFT JOIN pragma_table_info(m.name) AS c ORDER BY m.type, m.name, c.cid",
            (MAX_SEARCHED_OBJECTS,),
        ).fetchall()
    except sqlite3.Error:  # one object cannot be read: find which, one at a time
        entries, keepable = _one_by_one(
            connection, connection.execute(listed, (MAX_SEARCHED_OBJECTS,)).fetchall(), overall
        )
        return CatalogColumns(tuple(entries), total.fetchone()[0]), keepable
    grouped: dict[tuple[str, str], list[Column]] = {}
    for name, kind, column, declared, notnull, default, pk in rows:
        columns = grouped.setdefault((name, kind), [])
        if column is not None:
            columns.append((column, declared or "", bool(notnull), default, bool(pk)))
    entries = tuple(Entry(name, kind, tuple(columns)) for (name, kind), columns in grouped.items())
    return CatalogColumns(entries, total.fetchone()[0]), True


def _one_by_one(
    connection: RemoteConnection, objects: list[tuple[str, str]], overall: Budget
) -> tuple[list[Entry], bool]:
    entries: list[Entry] = []
    keepable = True
    for name, kind in objects:
        remaining_ms = int((overall.deadline - time.monotonic()) * 1000)
        if remaining_ms <= 0:
            entries.append(Entry(name, kind, (), "not read: the search ran out of time before this object"))
            keepable = False
            continue
        connection.limit_to(Budget(min(OBJECT_SLICE_MS, remaining_ms)), overall)
        try:
            rows = connection.execute(
                'SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)', (name,)
            ).fetchall()
        except sqlite3.Error as error:
            entries.append(Entry(name, kind, (), object_problem(error)))
            continue
        finally:
            connection.limit_to(overall)
        columns = tuple((c, t or "", bool(nn), d, bool(pk)) for c, t, nn, d, pk in rows)
        entries.append(Entry(name, kind, columns))
    return entries, keepable


def _matcher(pattern: str | None, what: str) -> Callable[[str], bool] | None:
    if pattern is None or pattern == "":
        return None
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidArgument(
            f"The {what} is {len(pattern)} characters; at most {MAX_PATTERN_CHARS}.", next_step="Shorten it."
        )
    lowered = pattern.lower()
    if "*" in lowered or "?" in lowered:
        compiled = re.compile(fnmatch.translate(lowered), re.DOTALL)
        return lambda text: compiled.match(text.lower()) is not None
    return lambda text: lowered in text.lower()


def search(
    catalog: CatalogColumns,
    *,
    alias: str,
    pattern: str | None,
    column_type: str | None,
    detail: str,
    offset: int,
    max_chars: int,
    foreign_keys: Callable[[str], list[ForeignKeyInfo]],
) -> SchemaSearch:
    """The tables whose name, or one of whose columns, matches; a page of them at ``detail``."""
    if offset < 0:
        raise InvalidArgument("offset must be 0 or more.", next_step="Pass next_offset of the last reply.")
    name_matches = _matcher(pattern, "pattern")
    type_matches = _matcher(column_type, "column_type")
    found: list[tuple[Entry, bool, list[Column]]] = []
    for entry in catalog.entries:
        by_name = type_matches is None and (name_matches is None or name_matches(entry.name))
        columns = (
            [
                c
                for c in entry.columns
                if (name_matches is None or name_matches(c[0]))
                and (type_matches is None or type_matches(c[1]))
            ]
            if name_matches is not None or type_matches is not None
            else []
        )
        if by_name or columns:
            found.append((entry, by_name, columns))
    page = found[offset : offset + PAGE_TABLES[detail]]
    names: list[str] = []
    tables: list[SchemaMatch] = []
    used = 200
    shown = 0
    for entry, by_name, columns in page:
        if detail == "names":
            item: list[str] = ([cut_name(entry.name)] if by_name else []) + [
                f"{cut_name(entry.name)}.{cut_name(c[0])}" for c in columns
            ]
            size = sum(len(text) + 4 for text in item)
        else:
            match = _match(entry, by_name, columns, detail, foreign_keys)
            size = _size(match)
            if used + size > max_chars and not shown:  # one table too wide for a reply: its first columns
                match, size = _cut(match, max_chars - used)
        if used + size > max_chars and shown:
            break
        used += size
        shown += 1
        if detail == "names":
            names.extend(item)
        else:
            tables.append(match)
    following = offset + shown
    more = following < len(found)
    notes = []
    if more:
        notes.append(
            f"Showing tables {offset + 1}–{following} of {len(found)}; pass offset={following} for more."
        )
    if catalog.total > len(catalog.entries):
        notes.append(
            f"Only the first {len(catalog.entries)} of {catalog.total} tables and views were searched "
            "(tables first, by name); query sqlite_master for the rest."
        )
    if found and len(found) > PAGE_TABLES[detail] and detail != "names":
        notes.append("Narrow with a pattern, or use detail='names' to see more at once.")
    return SchemaSearch(
        database=alias,
        detail=detail,  # type: ignore[arg-type]
        names=names if detail == "names" else None,
        tables=tables if detail != "names" else None,
        total=len(found),
        offset=offset,
        next_offset=following if more else None,
        note=" ".join(notes) or None,
    )


def _size(match: SchemaMatch) -> int:
    return len(json.dumps(match.model_dump(exclude_none=True), default=str))


def _cut(match: SchemaMatch, room: int) -> tuple[SchemaMatch, int]:
    every = len(match.column_details or [])
    for field in ("column_details", "columns", "foreign_keys"):
        items = getattr(match, field)
        while items and _size(match) > room:
            items = items[: len(items) // 2]
            match = match.model_copy(update={field: items})
    kept = len(match.column_details or [])
    if kept < every:
        match = match.model_copy(
            update={
                "problem": f"Only the first {kept} of {every} columns fit one reply; describe_table or "
                f"SELECT * FROM pragma_table_info('{match.name}') reads them all."
            }
        )
    return match, _size(match)


def foreign_keys(connection: RemoteConnection, table: str) -> list[ForeignKeyInfo]:
    """A table's foreign keys, as describe_table shows them."""
    grouped: dict[int, ForeignKeyInfo] = {}
    rows = connection.execute(
        'SELECT id, "from", "table", "to", on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq',
        (table,),
    ).fetchall()
    for key_id, source, target, target_column, on_delete in rows:
        key = grouped.setdefault(
            key_id,
            ForeignKeyInfo(
                columns=[],
                referred_table=cut_name(target) or "",
                referred_columns=[],
                on_delete=None if on_delete in (None, "NO ACTION") else on_delete,
            ),
        )
        key.columns.append(cut_name(source) or "")
        if target_column:
            key.referred_columns.append(cut_name(target_column) or "")
    return list(grouped.values())


def _match(
    entry: Entry,
    by_name: bool,
    columns: list[Column],
    detail: str,
    foreign_keys: Callable[[str], list[ForeignKeyInfo]],
) -> SchemaMatch:
    kind = "view" if entry.type == "view" else "table"
    if detail == "summary":
        listed = columns or (list(entry.columns) if by_name else [])
        shown = [f"{cut_name(c[0])} {cut_name(c[1])}".rstrip() for c in listed[:SUMMARY_COLUMNS]]
        if len(listed) > SUMMARY_COLUMNS:
            shown.append(f"…{len(listed) - SUMMARY_COLUMNS} more (detail='full' lists them all)")
        return SchemaMatch(
            name=cut_name(entry.name) or "",
            type=kind,
            column_count=len(entry.columns),
            columns=shown,
            problem=entry.problem,
        )
    details = [
        ColumnInfo(
            name=cut_name(c[0]) or "",
            type=cut_name(c[1]) or "",
            nullable=not c[2],
            default=cut_name(c[3]),
            primary_key=c[4],
        )
        for c in entry.columns
    ]
    return SchemaMatch(
        name=cut_name(entry.name) or "",
        type=kind,
        column_count=len(entry.columns),
        columns=[f"{cut_name(c[0])}" for c in columns] if columns else None,
        column_details=details,
        foreign_keys=foreign_keys(entry.name) if kind == "table" and not entry.problem else [],
        problem=entry.problem,
    )
