"""The tables and views of a database listed with their row and column counts, each count under a time
slice of its own, and what is wrong with an object SQLite cannot read here."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from typing import Literal

from dockyard_shared.words import plural

from ...catalog_cache import VOLATILE_FUNCTIONS
from ...models import TableSummary
from ...workers.connection import RemoteConnection
from ...workers.errors import OutOfMemory, StatementStopped, WorkerDied
from ..connection import Budget, quote_identifier
from .names import LONG_NAMES_NOTE, MAX_NAME_CHARS, USER_OBJECTS, cut_name

__all__ = [
    "EXACT_COUNT_UP_TO",
    "LISTED_EXACT_UP_TO",
    "MAX_LISTED_TABLES",
    "OBJECT_SLICE_MS",
    "CountKind",
    "TableListing",
    "count_rows",
    "count_tables",
    "listing",
    "object_problem",
    "volatile",
]

# list_tables lists at most this many tables and views (about 50 KB of JSON), and says so.
MAX_LISTED_TABLES = 500
# describe_table: above this many rows (judged by the largest rowid) a count is reported as an
# estimate: counting a large table reads all of it, the estimate costs one index seek.
EXACT_COUNT_UP_TO = 200_000
# list_tables counts a table's rows exactly when its rowids span fewer values than this; above, it gives
# the span as an estimate. So a listing after a write costs a bounded amount per table, never a read of
# every row: measured 11 µs a table of 200 rows, 40 µs one of 5,000, 8 µs for the two rowid seeks.
LISTED_EXACT_UP_TO = 10_000
# Tables counted by one statement (SQLite allows 500 parts in a compound SELECT), and its size.
_BATCH_TABLES = 100
_BATCH_SQL_CHARS = 1_000_000
# How long one object's count, or the compile of one view for its columns, may take in a listing.
OBJECT_SLICE_MS = 200
# How much of SQLite's message an object's problem repeats.
_PROBLEM_CHARS = 300


# How a listed row count was found (TableSummary.row_count_is).
CountKind = Literal["exact", "estimate", "at least", "not counted"]


@dataclass(frozen=True)
class TableListing:
    """At most :data:`MAX_LISTED_TABLES` tables and views, and whether more exist."""

    tables: list[TableSummary]
    total: int
    truncated: bool
    note: str | None = None


def listing(
    connection: RemoteConnection, limit: int, overall: Budget, max_chars: int
) -> tuple[TableListing, bool]:
    """Tables first, then views, by name: at most ``limit`` of them and ``max_chars`` characters of JSON,
    counted within ``overall``.

    Counting costs at most :data:`LISTED_EXACT_UP_TO` rows a table, whatever the database holds (see
    :func:`count_tables`), each view under a 200 ms slice of its own, and all of it the statement time
    limit; each summary says which kind of count it carries (``row_count_is``). An object SQLite cannot
    read here (a view calling a function this server does not provide, one too costly to compile) is
    listed with its ``problem``, and the others are listed as usual. Keepable (in the catalog cache)
    unless something was left uncounted or a view counted differently from call to call.
    """
    # Sent together, read together: one wait for the worker.
    total_rows = connection.execute(f"SELECT count(*) FROM sqlite_master WHERE {USER_OBJECTS}", prefetch=True)
    # How each table's rowid is reached: its name may be taken by a column (where max(rowid) would read
    # every row), and WITHOUT ROWID tables have none. Only tables whose DDL mentions one are looked at.
    rowid_rows = connection.execute(
        "SELECT name, sql LIKE '%without%rowid%', (SELECT group_concat(lower(c.name), ' ') "
        "FROM pragma_table_info(m.name) AS c WHERE lower(c.name) IN ('rowid', '_rowid_', 'oid')) "
        "FROM sqlite_master AS m WHERE type = 'table' AND (sql LIKE '%rowid%' OR sql LIKE '%oid%')",
        prefetch=True,
    )
    listed = f"SELECT name, type FROM sqlite_master WHERE {USER_OBJECTS} ORDER BY type, name LIMIT ?"
    try:
        # The column count is computed for the listed rows only, not for the whole catalog.
        catalog = connection.execute(
            f"SELECT name, type, (SELECT count(*) FROM pragma_table_info(m.name)) FROM ({listed}) AS m "
            "ORDER BY type, name",
            (limit,),
            prefetch=True,
        ).fetchall()
        problems: dict[str, str] = {}
        looked_up = True
    except sqlite3.Error:  # one object cannot be read: find which, one at a time
        looked_up = False
        catalog, problems = _columns_one_by_one(
            connection, connection.execute(listed, (limit,)).fetchall(), overall
        )
    total = total_rows.fetchone()[0]
    if not looked_up:  # which look-up failed is not known: count every table without its rowid (bounded)
        rowids: dict[str, str | None] = {name: None for name, kind, _ in catalog if kind == "table"}
    else:
        rowids = {name: _rowid_name(bool(without), taken) for name, without, taken in rowid_rows.fetchall()}
    shown: list[tuple[str, str, int | None]] = []
    size = 0
    for entry in catalog:
        size += len(entry[0]) + 110  # a summary's JSON, its counts at their longest
        if size > max_chars:
            break
        shown.append(entry)
    readable = [(name, kind) for name, kind, _ in shown if name not in problems]
    counts = count_tables(connection, [n for n, k in readable if k == "table"], rowids, overall)
    for name, kind in readable:
        remaining_ms = int((overall.deadline - time.monotonic()) * 1000)
        if kind == "view" and remaining_ms > 0:
            counts[name] = _count_bounded(connection, name, min(OBJECT_SLICE_MS, remaining_ms), overall)
    summaries = []
    for name, kind, columns in shown:
        count, count_is = counts.get(name, (None, "not counted"))
        summaries.append(
            TableSummary.model_construct(
                name=cut_name(name),
                type=kind,
                row_count=count,
                row_count_is=count_is,
                column_count=columns,
                problem=problems.get(name),
            )
        )
    keepable = all(s.row_count_is != "not counted" for s in summaries) and not volatile(connection)
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
    uncounted = sum(1 for s in summaries if s.row_count_is == "not counted" and s.problem is None)
    if uncounted:
        notes.append(
            f"row_count is null for {plural(uncounted, 'object')}: counting stopped at the {overall.timeout_ms} ms "
            "time limit (or SQLite could not read them here); describe_table counts one."
        )
    if any(s.row_count_is in ("estimate", "at least") for s in summaries):
        notes.append(f"Counts over {LISTED_EXACT_UP_TO:,} rows are not exact; describe_table counts exactly.")
    if any(len(name) > MAX_NAME_CHARS for name, _, _ in shown):
        notes.append(LONG_NAMES_NOTE)
    found = TableListing(
        tables=summaries, total=total, truncated=total > len(summaries), note=" ".join(notes) or None
    )
    return found, keepable


def count_tables(
    connection: RemoteConnection, names: list[str], rowids: dict[str, str | None], overall: Budget
) -> dict[str, tuple[int | None, CountKind]]:
    """Each table's rows, at a bounded cost: exact when its rowids span fewer than
    :data:`LISTED_EXACT_UP_TO` values (``count(*)``, which counts cells page by page), else the span as
    an estimate (two index seeks). A table without a usable rowid (``rowids[name]`` None: WITHOUT ROWID,
    or every alias taken by a column) is counted up to one row past the bound, exact or a lower bound.

    :data:`_BATCH_TABLES` tables a statement, one wait for the worker each. A batch SQLite refuses (a
    table it cannot read here) is counted table by table; one stopped by the time limit leaves its
    tables and the rest uncounted.
    """
    counted: dict[str, tuple[int | None, CountKind]] = {}
    for batch in _batches(names):
        if overall.expired():
            break
        ranges = []
        for index, name in enumerate(batch):
            quoted = quote_identifier(name)
            rowid = rowids.get(name, "rowid")
            ranges.append(
                f"SELECT {index}, NULL, NULL, ({_bounded_count(quoted)})"
                if rowid is None
                else f"SELECT {index}, (SELECT min({rowid}) FROM {quoted}), (SELECT max({rowid}) FROM {quoted}), NULL"
            )
        try:
            rows = connection.execute(" UNION ALL ".join(ranges), prefetch=True).fetchall()
            # Then count(*), which counts cells page by page, where the range bounds the rows.
            small = [i for i, low, high, _ in rows if high is not None and high - low < LISTED_EXACT_UP_TO]
            exact = {}
            if small:
                counts = " UNION ALL ".join(
                    f"SELECT {i}, (SELECT count(*) FROM {quote_identifier(batch[i])})" for i in small
                )
                exact = dict(connection.execute(counts, prefetch=True).fetchall())
        except sqlite3.Error as error:
            if _stopped(error):
                break
            for name in batch:
                remaining_ms = int((overall.deadline - time.monotonic()) * 1000)
                if remaining_ms <= 0:
                    break
                counted[name] = _count_bounded(connection, name, min(OBJECT_SLICE_MS, remaining_ms), overall)
            continue
        for index, low, high, bounded in rows:
            empty = high is None and bounded is None
            counted[batch[index]] = _judged(low, high, 0 if empty else exact.get(index, bounded))
    return counted


def _rowid_name(without_rowid: bool, taken: str | None) -> str | None:
    """The first name of the rowid no column has taken; None when the table has no rowid to read."""
    if without_rowid:
        return None
    names = set((taken or "").split())
    return next((alias for alias in ("rowid", "_rowid_", "oid") if alias not in names), None)


def _bounded_count(quoted: str) -> str:
    return f"SELECT count(*) FROM (SELECT 1 FROM {quoted} LIMIT {LISTED_EXACT_UP_TO + 1})"


def _batches(names: list[str]) -> list[list[str]]:
    """``names`` in runs of at most :data:`_BATCH_TABLES` tables and :data:`_BATCH_SQL_CHARS` characters."""
    batches: list[list[str]] = []
    size = _BATCH_SQL_CHARS
    for name in names:
        if size + 2 * len(name) > _BATCH_SQL_CHARS or len(batches[-1]) >= _BATCH_TABLES:
            batches.append([])
            size = 0
        batches[-1].append(name)
        size += 2 * len(name) + 120
    return batches


def _judged(low: object, high: object, counted: object) -> tuple[int, CountKind]:
    """A count from the batch: (rowid range, count when exact or bounded)."""
    if isinstance(counted, int):
        if counted <= LISTED_EXACT_UP_TO:
            return counted, "exact"
        return counted, "at least"
    if isinstance(low, int) and isinstance(high, int):
        return high - low + 1, "estimate"
    return LISTED_EXACT_UP_TO + 1, "at least"  # a rowid range too wide for an integer


def _count_bounded(
    connection: RemoteConnection, name: str, timeout_ms: int, outer: Budget
) -> tuple[int | None, CountKind]:
    """One table's or view's rows, exact up to :data:`LISTED_EXACT_UP_TO` (a lower bound above), under a
    budget of its own; ``outer``, the caller's, is put back afterwards."""
    connection.limit_to(Budget(timeout_ms), outer)
    try:
        bounded = connection.execute(_bounded_count(quote_identifier(name)), prefetch=True).fetchone()[0]
    except sqlite3.Error:  # out of time, or unreadable here (its problem is found with its columns)
        return None, "not counted"
    finally:
        connection.limit_to(outer)
    return _judged(None, None, bounded)


def _stopped(error: sqlite3.Error) -> bool:
    return isinstance(error, (OutOfMemory, WorkerDied, StatementStopped)) or "interrupted" in str(error)


def _columns_one_by_one(
    connection: RemoteConnection, objects: list[tuple[str, str]], overall: Budget
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
    connection: RemoteConnection, name: str, kind: str, timeout_ms: int, outer: Budget
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


def volatile(connection: RemoteConnection) -> bool:
    """Whether a statement on this checkout called a function whose result can change while the file does
    not (a view using random() or datetime('now')): such an answer is not kept in the catalog cache."""
    return any(
        action == sqlite3.SQLITE_FUNCTION and (name or "").lower() in VOLATILE_FUNCTIONS
        for action, name in connection.auth_log.actions
    )
