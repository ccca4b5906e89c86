"""What a database holds: its tables and views, their columns, keys, indexes, DDL and row counts.

Read one way only: ``sqlite_master`` and the ``pragma_*`` table-valued functions, on a guarded connection
the caller checked out (so under its budget, with its authorizer log). Bounded like every reply: the
listing by :data:`MAX_LISTED_TABLES`, the DDL by the page budget, a count by its own time slice, each
with a note saying how to get the rest.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel

from dockyard_shared import NotFound, bound_text, did_you_mean

from ..catalog_cache import VOLATILE_FUNCTIONS
from ..executor import OutOfMemory, StatementStopped, WorkerDied
from ..models import ColumnInfo, ForeignKeyInfo, IndexInfo, TableDescription, TableSummary
from ..settings import Limits
from .connection import Budget, GuardedConnection, quote_identifier, quote_literal
from .errors import ColumnsNearby

__all__ = [
    "EXACT_COUNT_UP_TO",
    "MAX_LISTED_TABLES",
    "MAX_NAME_CHARS",
    "TableListing",
    "columns_nearby",
    "count_rows",
    "describe",
    "listing",
    "resolve",
    "scan_notes",
    "schema_ddl",
    "table_names",
    "volatile",
]

T = TypeVar("T", bound=BaseModel)

# list_tables lists at most this many tables and views (about 50 KB of JSON), and says so.
MAX_LISTED_TABLES = 500
# A column hint looks at the tables the statement names; when it names none it knows (a CTE, a
# typo), at the first this many tables of the catalog.
HINT_TABLES = 200
# Above this many rows (judged by the largest rowid) a count is reported as an estimate: counting
# a large table reads all of it, the estimate costs one index seek.
EXACT_COUNT_UP_TO = 200_000
# How long one object's count, or the compile of one view for its columns, may take in a listing.
OBJECT_SLICE_MS = 200
# How much of SQLite's message an object's problem repeats.
_PROBLEM_CHARS = 300

# A name, type or default longer than this is shown cut, so a reply stays bounded whatever the schema holds.
MAX_NAME_CHARS = 1_000

_USER_OBJECTS = "type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'"


@dataclass(frozen=True)
class TableListing:
    """At most :data:`MAX_LISTED_TABLES` tables and views, and whether more exist."""

    tables: list[TableSummary]
    total: int
    truncated: bool
    note: str | None = None


def resolve(connection: GuardedConnection, name: str, *, alias: str) -> tuple[str, str]:
    """The catalog's own spelling of ``name`` (exact, else any case) and whether it is a table or a view."""
    catalog = connection.execute(
        f"SELECT name, type FROM sqlite_master WHERE {_USER_OBJECTS}", prefetch=True
    ).fetchall()
    for matches in (lambda c: c == name, lambda c: c.lower() == name.lower()):
        for candidate, kind in catalog:
            if matches(candidate):
                return candidate, kind
    raise NotFound(
        f"There is no table or view named {name!r} in database {alias!r}.",
        next_step=did_you_mean(name, [c for c, _ in catalog], kind="table")
        + " Call list_tables to see them all.",
    )


def table_names(connection: GuardedConnection, prefix: str = "", limit: int | None = None) -> list[str]:
    """Names of tables and views starting with ``prefix`` (any case), by name, without counting rows."""
    wanted = prefix.lower()
    names: list[str] = []
    for (name,) in connection.execute(f"SELECT name FROM sqlite_master WHERE {_USER_OBJECTS} ORDER BY name"):
        if name.lower().startswith(wanted):
            names.append(name)
            if limit is not None and len(names) >= limit:
                break
    return names


