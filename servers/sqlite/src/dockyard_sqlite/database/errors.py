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

from ..safety import SLOW_FUNCTIONS, AuthorizerLog
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


class ErrorSource(Protocol):
    """The database an error came from, and the catalog look-ups a next step may need."""

    alias: str
    path: Path
    writable: bool

    def known_tables(self) -> list[str]:
        """Every table and view name; empty when the catalog cannot be read."""
        ...

    def known_columns(self, sql: str | None) -> ColumnsNearby | None:
        """The tables ``sql`` names and their columns; None when the catalog cannot be read."""
        ...


def problem_for(
    error: BaseException,
    source: ErrorSource,
    *,
    log: AuthorizerLog | None = None,
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
    refused_call = log.function_refused if log is not None else None
    if refused_call and "user-defined function raised exception" in lowered:
        return LimitExceeded(
            f"{refused_call} The statement was refused before running that call: SQLite's time "
            "limit cannot stop a single function call once it has started.",
            next_step="Use smaller arguments: build long strings from shorter pieces "
            "(substr, ||, a recursive CTE), and search long values with shorter patterns.",
        )
    if "interrupted" in lowered and budget is not None:
        if budget.cancelled.is_set():
            return LimitExceeded("The statement was cancelled by the client.", next_step="None needed.")
        return LimitExceeded(
            f"The statement ran longer than the {budget.timeout_ms} ms limit and was stopped "
            "(a runaway recursive CTE, a cross join or a scan of a very large table).",
            next_step="Add a LIMIT or a narrower WHERE, make sure a recursive CTE terminates, "
            "or check the plan with explain_query.",
        )
    slow = _slow_function(lowered, log)
    if slow is not None:
        return slow
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
                else "Only plain INSERT/UPDATE/DELETE and table DDL are allowed; "
                "ATTACH, VACUUM INTO, extensions, transaction control and PRAGMA writes never are."
            ),
        )
    if "readonly database" in lowered or "read-only" in lowered:
        return PermissionDenied(
            "This database is served read-only; the statement tried to write.",
            next_step="Use query for reads. Writes need the server started with --allow-write (ask the user).",
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
            f"The parameters do not match the statement: {message}.",
            next_step="Pass params as a list for ? placeholders or an object for :name placeholders, one value each.",
        )
    if isinstance(error, sqlite3.IntegrityError):
        return Conflict(
            f"The write violates a constraint: {message}.", next_step="Change the values and try again."
        )
    return InvalidArgument(
        f"SQLite refused the statement: {message}.", next_step="Fix the SQL and try again."
    )


def _slow_function(lowered: str, log: AuthorizerLog | None) -> Problem | None:
    """REGEXP and the like: refused by the authorizer in the statement, or met in a generated column or
    index of the schema ("unsafe use of regexp()", as trusted_schema is off)."""
    for function, instead in SLOW_FUNCTIONS.items():
        refused_here = log is not None and log.refused == f"the function {function}()"
        in_schema = f"unsafe use of {function}()" in lowered or (
            log is not None and log.slow_function_called == function
        )
        if refused_here or in_schema:
            return PermissionDenied(
                f"{function.upper()} is not available on this server: it runs as Python code, "
                "outside the per-statement time limit, and a pattern such as '^(a+)+$' can run "
                "for hours."
                + ("" if refused_here else " A generated column or index of this table uses it."),
                next_step=instead + ("" if refused_here else " Select the table's other columns by name."),
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
