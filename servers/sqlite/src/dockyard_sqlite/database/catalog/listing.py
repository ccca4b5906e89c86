"""The tables and views of a database listed with their row and column counts, each count under a time
slice of its own, and what is wrong with an object SQLite cannot read here."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass

from ...catalog_cache import VOLATILE_FUNCTIONS
from ...models import TableSummary
from ...workers.connection import RemoteConnection
from ...workers.errors import OutOfMemory, StatementStopped, WorkerDied
from ..connection import Budget, quote_identifier
from .names import LONG_NAMES_NOTE, MAX_NAME_CHARS, USER_OBJECTS, cut_name

__all__ = [
    "EXACT_COUNT_UP_TO",
    "MAX_LISTED_TABLES",
    "OBJECT_SLICE_MS",
    "TableListing",
    "count_rows",
    "listing",
    "object_problem",
    "volatile",
]

# list_tables lists at most this many tables and views (about 50 KB of JSON), and says so.
MAX_LISTED_TABLES = 500
# Above this many rows (judged by the largest rowid) a count is reported as an estimate: counting
# a large table reads all of it, the estimate costs one index seek.
EXACT_COUNT_UP_TO = 200_000
# How long one object's count, or the compile of one view for its columns, may take in a listing.
OBJECT_SLICE_MS = 200
# How much of SQLite's message an object's problem repeats.
_PROBLEM_CHARS = 300


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

    Each count may take 200 ms and all of them together the statement time limit; a table left
    uncounted has row_count None. An object SQLite cannot read here (a view calling a function this
    server does not provide, one too costly to compile) is listed with its ``problem``, and the others
    are listed as usual. Keepable (in the catalog cache) unless a count was cut short, an object could
    not be read, or a view counted differently from call to call.
    """
    total = connection.execute(f"SELECT count(*) FROM sqlite_master WHERE {USER_OBJECTS}").fetchone()[0]
    listed = f"SELECT name, type FROM sqlite_master WHERE {USER_OBJECTS} ORDER BY type, name LIMIT ?"
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
        notes.append(LONG_NAMES_NOTE)
    found = TableListing(
        tables=summaries, total=total, truncated=total > len(summaries), note=" ".join(notes) or None
    )
    return found, keepable


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
