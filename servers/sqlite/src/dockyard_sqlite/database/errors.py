"""What a SQLite error means for the model: each message → a problem category and a next step.

SQLite's messages are terse ("not authorized", "interrupted", "too big") and some only make sense with
what this server knows besides: which call the authorizer refused, whether the time limit or the client
stopped the statement, whether the database is served read-only. :func:`problem_for` puts them together.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Protocol

from dockyard_shared import (
    Conflict,
    InvalidArgument,
    LimitExceeded,
    NotFound,
    PermissionDenied,
    Problem,
    close_matches,
    did_you_mean,
)
from dockyard_shared.errors import scrub_paths

from ..safety import UNAVAILABLE_FUNCTIONS
from ..workers.errors import OutOfMemory, StatementStopped, WorkerDied
from .connection import MAX_LIKE_PATTERN_BYTES, MAX_VALUE_BYTES, Budget

__all__ = [
    "MAX_ERROR_ECHO_CHARS",
    "ColumnsNearby",
    "ErrorSource",
    "column_hint",
    "column_list",
    "problem_for",
]

# How much of SQLite's own message an error repeats (it may quote a whole statement).
MAX_ERROR_ECHO_CHARS = 1_000

# (the tables a statement names, in order; the columns of the tables looked at)
ColumnsNearby = tuple[list[str], dict[str, list[str]]]


class RefusalLog(Protocol):
    """What the authorizer refused first, in words (see :class:`..safety.AuthorizerLog`)."""

    @property
    def refused(self) -> str | None: ...


class ErrorSource(Protocol):
    """The database an error came from, and the catalog look-ups a next step may need."""

    alias: str
    path: Path
    writable: bool
    # The memory one worker process may use, and how much one call may grow the file (write mode).
    memory_per_statement_mb: int
    max_write_mb: int

    def known_tables(self) -> list[str]:
        """Every table and view name; empty when the catalog cannot be read."""
        ...

    def known_columns(self, sql: str | None) -> ColumnsNearby | None:
        """The tables ``sql`` names and their columns; None when the catalog cannot be read."""
        ...

    def index_advice(self, sql: str | None) -> list[str]:
        """``CREATE INDEX`` statements that would spare ``sql``'s full scans (from its plan, never run);
        empty when there are none or the plan cannot be read quickly."""
        ...


def problem_for(
    error: BaseException,
    source: ErrorSource,
    *,
    log: RefusalLog | None = None,
    budget: Budget | None = None,
    sql: str | None = None,
) -> Problem:
    """The problem to report for ``error``, raised on a connection whose authorizer kept ``log``
    (None when no connection was made) while running ``sql`` under ``budget``."""
    message = scrub_paths(str(error), [source.path.parent])
    if len(message) > MAX_ERROR_ECHO_CHARS:
        # SQLite quotes the text near a syntax error, which may be most of a huge statement.
        cut = len(message) - MAX_ERROR_ECHO_CHARS
        message = message[:MAX_ERROR_ECHO_CHARS] + f"…[{cut} more characters]"
    lowered = message.lower()
    if isinstance(error, (OutOfMemory, WorkerDied, MemoryError)):
        return LimitExceeded(
            f"The statement needed more memory than this server lets one statement use (about "
            f"{source.memory_per_statement_mb} MiB): a statement that takes very long to compile "
            "(deeply nested or repeated CTEs and views), a row of many large values, or a large "
            "value built in memory.",
            next_step="Simplify the statement (fewer nested CTEs), name only the columns you need, and "
            "read large values in pieces with substr(column, start, count) or length(column).",
        )
    if "interrupted" in lowered and budget is not None:
        if budget.cancelled.is_set():
            return LimitExceeded("The statement was cancelled by the client.", next_step="None needed.")
        how = (
            " inside one step — compiling it, or one function call on long values (trim, LIKE, "
            "instr, printf…) — so its worker process was stopped"
            if isinstance(error, StatementStopped)
            else ""
        )
        # Only where the time limit stopped it between steps: a statement killed inside one step may
        # be one whose compile is the problem, and planning it would compile it again.
        advice = source.index_advice(sql) if not isinstance(error, StatementStopped) else []
        index = (
            f" The plan reads whole tables; an index would help: {'; '.join(advice[:3])} (for the "
            "operator to create: this server never does)."
            if advice
            else ""
        )
        return LimitExceeded(
            f"The statement ran longer than the {budget.timeout_ms} ms limit and was stopped{how} "
            "(a runaway recursive CTE, a cross join, a scan of a very large table, or costly "
            "functions on long values).",
            next_step="Add a LIMIT or a narrower WHERE, make sure a recursive CTE terminates, "
            "work on shorter values (substr), or check the plan with explain_query."
            f"{index} If the statement is right and the data is simply large, ask the user to restart "
            f"the server with a higher {budget.flag} (now {budget.timeout_ms}).",
        )
    unavailable = _unavailable_function(lowered, log)
    if unavailable is not None:
        return unavailable
    if "not authorized" in lowered or "authorization denied" in lowered or "too many attached" in lowered:
        what = (
            log.refused if log is not None else None
        ) or "ATTACH or VACUUM INTO (reaching another database file)"
        mode = "this read-only connection" if log is None or not source.writable else "this server"
        return PermissionDenied(
            f"{what} is not allowed on {mode}.",
            next_step=(
                "Use query for SELECT/WITH/VALUES/EXPLAIN statements only."
                if not source.writable
                else "Only plain INSERT/UPDATE/DELETE and table DDL are allowed; ATTACH, VACUUM INTO, "
                "extensions, transaction control, PRAGMA writes and TEMP tables, views and triggers "
                "never are."
            ),
        )
    if "readonly database" in lowered or "read-only" in lowered:
        return PermissionDenied(
            "This database is served read-only; the statement tried to write.",
            next_step="Use query for reads. Writes need the server started with --allow-write (ask the user).",
        )
    if "database or disk is full" in lowered and source.writable:
        return LimitExceeded(
            f"The statement would grow the database file by more than {source.max_write_mb} MiB, this "
            "server's limit for one call (--max-write-mb). Nothing was changed.",
            next_step="Write less per call: split the INSERT or UPDATE into smaller ranges of rows.",
        )
    if "unsafe use of" in lowered:
        return PermissionDenied(
            f"A view, trigger, generated column or index of this database calls a function this server "
            f"does not run from the schema ({message}).",
            next_step="Leave that object out: select from the tables underneath, or the other columns by name.",
        )
    if "pattern too complex" in lowered:
        return LimitExceeded(
            f"A LIKE or GLOB pattern is longer than {MAX_LIKE_PATTERN_BYTES} bytes, this server's limit: "
            "one LIKE against a long text cannot be stopped by the time limit, and its cost grows "
            "with the pattern's length.",
            next_step="Shorten the pattern, or match a long literal with = or instr(column, 'text') > 0.",
        )
    if "one statement at a time" in lowered:
        return InvalidArgument(
            "Only one SQL statement is allowed per call; this text holds more than one.",
            next_step="Send the statements one per call.",
        )
    if "no such table" in lowered:
        name = message.split(":", 1)[-1].strip()
        return NotFound(
            f"{message}.",
            next_step=did_you_mean(name.split(".")[-1], source.known_tables(), kind="table")
            + " Call list_tables to see every table.",
        )
    if "no such column" in lowered:
        name = message.split(":", 1)[-1].strip().split(".")[-1]
        return InvalidArgument(f"{message}.", next_step=column_hint(name, source.known_columns(sql)))
    if "too big" in lowered:  # "string or blob too big": SQLITE_LIMIT_LENGTH
        limit = f"{MAX_VALUE_BYTES // (1024 * 1024)} MiB"
        return LimitExceeded(
            f"A value or row in this statement is larger than this server's {limit} limit on one "
            f"string, blob or row ({message}): either the statement builds one (printf, zeroblob, "
            "replace, group_concat…) or the table stores one.",
            next_step="Work on a part of the value: length(column) for its size (a blob's size is read "
            "without loading it), substr(column, start, count) for a piece, and name the columns you "
            "need instead of SELECT *. A stored value above the limit cannot be read or updated "
            "here at all; tell the user.",
        )
    if "database is locked" in lowered or "database table is locked" in lowered or "busy" in lowered:
        return Conflict(
            "The database is locked by another process (a write in progress).",
            retryable=True,
            next_step="Retry in a few seconds.",
        )
    if "not a database" in lowered or "malformed" in lowered or "corrupt" in lowered:
        return Conflict(
            f"The file for database {source.alias!r} is not a valid SQLite database or is corrupt ({message}).",
            next_step="Tell the user; the file needs to be restored or repaired (e.g. with the sqlite3 .recover command).",
        )
    if "unable to open" in lowered:
        return NotFound(
            f"The file for database {source.alias!r} cannot be opened ({message}).",
            next_step="Tell the user the database file is missing or unreadable.",
        )
    if isinstance(error, sqlite3.ProgrammingError) and "binding" in lowered:
        return InvalidArgument(
            f"The parameters do not match the statement: {message.rstrip('.')}.",
            next_step="Pass params as a list with one value for each ? in order (?1, ?2… number them).",
        )
    if isinstance(error, sqlite3.IntegrityError):
        return Conflict(
            f"The write violates a constraint: {message}.", next_step="Change the values and try again."
        )
    return InvalidArgument(
        f"SQLite refused the statement: {message}.", next_step="Fix the SQL and try again."
    )


def _unavailable_function(lowered: str, log: RefusalLog | None) -> Problem | None:
    """REGEXP and the like: no such function here (:data:`..safety.UNAVAILABLE_FUNCTIONS`), whether the
    statement calls it or a generated column, index or view of the schema does."""
    for function, instead in UNAVAILABLE_FUNCTIONS.items():
        refused_here = log is not None and log.refused == f"the function {function}()"
        in_statement = refused_here or f"no such function: {function}" in lowered
        in_schema = f"unknown function: {function}()" in lowered or f"unsafe use of {function}()" in lowered
        if in_statement or in_schema:
            return PermissionDenied(
                f"{function.upper()} is not available on this server: SQLite has none of its own, and one "
                "written in Python would run outside the per-statement time limit (a pattern such as "
                "'^(a+)+$' can run for hours)."
                + ("" if in_statement else " A generated column or index of this table uses it."),
                next_step=instead + ("" if in_statement else " Select the table's other columns by name."),
            )
    return None


def column_hint(column: str, nearby: ColumnsNearby | None) -> str:
    """The next step for an unknown ``column``: close matches in the tables looked at, and the whole
    column list when the statement names exactly one table."""
    fallback = "Call describe_table to see the columns of a table."
    if nearby is None:
        return fallback
    named, columns = nearby
    suggestions: dict[str, list[str]] = {}
    for table, names in columns.items():
        for match in close_matches(column, names):
            suggestions.setdefault(match, []).append(table)
    hint = ""
    if suggestions:
        options = [f"{name!r} (in {', '.join(tables[:4])})" for name, tables in list(suggestions.items())[:3]]
        hint = f"Did you mean {' or '.join(options)}? "
    if len(named) == 1:
        return hint + column_list(named[0], columns[named[0]])
    return hint + ("Call describe_table to see every column of a table." if hint else fallback)


def column_list(table: str, columns: list[str], max_chars: int = 1_000) -> str:
    """'Columns of people: id, name, …' within about ``max_chars`` characters."""
    shown: list[str] = []
    size = 0
    for name in columns:
        if shown and size + len(name) > max_chars:
            break
        shown.append(name if len(name) <= 100 else name[:100] + "…")
        size += len(shown[-1]) + 2
    rest = len(columns) - len(shown)
    more = f", … ({rest} more; describe_table {table} lists them all)" if rest else ""
    return f"Columns of {table}: {', '.join(shown)}{more}."