def listing(
    connection: GuardedConnection, limit: int, overall: Budget, max_chars: int
) -> tuple[TableListing, bool]:
    """Tables first, then views, by name: at most ``limit`` of them and ``max_chars`` characters of JSON,
    counted within ``overall``.

    Each count may take 200 ms and all of them together the statement time limit; a table left
    uncounted has row_count None. An object SQLite cannot read here (a view calling a function this
    server does not provide, one too costly to compile) is listed with its ``problem``, and the others
    are listed as usual. Keepable (in the catalog cache) unless a count was cut short, an object could
    not be read, or a view counted differently from call to call.
    """
    total = connection.execute(f"SELECT count(*) FROM sqlite_master WHERE {_USER_OBJECTS}").fetchone()[0]
    listed = f"SELECT name, type FROM sqlite_master WHERE {_USER_OBJECTS} ORDER BY type, name LIMIT ?"
    try:
        # The column count is computed for the listed rows only, not for the whole catalog.
        catalog = connection.execute(
            f"SELECT name, type, (SELECT count(*) FROM pragma_table_info(m.name)) FROM ({listed}) AS m "
            "ORDER BY type, name",
            (limit,),
        ).fetchall()
        problems: dict[str, str] = {}
    except sqlite3.Error:  # one object cannot be read: find which, one at a time
        catalog, problems = _columns_one_by_one(
            connection, connection.execute(listed, (limit,)).fetchall(), overall
        )
    summaries = []
    uncounted = 0
    size = 0
    for name, kind, columns in catalog:
        size += len(name) + 90  # a summary's JSON, its counts at their longest
        if size > max_chars:
            break
        remaining_ms = int((overall.deadline - time.monotonic()) * 1000)
        if name in problems:
            count, exact = None, False
        elif remaining_ms > 0:
            count, exact = count_rows(connection, name, kind, min(OBJECT_SLICE_MS, remaining_ms), overall)
        else:
            count, exact = None, False
            uncounted += 1
        summaries.append(
            TableSummary.model_construct(
                name=cut_name(name),
                type=kind,
                row_count=count,
                row_count_exact=exact,
                column_count=columns,
                problem=problems.get(name),
            )
        )
    # A table left uncounted has row_count None too.
    keepable = all(s.row_count is not None for s in summaries) and not volatile(connection)
    notes = []
    if total > len(summaries):
        notes.append(
            f"Only the first {len(summaries)} of {total} tables and views are listed (tables first, "
            "then views, by name). Find others with query, e.g. SELECT name, type FROM sqlite_master "
            "WHERE type IN ('table', 'view') AND name LIKE 'prefix%'; describe_table works on any of them."
        )
    if problems:
        notes.append(
            f"{len(problems)} of the objects listed cannot be read here; each one's problem says why. "
            "The others can be queried as usual."
        )
    if uncounted:
        notes.append(
            f"Counting rows stopped at the {overall.timeout_ms} ms time limit: row_count is null for "
            f"{uncounted} tables; describe_table counts one."
        )
    if any(len(name) > MAX_NAME_CHARS for name, _, _ in catalog[: len(summaries)]):
        notes.append(_LONG_NAMES)
    found = TableListing(
        tables=summaries, total=total, truncated=total > len(summaries), note=" ".join(notes) or None
    )
    return found, keepable


def _columns_one_by_one(
    connection: GuardedConnection, objects: list[tuple[str, str]], overall: Budget
) -> tuple[list[tuple[str, str, int | None]], dict[str, str]]:
    """Each object's column count, each under a slice of its own: (name, type, count) rows, and what is
    wrong with the objects SQLite cannot read."""
    catalog: list[tuple[str, str, int | None]] = []
    problems: dict[str, str] = {}
    for name, kind in objects:
        remaining_ms = int((overall.deadline - time.monotonic()) * 1000)
        if remaining_ms <= 0:
            problems[name] = "not read: the listing ran out of time before this object"
            catalog.append((name, kind, None))
            continue
        connection.limit_to(Budget(min(OBJECT_SLICE_MS, remaining_ms)), overall)
        try:
            count = connection.execute("SELECT count(*) FROM pragma_table_info(?)", (name,)).fetchone()[0]
        except sqlite3.Error as error:
            problems[name] = object_problem(error)
            catalog.append((name, kind, None))
            continue
        finally:
            connection.limit_to(overall)
        catalog.append((name, kind, count))
    return catalog, problems


