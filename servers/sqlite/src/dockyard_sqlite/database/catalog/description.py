"""One table or view described: its columns, keys, indexes, DDL, row count and sample rows, sharing one
reply."""

from __future__ import annotations

import sqlite3
from typing import TypeVar

from pydantic import BaseModel

from ...models import ColumnInfo, ForeignKeyInfo, IndexInfo, TableDescription
from ...settings import Limits
from ...workers.connection import RemoteConnection
from ..connection import Budget, quote_identifier
from .listing import OBJECT_SLICE_MS, count_rows, object_problem, volatile
from .names import LONG_NAMES_NOTE, MAX_NAME_CHARS, cut_name, resolve, sql_literal

__all__ = ["describe"]

T = TypeVar("T", bound=BaseModel)


def describe(
    connection: RemoteConnection, name: str, *, alias: str, limits: Limits, budget: Budget
) -> tuple[TableDescription, bool]:
    """Columns, keys, indexes, DDL, row count and sample rows of one table or view, in a handful of index
    lookups and one count. Keepable unless the count was cut short or a view's rows change call to call."""
    table, kind = resolve(connection, name, alias=alias)
    # Sent together, read together: one wait for the worker for all four look-ups.
    info_rows = connection.execute(
        'SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)', (table,), prefetch=True
    )
    key_rows = connection.execute(
        'SELECT id, "from", "table", "to", on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq',
        (table,),
        prefetch=True,
    )
    index_rows = connection.execute(
        'SELECT il.name, il."unique", il.origin, ii.name FROM pragma_index_list(?) AS il '
        "LEFT JOIN pragma_index_info(il.name) AS ii ORDER BY il.seq, ii.seqno",
        (table,),
        prefetch=True,
    )
    ddl_rows = connection.execute(
        "SELECT substr(sql, 1, ?), length(sql) FROM sqlite_master WHERE name = ?",
        (limits.max_chars // 4, table),
        prefetch=True,
    )
    info, keys, row = info_rows.fetchall(), key_rows.fetchall(), ddl_rows.fetchone()
    by_index: dict[str, IndexInfo] = {}
    for index_name, unique, origin, column in index_rows.fetchall():
        if origin == "pk":
            continue
        index = by_index.setdefault(
            index_name,
            IndexInfo(name=cut_name(index_name) if origin == "c" else None, columns=[], unique=bool(unique)),
        )
        if column:
            index.columns.append(cut_name(column))
    indexes = list(by_index.values())
    problem, stopped_by = None, None
    try:
        cursor = connection.execute(f"SELECT * FROM {quote_identifier(table)} LIMIT ?", (limits.sample_rows,))
        sample, _, stopped_by = cursor.read_page(
            limits.sample_rows, max_chars=limits.max_chars // 4, max_cell_chars=limits.max_cell_chars
        )
        count, exact = count_rows(connection, table, kind, OBJECT_SLICE_MS, budget)
    except sqlite3.Error as error:  # a generated column or view calling a function this server lacks
        problem = object_problem(error) + " (no sample rows; select the columns you need by name)"
        sample, count, exact = [], None, False
    keepable = count is not None and problem is None and not volatile(connection)
    create_sql = row[0] if row else None
    if create_sql is not None and row[1] > len(create_sql):
        create_sql += (
            f"…[cut: {row[1] - len(create_sql)} more characters; read them with query: "
            f"SELECT substr(sql, {len(create_sql) + 1}) FROM sqlite_master WHERE name = {sql_literal(table)}]"
        )
    columns = [
        ColumnInfo(
            name=cut_name(n),
            type=cut_name(t or ""),
            nullable=not notnull,
            default=cut_name(default),
            primary_key=bool(pk),
        )
        for n, t, notnull, default, pk in info
    ]
    grouped: dict[int, ForeignKeyInfo] = {}
    for key_id, source, target, target_column, on_delete in keys:
        entry = grouped.setdefault(
            key_id,
            ForeignKeyInfo(
                columns=[],
                referred_table=cut_name(target),
                referred_columns=[],
                on_delete=None if on_delete in (None, "NO ACTION") else on_delete,
            ),
        )
        entry.columns.append(cut_name(source))
        if target_column:
            entry.referred_columns.append(cut_name(target_column))
    # Columns, keys and indexes share half a reply; the DDL and the sample rows a quarter each.
    room = limits.max_chars // 2
    shown_columns, used = _fit(columns, room)
    shown_keys, used_by_keys = _fit(list(grouped.values()), room - used)
    shown_indexes, _ = _fit(sorted(indexes, key=lambda ix: ix.name or ""), room - used - used_by_keys)
    notes = [
        f"Only the first {len(shown)} of {len(every)} {what} fit one reply; read them all with query: "
        f"SELECT * FROM {pragma}({sql_literal(table)})."
        for shown, every, what, pragma in (
            (shown_columns, columns, "columns", "pragma_table_info"),
            (shown_keys, grouped, "foreign keys", "pragma_foreign_key_list"),
            (shown_indexes, indexes, "indexes", "pragma_index_list"),
        )
        if len(shown) < len(every)
    ]
    if stopped_by == "too_wide":
        notes.append(
            "Sample rows are left out: one row is too wide for a reply; query chosen columns instead."
        )
    if len(table) > MAX_NAME_CHARS:
        notes.append(LONG_NAMES_NOTE)
    description = TableDescription(
        database=alias,
        name=cut_name(table),
        type=kind,
        columns=shown_columns,
        foreign_keys=shown_keys,
        indexes=shown_indexes,
        create_sql=create_sql,
        row_count=count,
        row_count_exact=exact,
        sample_rows=sample,
        note=" ".join(notes) or None,
        problem=problem,
    )
    return description, keepable


def _fit(items: list[T], max_chars: int) -> tuple[list[T], int]:
    """The leading ``items`` whose JSON fits in ``max_chars``, and the characters they take."""
    kept: list[T] = []
    used = 0
    for item in items:
        size = len(item.model_dump_json()) + 1
        if used + size > max_chars:
            break
        kept.append(item)
        used += size
    return kept, used