def object_problem(error: sqlite3.Error) -> str:
    """What is wrong with a table or view SQLite cannot read, in a phrase for a listing."""
    if isinstance(error, (OutOfMemory, WorkerDied)):
        return "SQLite cannot compile it here: it needs more memory than one statement may use"
    if isinstance(error, StatementStopped) or "interrupted" in str(error):
        return f"SQLite cannot compile it here: compiling it takes longer than {OBJECT_SLICE_MS} ms"
    message = str(error)
    if len(message) > _PROBLEM_CHARS:
        message = message[:_PROBLEM_CHARS] + "…"
    return f"SQLite cannot read it here: {message}"


def count_rows(
    connection: GuardedConnection, name: str, kind: str, timeout_ms: int, outer: Budget
) -> tuple[int | None, bool]:
    """Rows of one table (an estimate above :data:`EXACT_COUNT_UP_TO`), under a budget of its own;
    ``outer``, the caller's, is put back afterwards. None when the count ran out of time."""
    quoted = quote_identifier(name)
    connection.limit_to(Budget(timeout_ms), outer)
    try:
        if kind == "table":
            try:
                largest = connection.execute(f"SELECT max(rowid) FROM {quoted}").fetchone()[0]
            except sqlite3.OperationalError as error:
                if "interrupted" in str(error):
                    return None, False
                largest = None  # WITHOUT ROWID tables have no rowid: count them
            if largest is not None and largest > EXACT_COUNT_UP_TO:
                return int(largest), False
        return connection.execute(f"SELECT count(*) FROM {quoted}").fetchone()[0], True
    except sqlite3.OperationalError as error:
        if "interrupted" in str(error) or isinstance(error, (OutOfMemory, WorkerDied)):
            return None, False
        raise
    finally:
        connection.limit_to(outer)


def describe(
    connection: GuardedConnection, name: str, *, alias: str, limits: Limits, budget: Budget
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
            f"SELECT substr(sql, {len(create_sql) + 1}) FROM sqlite_master WHERE name = {_literal(table)}]"
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
        f"SELECT * FROM {pragma}({_literal(table)})."
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
        notes.append(_LONG_NAMES)
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


def schema_ddl(connection: GuardedConnection, *, alias: str, max_chars: int) -> str:
    """Every CREATE statement, tables first, up to ``max_chars`` and a note past it."""
    parts: list[str] = []
    size = 0
    complete = True
    cursor = connection.execute(
        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
        "ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'view' THEN 1 WHEN 'index' THEN 2 ELSE 3 END, name"
    )
    for (statement,) in cursor:  # streamed: stop reading once the budget is spent
        if size > max_chars:
            complete = False
            break
        parts.append(f"{statement};")
        size += len(parts[-1]) + 2
    text = "\n\n".join(parts) + "\n"
    if complete and len(text) <= max_chars:
        return text
    total = (
        len(parts)
        if complete
        else connection.execute(
            "SELECT count(*) FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
        ).fetchone()[0]
    )
    cut = bound_text(text, max_chars).text
    whole, end = 0, 0
    for part in parts:  # statements shown in full
        end += len(part)
        if end > len(cut):
            break
        whole += 1
        end += 2  # the blank line between statements
    partly = (
        ""
        if whole == len(parts) or end - len(parts[whole]) >= len(cut)
        else ", and the start of the next one"
    )
    return (
        cut.rstrip("\n")
        + f"\n\n-- Truncated: the schema is larger than one reply ({max_chars:,} characters). Shown: the "
        f"first {whole} of {total} CREATE statements in full{partly} (tables first, then views, indexes, "
        "triggers). Call list_tables to see every table, and describe_table (or read "
        f"sqlite://{alias}/tables/NAME) for one table's CREATE statement, columns and indexes.\n"
    )


def columns_nearby(connection: GuardedConnection, sql: str | None) -> ColumnsNearby:
    """The tables ``sql`` names and their columns; when it names none the catalog knows, the columns
    of its first :data:`HINT_TABLES` tables."""
    catalog = table_names(connection)
    by_name = {name.lower(): name for name in catalog}
    named = list(dict.fromkeys(by_name[w] for w in _identifiers(sql or "") if w in by_name))
    tables = named or catalog[:HINT_TABLES]
    columns = {
        table: [r[0] for r in connection.execute("SELECT name FROM pragma_table_info(?)", (table,))]
        for table in tables
    }
    return named, columns


def scan_notes(connection: GuardedConnection, details: Sequence[str], sql: str) -> list[str]:
    """For each full table scan in a plan: the referenced, unindexed column an index would help on."""
    notes = []
    words = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql)}
    tables = {
        name
        for (name,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    }
    for detail in details:
        match = re.match(r"SCAN (\S+)(?: AS \S+)?$", detail)
        if not match or match.group(1) not in tables:
            continue
        table = match.group(1)
        # The leading column of every index (UNIQUE constraints' own included), and the primary key.
        indexed = {
            name
            for (name,) in connection.execute(
                "SELECT ii.name FROM pragma_index_list(?) AS il, pragma_index_info(il.name) AS ii "
                "WHERE ii.seqno = 0 AND ii.name IS NOT NULL "
                "UNION SELECT name FROM pragma_table_info(?) WHERE pk > 0",
                (table, table),
            )
        }
        candidates = [
            name
            for (name,) in connection.execute(
                "SELECT name FROM pragma_table_xinfo(?) WHERE hidden != 1 ORDER BY cid", (table,)
            )
            if name.lower() in words and name not in indexed
        ]
        shown = cut_name(table)
        if candidates:
            listed = ", ".join(cut_name(c) or "" for c in candidates[:10])
            more = f" and {len(candidates) - 10} more" if len(candidates) > 10 else ""
            notes.append(
                f"Full scan of {shown}: an index on {shown}({cut_name(candidates[0])}) would avoid it if that "
                f"column filters or joins here (referenced, unindexed: {listed}{more})."
            )
        else:
            notes.append(
                f"Full scan of {shown}: expected when every row is needed; no unindexed filter column found."
            )
    return notes


def volatile(connection: GuardedConnection) -> bool:
    """Whether a statement on this checkout called a function whose result can change while the file does
    not (a view using random() or datetime('now')): such an answer is not kept in the catalog cache."""
    return any(
        action == sqlite3.SQLITE_FUNCTION and (name or "").lower() in VOLATILE_FUNCTIONS
        for action, name in connection.auth_log.actions
    )


_IDENTIFIER = re.compile(r'"((?:[^"]|"")+)"|`([^`]+)`|\[([^\]]+)\]|([^\W\d][\w$]*)')


def _identifiers(sql: str) -> Iterator[str]:
    """Every identifier-like word of ``sql``, unquoted and lower-cased (string literals included)."""
    for match in _IDENTIFIER.finditer(sql):
        quoted, backticked, bracketed, bare = match.groups()
        word = quoted.replace('""', '"') if quoted is not None else backticked or bracketed or bare
        yield word.lower()


_LONG_NAMES = (
    f"Names longer than {MAX_NAME_CHARS:,} characters are cut; read them whole with query: "
    f"SELECT name FROM sqlite_master WHERE length(name) > {MAX_NAME_CHARS}."
)


def cut_name(text: str | None) -> str | None:
    """``text`` as a reply shows a name, type or default: whole up to :data:`MAX_NAME_CHARS` characters."""
    if text is None or len(text) <= MAX_NAME_CHARS:
        return text
    return text[:MAX_NAME_CHARS] + f"…[cut: {len(text) - MAX_NAME_CHARS} more characters]"


def _literal(name: str) -> str:
    """``name`` as an SQL literal for a note, or a placeholder when it is too long to repeat."""
    return quote_literal(name) if len(name) <= MAX_NAME_CHARS else "'<the name>'"


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
