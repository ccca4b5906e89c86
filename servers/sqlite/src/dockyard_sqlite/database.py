"""One served SQLite database: guarded connections, the catalog, paged queries, plans and writes.

SQLAlchemy is the connection layer (an engine per database and mode, pooled connections, the
inspector for the catalog); the statements themselves run on the pooled ``sqlite3`` connection so a
result can stream from its cursor and every statement runs under :class:`Budget` (a deadline and a
cancellation flag checked by SQLite's progress handler).

Besides the authorizer (:mod:`.safety`), every connection caps the length of any one string, blob or
stored row at :data:`MAX_VALUE_BYTES`, so no statement can build a gigabyte value (``printf('%.*c',
900000000, 'x')``) in SQLite's memory and then again in Python's. Replies are bounded too: rows by
the page budget, a single over-wide row by cutting its values harder, the schema DDL and the table
list by size and count, each with a note that says how to get the rest.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic_core import to_json
from sqlalchemy import create_engine, event, inspect
from sqlalchemy.engine import Engine
from sqlalchemy.pool import QueuePool

from dockyard_shared import (
    Conflict,
    InvalidArgument,
    LimitExceeded,
    NotFound,
    PermissionDenied,
    Problem,
    bound_text,
    close_matches,
    decode_cursor,
    did_you_mean,
    encode_cursor,
    json_size,
)
from dockyard_shared.errors import scrub_paths

from .catalog_cache import VOLATILE_FUNCTIONS, CatalogCache
from .models import (
    ColumnInfo,
    ExecuteResult,
    ForeignKeyInfo,
    IndexInfo,
    PlanNode,
    QueryPlan,
    QueryResult,
    TableDescription,
    TableSummary,
)
from .safety import (
    DESTRUCTIVE_ACTIONS,
    REPLACED_FUNCTIONS,
    SLOW_FUNCTIONS,
    AuthorizerLog,
    authorizer,
    install_functions,
    refuse_slow_functions,
)
from .settings import DatabaseSpec, Limits

__all__ = ["MAX_LISTED_TABLES", "MAX_VALUE_BYTES", "Budget", "Database", "TableListing"]

Params = dict[str, Any] | list[Any] | None

# The longest string or blob, and the largest stored row, any statement may make or read
# (SQLITE_LIMIT_LENGTH). Far above what a reply shows (a text value is cut at max_cell_chars, a blob is
# a 32-byte preview), so it only bounds memory: without it printf('%.*c', 900000000, 'x') builds ~1 GB
# in SQLite and again in Python. The price, paid knowingly: a value stored larger than this cannot be
# read at all (not even with substr(); length() of a blob still works), a row holding one cannot be
# UPDATEd, and in write mode no INSERT can store a value (or row) this large — zeroblob(n) included.
MAX_VALUE_BYTES = 16 * 1024 * 1024
# The longest LIKE/GLOB pattern. One LIKE is a single VM step, out of the time limit's reach, and costs
# text length × pattern length: measured against a 16 MiB text, ~15 ms per pattern byte (2 s at 128
# bytes; SQLite's default limit, 50,000 bytes, would be ~12 minutes per row).
MAX_LIKE_PATTERN_BYTES = 128
# list_tables lists at most this many tables and views (about 50 KB of JSON), and says so.
MAX_LISTED_TABLES = 500
# How much of SQLite's own message an error repeats (it may quote a whole statement).
MAX_ERROR_ECHO_CHARS = 1_000
# Values a reply shows as they are (a text only when short enough; a float only when finite).
_PLAIN_TYPES = frozenset({int, float, str, type(None)})
# SQLite calls the progress handler (the time limit and cancellation check, a Python call) every this
# many VM instructions: ~0.1 ms of work apart, so a limit is kept to well under a millisecond, and a
# full scan of a million rows pays ~1,000 Python calls instead of ~10,000 (measured: 1000 steps cost
# 2-3% of an aggregate over the bench's 1,000,000 rows, 10,000 steps under 1%).
_PROGRESS_STEPS = 10_000

_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"})


@dataclass
class Budget:
    """How long one statement may run, and whether its caller has gone away."""

    timeout_ms: int
    deadline: float = 0.0
    cancelled: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.timeout_ms / 1000

    def expired(self) -> bool:
        return self.cancelled.is_set() or time.monotonic() > self.deadline


class GuardedConnection(sqlite3.Connection):
    """A sqlite3 connection that remembers what its authorizer saw.

    printf/format, instr and replace are Python functions here (:func:`.safety.install_functions`),
    and with ``trusted_schema`` OFF SQLite refuses an application function inside a view, trigger,
    generated column or index expression ("unsafe use of replace()"): Python's sqlite3 cannot mark
    one innocuous. So a statement refused only for that runs again with ``trusted_schema`` ON for
    this checkout (:meth:`Database._connection` turns it off again): the schema then gets the same
    bounded functions as the statement, and the authorizer still checks every function a view or
    trigger calls.
    """

    auth_log: AuthorizerLog
    schema_trusted: bool = False

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:  # type: ignore[override]
        try:
            return super().execute(sql, parameters)
        except sqlite3.DatabaseError as error:  # "malformed database schema" for a generated column
            if self.schema_trusted or not _unsafe_use_of_replaced_function(str(error)):
                raise
        self.set_trusted_schema(True)
        return super().execute(sql, parameters)

    def set_trusted_schema(self, on: bool) -> None:
        with self.auth_log.trust_control():
            super().execute(f"PRAGMA trusted_schema = {'ON' if on else 'OFF'}")
        self.schema_trusted = on


def _unsafe_use_of_replaced_function(message: str) -> bool:
    return any(f"unsafe use of {name}()" in message.lower() for name in REPLACED_FUNCTIONS)


def _connect(path: Path, *, writable: bool, create: bool, limits: Limits) -> GuardedConnection:
    mode = "rwc" if create else "rw" if writable else "ro"
    uri = f"file:{quote(str(path))}?mode={mode}"
    connection = sqlite3.connect(
        uri,
        uri=True,
        factory=GuardedConnection,
        check_same_thread=False,  # pooled: used by one worker thread at a time, not always the same one
        isolation_level=None,  # autocommit: every call is its own transaction
        timeout=limits.busy_timeout_ms / 1000,
        # Every statement is compiled afresh so the authorizer sees (and logs) each one: a cached
        # statement would skip it, and destructive-write detection reads that log.
        cached_statements=0,
    )
    # Before the authorizer goes on, while these pragmas are still ours to run.
    connection.execute("PRAGMA trusted_schema = OFF")
    connection.execute("PRAGMA foreign_keys = ON")
    connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    connection.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, MAX_LIKE_PATTERN_BYTES)
    connection.auth_log = AuthorizerLog()
    install_functions(connection, connection.auth_log, max_length=MAX_VALUE_BYTES)
    connection.set_authorizer(authorizer(writable=writable, log=connection.auth_log))
    return connection


def _engine(path: Path, *, writable: bool, create: bool, limits: Limits) -> Engine:
    engine = create_engine(
        f"sqlite:///{path}",
        creator=lambda: _connect(path, writable=writable, create=create, limits=limits),
        poolclass=QueuePool,
        pool_size=4,
        max_overflow=16,
        pool_timeout=limits.timeout_ms / 1000,
    )
    # Listeners run in the order they were added: this one after the dialect's, which registers regexp.
    event.listen(
        engine, "connect", lambda connection, _: refuse_slow_functions(connection, connection.auth_log)
    )
    return engine


@dataclass(frozen=True)
class TableListing:
    """At most :data:`MAX_LISTED_TABLES` tables and views, and whether more exist."""

    tables: list[TableSummary]
    total: int
    truncated: bool
    note: str | None = None


def _fingerprint(alias: str, sql: str, params: Params) -> str:
    payload = json.dumps([alias, sql, params], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


class Database:
    def __init__(self, spec: DatabaseSpec, *, writable: bool, create: bool, limits: Limits) -> None:
        self.alias = spec.alias
        self.path = spec.path
        self.writable = writable
        self.limits = limits
        self._reader = _engine(spec.path, writable=False, create=False, limits=limits)
        self._writer = _engine(spec.path, writable=True, create=create, limits=limits) if writable else None
        self.catalog = CatalogCache(spec.path)
        if create and writable and not spec.path.exists():
            with self._connection(writer=True):
                pass  # mode=rwc creates the file on first connect

    # -- connections -------------------------------------------------------------------------

    @contextmanager
    def _connection(
        self, *, writer: bool = False, budget: Budget | None = None, sql: str | None = None
    ) -> Iterator[GuardedConnection]:
        engine = self._writer if writer else self._reader
        assert engine is not None
        try:
            pooled = engine.raw_connection()
        except Exception as error:
            raise self._problem(error, None) from None
        connection: GuardedConnection = pooled.driver_connection  # type: ignore[assignment]
        connection.auth_log.reset()
        if budget is not None:
            connection.set_progress_handler(lambda: 1 if budget.expired() else 0, _PROGRESS_STEPS)
        try:
            yield connection
        except sqlite3.Error as error:
            raise self._problem(error, connection, budget, sql) from None
        finally:
            connection.set_progress_handler(None, 0)
            if connection.schema_trusted:
                try:
                    connection.set_trusted_schema(False)
                except sqlite3.Error:
                    pooled.invalidate()
            if connection.in_transaction:  # only a trial run opens one; never let it reach the pool
                try:
                    with connection.auth_log.transaction_control():
                        connection.execute("ROLLBACK")
                except sqlite3.Error:
                    pooled.invalidate()  # closed instead of pooled: SQLite rolls back on close
            pooled.close()

    def check_readable(self) -> None:
        """Fail now, with a clear message, if the file is missing, not SQLite, corrupt or unreadable."""
        if not self.path.exists():
            raise NotFound(
                f"The database file {self.path} does not exist.",
                next_step="Check the path; to create a new database pass --allow-write --create.",
            )
        if not self.path.is_file():
            raise InvalidArgument(
                f"{self.path} is not a file.", next_step="Pass the path of a SQLite database file."
            )
        with self._connection() as connection:
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()

    # -- errors ------------------------------------------------------------------------------

    def _problem(
        self,
        error: BaseException,
        connection: GuardedConnection | None,
        budget: Budget | None = None,
        sql: str | None = None,
    ) -> Problem:
        message = scrub_paths(str(error), [self.path.parent])
        if len(message) > MAX_ERROR_ECHO_CHARS:
            # SQLite quotes the text near a syntax error, which may be most of a huge statement.
            cut = len(message) - MAX_ERROR_ECHO_CHARS
            message = message[:MAX_ERROR_ECHO_CHARS] + f"…[{cut} more characters]"
        lowered = message.lower()
        refused_call = connection.auth_log.function_refused if connection is not None else None
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
        for function, instead in SLOW_FUNCTIONS.items():
            # Refused by the authorizer in the statement, or met in a generated column or index of
            # the schema ("unsafe use of regexp()", as trusted_schema is off).
            log = connection.auth_log if connection is not None else None
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
                    next_step=instead
                    + ("" if refused_here else " Select the table's other columns by name."),
                )
        if "not authorized" in lowered or "authorization denied" in lowered or "too many attached" in lowered:
            refused = connection.auth_log.refused if connection is not None else None
            what = refused or "ATTACH or VACUUM INTO (reaching another database file)"
            mode = "this read-only connection" if connection is None or not self.writable else "this server"
            return PermissionDenied(
                f"{what} is not allowed on {mode}.",
                next_step=(
                    "Use query for SELECT/WITH/VALUES/EXPLAIN statements only."
                    if not self.writable
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
                next_step=did_you_mean(name.split(".")[-1], self._table_names(), kind="table")
                + " Call list_tables to see every table.",
            )
        if "no such column" in lowered:
            name = message.split(":", 1)[-1].strip().split(".")[-1]
            return InvalidArgument(f"{message}.", next_step=self._column_hint(name, sql))
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
                f"The file for database {self.alias!r} is not a valid SQLite database or is corrupt ({message}).",
                next_step="Tell the user; the file needs to be restored or repaired (e.g. with the sqlite3 .recover command).",
            )
        if "unable to open" in lowered:
            return NotFound(
                f"The file for database {self.alias!r} cannot be opened ({message}).",
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

    # A column hint looks at the tables the statement names; when it names none it knows (a CTE, a
    # typo), at the first this many tables of the catalog.
    HINT_TABLES = 200

    def _column_hint(self, column: str, sql: str | None) -> str:
        fallback = "Call describe_table to see the columns of a table."
        try:
            with self._connection(budget=Budget(500)) as connection:
                catalog = [
                    r[0]
                    for r in connection.execute(
                        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                        "AND name NOT LIKE 'sqlite_%' ORDER BY name"
                    )
                ]
                by_name = {name.lower(): name for name in catalog}
                named = list(dict.fromkeys(by_name[w] for w in _identifiers(sql or "") if w in by_name))
                tables = named or catalog[: self.HINT_TABLES]
                columns = {
                    table: [
                        r[0] for r in connection.execute("SELECT name FROM pragma_table_info(?)", (table,))
                    ]
                    for table in tables
                }
        except (Problem, sqlite3.Error):
            return fallback
        suggestions: dict[str, list[str]] = {}
        for table, names in columns.items():
            for match in close_matches(column, names):
                suggestions.setdefault(match, []).append(table)
        hint = ""
        if suggestions:
            options = [
                f"{name!r} (in {', '.join(tables[:4])})" for name, tables in list(suggestions.items())[:3]
            ]
            hint = f"Did you mean {' or '.join(options)}? "
        if len(named) == 1:
            return hint + _column_list(named[0], columns[named[0]])
        return hint + ("Call describe_table to see every column of a table." if hint else fallback)

    # -- catalog -----------------------------------------------------------------------------

    def _inspector(self):
        return inspect(self._reader)

    def _table_names(self) -> list[str]:
        try:
            inspector = self._inspector()
            return inspector.get_table_names() + inspector.get_view_names()
        except Exception:
            return []

    def resolve_table(self, name: str) -> tuple[str, str]:
        """The catalog's own spelling of ``name`` and whether it is a table or a view."""
        with self._connection(budget=Budget(self.limits.timeout_ms)) as connection:
            return self._resolve_on(connection, name)

    def _resolve_on(self, connection: GuardedConnection, name: str) -> tuple[str, str]:
        catalog = connection.execute(
            "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
        for matches in (lambda c: c == name, lambda c: c.lower() == name.lower()):
            for candidate, kind in catalog:
                if matches(candidate):
                    return candidate, kind
        raise NotFound(
            f"There is no table or view named {name!r} in database {self.alias!r}.",
            next_step=did_you_mean(name, [c for c, _ in catalog], kind="table")
            + " Call list_tables to see them all.",
        )

    def list_tables(self) -> list[TableSummary]:
        """The first :data:`MAX_LISTED_TABLES` tables and views (see :meth:`table_listing`)."""
        return self.table_listing().tables

    # Answers kept in the catalog cache, looked up without touching SQLite: cheap enough for the event loop.

    def kept_listing(self, limit: int = MAX_LISTED_TABLES) -> TableListing | None:
        return self.catalog.get(("listing", limit))

    def kept_description(self, name: str) -> TableDescription | None:
        return self.catalog.get(("describe", name))

    def kept_schema(self) -> str | None:
        return self.catalog.get(("schema",))

    def table_listing(self, limit: int = MAX_LISTED_TABLES) -> TableListing:
        """Tables first, then views, by name: at most ``limit`` of them, counted within one time limit.

        Each count may take 200 ms and all of them together the statement time limit; a table left
        uncounted has row_count None. Kept in :attr:`catalog` while the file is unchanged, unless a count
        was cut short or a view counted differently from call to call.
        """
        return self.catalog.answer(("listing", limit), lambda: self._table_listing(limit))

    def _table_listing(self, limit: int) -> tuple[TableListing, bool]:
        overall = Budget(self.limits.timeout_ms)
        with self._connection(budget=overall) as connection:
            total = connection.execute(
                "SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'"
            ).fetchone()[0]
            # The column count is computed for the listed rows only, not for the whole catalog.
            catalog = connection.execute(
                "SELECT name, type, (SELECT count(*) FROM pragma_table_info(m.name)) FROM ("
                "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') "
                "AND name NOT LIKE 'sqlite_%' ORDER BY type, name LIMIT ?) AS m ORDER BY type, name",
                (limit,),
            ).fetchall()
            summaries = []
            uncounted = 0
            for name, kind, columns in catalog:
                remaining_ms = int((overall.deadline - time.monotonic()) * 1000)
                if remaining_ms > 0:
                    count, exact = self._count_on(connection, name, kind, min(200, remaining_ms), overall)
                else:
                    count, exact = None, False
                    uncounted += 1
                summaries.append(
                    TableSummary.model_construct(
                        name=name, type=kind, row_count=count, row_count_exact=exact, column_count=columns
                    )
                )
            # A table left uncounted has row_count None too.
            keepable = all(s.row_count is not None for s in summaries) and not _volatile(connection)
        notes = []
        if total > len(summaries):
            notes.append(
                f"Only the first {len(summaries)} of {total} tables and views are listed (tables first, "
                "then views, by name). Find others with query, e.g. SELECT name, type FROM sqlite_master "
                "WHERE type IN ('table', 'view') AND name LIKE 'prefix%'; describe_table works on any of them."
            )
        if uncounted:
            notes.append(
                f"Counting rows stopped at the {self.limits.timeout_ms} ms time limit: row_count is null for "
                f"{uncounted} tables; describe_table counts one."
            )
        listing = TableListing(
            tables=summaries,
            total=total,
            truncated=total > len(summaries),
            note=" ".join(notes) or None,
        )
        return listing, keepable

    def table_names(self, prefix: str = "", limit: int = 100) -> list[str]:
        """Names of tables and views starting with ``prefix`` (any case), without counting rows."""
        wanted = prefix.lower()
        names: list[str] = []
        with self._connection(budget=Budget(self.limits.timeout_ms)) as connection:
            for (name,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name"
            ):
                if name.lower().startswith(wanted):
                    names.append(name)
                    if len(names) >= limit:
                        break
        return names

    # Above this many rows (judged by the largest rowid) a count is reported as an estimate: counting
    # a large table reads all of it, the estimate costs one index seek.
    EXACT_COUNT_UP_TO = 200_000

    def _count_on(
        self, connection: GuardedConnection, name: str, kind: str, timeout_ms: int, outer: Budget
    ) -> tuple[int | None, bool]:
        """Rows of one table on a connection already checked out (a checkout costs as much as the
        estimate itself), under a budget of its own; ``outer``, the caller's, is put back afterwards."""
        quoted = _quote_identifier(name)
        own = Budget(timeout_ms)
        connection.set_progress_handler(lambda: 1 if own.expired() or outer.expired() else 0, _PROGRESS_STEPS)
        try:
            if kind == "table":
                try:
                    largest = connection.execute(f"SELECT max(rowid) FROM {quoted}").fetchone()[0]
                except sqlite3.OperationalError as error:
                    if "interrupted" in str(error):
                        return None, False
                    largest = None  # WITHOUT ROWID tables have no rowid: count them
                if largest is not None and largest > self.EXACT_COUNT_UP_TO:
                    return int(largest), False
            return connection.execute(f"SELECT count(*) FROM {quoted}").fetchone()[0], True
        except sqlite3.OperationalError as error:
            if "interrupted" in str(error):
                return None, False
            raise
        finally:
            connection.set_progress_handler(lambda: 1 if outer.expired() else 0, _PROGRESS_STEPS)

    def describe_table(self, name: str) -> TableDescription:
        """Columns, keys, indexes, DDL, row count and sample rows of one table or view; kept in
        :attr:`catalog` while the file is unchanged (not when the count was cut short or a view's rows
        change from call to call)."""
        return self.catalog.answer(("describe", name), lambda: self._describe_table(name))

    def _describe_table(self, name: str) -> tuple[TableDescription, bool]:
        budget = Budget(self.limits.timeout_ms)
        # Everything on one connection: the catalog in a handful of index lookups, then the count.
        with self._connection(budget=budget) as connection:
            table, kind = self._resolve_on(connection, name)
            quoted = _quote_identifier(table)
            info = connection.execute(
                'SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)', (table,)
            ).fetchall()
            keys = connection.execute(
                'SELECT id, "from", "table", "to", on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq',
                (table,),
            ).fetchall()
            index_rows = connection.execute(
                'SELECT name, "unique", origin FROM pragma_index_list(?)', (table,)
            ).fetchall()
            indexes = [
                IndexInfo(
                    name=index_name if origin == "c" else None,
                    columns=[
                        c[0]
                        for c in connection.execute(
                            "SELECT name FROM pragma_index_info(?) ORDER BY seqno", (index_name,)
                        )
                        if c[0]
                    ],
                    unique=bool(unique),
                )
                for index_name, unique, origin in index_rows
                if origin != "pk"
            ]
            row = connection.execute(
                "SELECT substr(sql, 1, ?), length(sql) FROM sqlite_master WHERE name = ?",
                (self.limits.max_chars // 4, table),
            ).fetchone()
            cursor = connection.execute(f"SELECT * FROM {quoted} LIMIT ?", (self.limits.sample_rows,))
            sample, _, _ = self._page(cursor, self.limits.sample_rows, max_chars=self.limits.max_chars // 4)
            count, exact = self._count_on(connection, table, kind, 200, budget)
            keepable = count is not None and not _volatile(connection)
        create_sql = row[0] if row else None
        if create_sql is not None and row[1] > len(create_sql):
            create_sql += (
                f"…[cut: {row[1] - len(create_sql)} more characters; read them with query: "
                f"SELECT substr(sql, {len(create_sql) + 1}) FROM sqlite_master WHERE name = "
                f"{_quote_literal(table)}]"
            )
        columns = [
            ColumnInfo(name=n, type=t or "", nullable=not notnull, default=default, primary_key=bool(pk))
            for n, t, notnull, default, pk in info
        ]
        grouped: dict[int, ForeignKeyInfo] = {}
        for key_id, source, target, target_column, on_delete in keys:
            entry = grouped.setdefault(
                key_id,
                ForeignKeyInfo(
                    columns=[],
                    referred_table=target,
                    referred_columns=[],
                    on_delete=None if on_delete in (None, "NO ACTION") else on_delete,
                ),
            )
            entry.columns.append(source)
            if target_column:
                entry.referred_columns.append(target_column)
        description = TableDescription(
            database=self.alias,
            name=table,
            type=kind,
            columns=columns,
            foreign_keys=list(grouped.values()),
            indexes=sorted(indexes, key=lambda ix: ix.name or ""),
            create_sql=create_sql,
            row_count=count,
            row_count_exact=exact,
            sample_rows=sample,
        )
        return description, keepable

    def schema_ddl(self) -> str:
        """Every CREATE statement, tables first, up to the page budget (max_chars) and a note past it;
        kept in :attr:`catalog` while the file is unchanged."""
        return self.catalog.answer(("schema",), lambda: (self._schema_ddl(), True))

    def _schema_ddl(self) -> str:
        budget = self.limits.max_chars
        parts: list[str] = []
        size = 0
        complete = True
        with self._connection(budget=Budget(self.limits.timeout_ms)) as connection:
            cursor = connection.execute(
                "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
                "ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'view' THEN 1 WHEN 'index' THEN 2 ELSE 3 END, name"
            )
            for (statement,) in cursor:  # streamed: stop reading once the budget is spent
                if size > budget:
                    complete = False
                    break
                parts.append(f"{statement};")
                size += len(parts[-1]) + 2
            total = (
                len(parts)
                if complete
                else connection.execute(
                    "SELECT count(*) FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
                ).fetchone()[0]
            )
        text = "\n\n".join(parts) + "\n"
        if complete and len(text) <= budget:
            return text
        cut = bound_text(text, budget).text
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
            + f"\n\n-- Truncated: the schema is larger than one reply ({budget:,} characters). Shown: the "
            f"first {whole} of {total} CREATE statements in full{partly} (tables first, then views, indexes, "
            "triggers). Call list_tables to see every table, and describe_table (or read "
            f"sqlite://{self.alias}/tables/NAME) for one table's CREATE statement, columns and indexes.\n"
        )

    # -- reading -----------------------------------------------------------------------------

    def _cell(self, value: Any, cut: int | None = None) -> Any:
        """A value as a reply shows it: a blob as a preview, NaN/±inf as text, a long text cut."""
        if isinstance(value, bytes):
            head = value[:32].hex()
            return f"<blob {len(value)} bytes: x'{head}{'…' if len(value) > 32 else ''}'>"
        if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
            return str(value)
        cut = cut or self.limits.max_cell_chars
        if isinstance(value, str) and len(value) > cut:
            return (
                value[:cut]
                + f"…[cut: {len(value) - cut} more characters; select substr(column, {cut + 1}) to read on]"
            )
        return value

    def _special_columns(self, batch: list[tuple[Any, ...]]) -> list[int]:
        """Columns of ``batch`` holding a value :meth:`_cell` changes (or that may hold one).

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
                if max(map(len, filter(None, column)), default=0) > self.limits.max_cell_chars:
                    special.append(index)
                continue
            if kinds <= {int, float}:
                total = sum(filter(None, column))
                if total - total != 0:  # NaN or ±inf somewhere (or a sum that overflowed: harmless)
                    special.append(index)
                continue
            special.append(index)  # blobs, or mixed text and numbers
        return special

    def _convert(self, batch: list[tuple[Any, ...]]) -> tuple[list[list[Any]], int]:
        """The rows of ``batch`` as a reply shows them, and their size in JSON characters.

        The common batch — integers, floats, texts shorter than max_cell_chars, NULLs — is copied and
        measured in C: one pass for the types, one pydantic-core encoding (which also reveals NaN and
        ±inf, written as bare NaN/Infinity), and a longest-text pass only when the batch is big
        enough to hold a long text. Anything else (a blob, NaN/inf, a long text, a column mixing texts
        and numbers) is converted only in the columns that need it (:meth:`_special_columns`).
        """
        rows = list(map(list, batch))
        kinds = set(map(type, chain.from_iterable(batch)))
        if kinds <= _PLAIN_TYPES:
            try:
                encoded: bytes | None = to_json(rows)
            except Exception:  # e.g. a lone surrogate: let the careful path decide
                encoded = None
            if (
                encoded is not None
                and not (float in kinds and (b"NaN" in encoded or b"Infinity" in encoded))
                and not (
                    str in kinds
                    and len(encoded) > self.limits.max_cell_chars
                    and self._long_text(batch, kinds)
                )
            ):
                return rows, _encoded_chars(encoded)
        special = self._special_columns(batch)
        if special:
            cell = self._cell
            for row in rows:
                for index in special:
                    row[index] = cell(row[index])
        return rows, _json_chars(rows)

    def _long_text(self, batch: list[tuple[Any, ...]], kinds: set[type]) -> bool:
        """Whether a text in ``batch`` is longer than max_cell_chars (True when unsure)."""
        if kinds <= {str, type(None)}:
            return (
                max(map(len, filter(None, chain.from_iterable(batch))), default=0)
                > self.limits.max_cell_chars
            )
        return True  # texts mixed with numbers: _special_columns checks column by column

    def _shrink(self, row: tuple[Any, ...], max_chars: int) -> list[Any]:
        """A row larger than a whole page on its own (many long texts): cut each text harder."""
        cut = max(50, max_chars // (3 * max(1, len(row))))
        return [self._cell(value, cut) for value in row]

    def _page(
        self, cursor: sqlite3.Cursor, limit: int, *, max_chars: int | None = None
    ) -> tuple[list[list[Any]], bool, str | None]:
        """Up to ``limit`` rows within the character budget: (rows, more exist, what stopped us).

        Rows are fetched, converted and measured a batch at a time: only the values that need it (a
        blob, a non-finite float, a very long text) are converted one by one (:meth:`_convert`), and a
        batch is measured as compact JSON by pydantic-core in C. Only the batch in which the budget
        runs out is measured row by row. A row larger than the whole budget on its own is shrunk
        (:meth:`_shrink`), so even a 2,000-column row of long texts stays within about one page.
        """
        budget = max_chars or self.limits.max_chars
        rows: list[list[Any]] = []
        chars = 0
        while len(rows) < limit:
            batch = cursor.fetchmany(min(64, limit - len(rows)))
            if not batch:
                return rows, False, None
            converted, size = self._convert(batch)
            if chars + size <= budget:
                rows.extend(converted)
                chars += size
                continue
            for original, row in zip(batch, converted, strict=True):  # the budget ends in this batch
                row_size = _json_chars(row)
                if rows and chars + row_size > budget:
                    return rows, True, "max_chars"
                if row_size > budget:
                    row = self._shrink(original, budget)
                    row_size = _json_chars(row)
                rows.append(row)
                chars += row_size
        more = cursor.fetchone() is not None
        return rows, more, "max_items" if more else None

    def query(
        self,
        sql: str,
        params: Params,
        *,
        max_rows: int | None,
        cursor: str | None,
        budget: Budget,
    ) -> QueryResult:
        sql = _one_statement(sql)
        limit = max_rows or self.limits.default_rows
        if limit < 1 or limit > self.limits.max_rows:
            raise InvalidArgument(
                f"max_rows must be between 1 and {self.limits.max_rows} (this server's ceiling).",
                next_step=f"Pass max_rows ≤ {self.limits.max_rows}, and page with the cursor for more.",
            )
        fingerprint = _fingerprint(self.alias, sql, params)
        offset = 0
        if cursor:
            state = decode_cursor(cursor, tool="query")
            if state.get("q") != fingerprint:
                raise InvalidArgument(
                    "This cursor belongs to a different query (the sql, params or database changed).",
                    next_step="Repeat the exact same sql, params and database with the cursor, or drop the cursor to start over.",
                )
            offset = int(state.get("offset", 0))
        with self._connection(budget=budget, sql=sql) as connection:
            result = connection.execute(sql, _bind(params))
            if result.description is None:
                raise InvalidArgument(
                    "The statement returned no result set.",
                    next_step="query is for statements that return rows.",
                )
            columns = [d[0] for d in result.description]
            skipped = 0
            while skipped < offset:  # streaming skip: nothing before the page is kept
                batch = result.fetchmany(min(4096, offset - skipped))
                if not batch:
                    break
                skipped += len(batch)
            rows, more, stopped_by = self._page(result, limit)
        next_cursor = None
        note = None
        if more:
            next_offset = offset + len(rows)
            next_cursor = encode_cursor({"q": fingerprint, "offset": next_offset})
            reason = "max_rows" if stopped_by == "max_items" else "the page size limit in characters"
            note = (
                f"Truncated at {reason}: rows {offset + 1}–{next_offset} shown; more rows exist. "
                "Call query again with the same sql, params and database plus cursor=next_cursor for the next page, "
                "or narrow the query (WHERE, fewer columns, an aggregate)."
            )
        # Built from values this method produced: validating 10,000 rows again would cost more than
        # running the query.
        return QueryResult.model_construct(
            database=self.alias,
            columns=columns,
            rows=rows,
            row_count=len(rows),
            offset=offset,
            truncated=more,
            next_cursor=next_cursor,
            note=note,
        )

    def explain(self, sql: str, params: Params, *, budget: Budget) -> QueryPlan:
        sql = _one_statement(sql)
        if re.match(r"(?is)^\s*explain\b", sql):
            raise InvalidArgument(
                "Pass the statement itself, without EXPLAIN.", next_step="Remove the EXPLAIN prefix."
            )
        with self._connection(budget=budget, sql=sql) as connection:
            rows = connection.execute(f"EXPLAIN QUERY PLAN {sql}", _bind(params)).fetchall()
        nodes: dict[int, PlanNode] = {}
        roots: list[PlanNode] = []
        for node_id, parent, _unused, detail in rows:
            node = PlanNode(detail=detail, children=[])
            nodes[node_id] = node
            (nodes[parent].children if parent in nodes else roots).append(node)
        notes = self._scan_notes([r[3] for r in rows], sql)
        return QueryPlan(database=self.alias, plan=roots, full_scans=notes)

    def _scan_notes(self, details: Sequence[str], sql: str) -> list[str]:
        notes = []
        words = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql)}
        inspector = self._inspector()
        tables = set(inspector.get_table_names())
        for detail in details:
            match = re.match(r"SCAN (\S+)(?: AS \S+)?$", detail)
            if not match or match.group(1) not in tables:
                continue
            table = match.group(1)
            indexed = {ix["column_names"][0] for ix in inspector.get_indexes(table) if ix["column_names"]}
            indexed |= set(inspector.get_pk_constraint(table).get("constrained_columns") or [])
            candidates = [
                c["name"]
                for c in inspector.get_columns(table)
                if c["name"].lower() in words and c["name"] not in indexed
            ]
            if candidates:
                notes.append(
                    f"Full scan of {table}: an index on {table}({candidates[0]}) would avoid it if that column "
                    f"filters or joins here (referenced, unindexed: {', '.join(candidates)})."
                )
            else:
                notes.append(
                    f"Full scan of {table}: expected when every row is needed; no unindexed filter column found."
                )
        return notes

    # -- writing -----------------------------------------------------------------------------

    def destructive_effect(self, sql: str, params: Params, *, budget: Budget | None = None) -> str | None:
        """What a write would destroy — a dropped object, or every row of a table — or None.

        The statement is compiled first (EXPLAIN: the authorizer sees every action, triggers and
        foreign-key cascades included). A DROP is destructive whatever it drops. A statement that
        deletes from any table is then run for real inside a transaction that is always rolled back:
        it is destructive if a table that had rows has none afterwards — whatever the WHERE clause
        says (``WHERE 1``, ``WHERE id > 0``) and wherever the deletion happens (a trigger, an
        ``ON DELETE CASCADE``). Nothing of the trial persists; the real run comes after confirmation.
        """
        sql = _one_statement(sql)
        budget = budget or Budget(self.limits.timeout_ms)
        with self._connection(writer=True, budget=budget, sql=sql) as connection:
            connection.execute(f"EXPLAIN {sql}", _bind(params)).fetchall()
            actions = list(connection.auth_log.actions)
            deleted = list(dict.fromkeys(connection.auth_log.deleted))
            # Statements compiled without any authorizer call (VACUUM) go on to run, and SQLite
            # refuses them then; only a statement that provably just reads is sent to query instead.
            reads = (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION)
            if actions and all(action in reads for action, _ in actions):
                raise InvalidArgument(
                    "execute is for statements that change the database.", next_step="Use query to read."
                )
            for action, target in actions:
                if action in DESTRUCTIVE_ACTIONS and action != sqlite3.SQLITE_DELETE:
                    return f"it drops {target}"
            targets = [(schema, table) for schema, table in deleted if table.lower() not in _SCHEMA_TABLES]
            if not targets:
                return None
            emptied = self._trial_run(connection, sql, params, targets)
        if not emptied:
            return None
        return f"it deletes every row of {' and '.join(emptied)}"

    def _trial_run(
        self, connection: GuardedConnection, sql: str, params: Params, targets: list[tuple[str, str]]
    ) -> list[str]:
        """Run ``sql`` in a transaction that is rolled back: the tables among ``targets`` it empties."""
        log = connection.auth_log
        with log.transaction_control():
            connection.execute("BEGIN IMMEDIATE")  # the write lock now: no other writer slips in between
        try:
            occupied = self._occupied(connection, targets)
            if not occupied:
                return []  # nothing to lose: skip running it
            cursor = connection.execute(sql, _bind(params))
            cursor.close()  # with RETURNING, every change is made by the first step already
            return _emptied(connection, occupied)
        finally:
            # An interrupted write has rolled the transaction back already.
            if connection.in_transaction:
                with log.transaction_control():
                    connection.execute("ROLLBACK")

    def _occupied(
        self, connection: GuardedConnection, targets: list[tuple[str, str]]
    ) -> list[tuple[str, str]]:
        """The tables among ``targets`` (views and the like left out) that hold rows."""
        return [
            (s, t) for s, t in targets if self._is_table(connection, s, t) and _has_rows(connection, s, t)
        ]

    def _begin_guard(
        self, connection: GuardedConnection, sql: str, params: Params
    ) -> list[tuple[str, str]] | None:
        """For a statement that deletes from tables: open a transaction holding the write lock and
        return the tables that hold rows now (perhaps none); None, with no transaction, otherwise."""
        connection.execute(f"EXPLAIN {sql}", _bind(params)).fetchall()
        deleted = dict.fromkeys(connection.auth_log.deleted)
        targets = [(schema, table) for schema, table in deleted if table.lower() not in _SCHEMA_TABLES]
        if not targets:
            return None
        with connection.auth_log.transaction_control():
            connection.execute("BEGIN IMMEDIATE")
        return self._occupied(connection, targets)

    @staticmethod
    def _is_table(connection: GuardedConnection, schema: str, table: str) -> bool:
        catalog = "sqlite_temp_master" if schema == "temp" else f"{_quote_identifier(schema)}.sqlite_master"
        row = connection.execute(f"SELECT type FROM {catalog} WHERE name = ?", (table,)).fetchone()
        return row is not None and row[0] == "table"

    def execute(
        self, sql: str, params: Params, *, budget: Budget, refuse_emptying: bool = False
    ) -> ExecuteResult:
        """Run one write statement and commit it.

        ``refuse_emptying`` is for a statement nobody confirmed as destructive: :meth:`destructive_effect`
        found it would empty no table, but another writer may have changed the data since. A statement
        that deletes from a table then runs in a transaction holding the write lock, and is rolled back
        if it left a table that had rows empty — the real run is checked exactly as the trial was.
        """
        sql = _one_statement(sql)
        with self._connection(writer=True, budget=budget, sql=sql) as connection:
            guarded = self._begin_guard(connection, sql, params) if refuse_emptying else None
            before = connection.total_changes
            cursor = connection.execute(sql, _bind(params))
            returned = None
            last_row_id = cursor.lastrowid
            if cursor.description is not None:  # RETURNING: its rows are counted once it finishes
                returned, _, _ = self._page(cursor, 100)
                cursor.close()
                affected = connection.execute("SELECT changes()").fetchone()[0]
            else:
                affected = cursor.rowcount if cursor.rowcount >= 0 else connection.total_changes - before
            if guarded is not None:
                emptied = _emptied(connection, guarded)
                if emptied:  # raised inside the checkout: it rolls the transaction back
                    raise Conflict(
                        f"The data changed after this statement was checked: it would now delete every row "
                        f"of {' and '.join(emptied)}, which nobody confirmed. Nothing was changed.",
                        next_step="Call execute again: the user will be asked to confirm the deletion.",
                        retryable=True,
                    )
                with connection.auth_log.transaction_control():
                    connection.execute("COMMIT")
        return ExecuteResult(
            database=self.alias,
            rows_affected=affected,
            last_row_id=last_row_id or None,
            returned_rows=returned,
        )


def _emptied(connection: sqlite3.Connection, occupied: list[tuple[str, str]]) -> list[str]:
    """The tables among ``occupied`` (which had rows) that have none now, as a model would name them."""
    return [t if s == "main" else f"{s}.{t}" for s, t in occupied if not _has_rows(connection, s, t)]


def _volatile(connection: GuardedConnection) -> bool:
    """Whether a statement on this checkout called a function whose result can change while the file does
    not (a view using random() or datetime('now')): such an answer is not kept in the catalog cache."""
    return any(
        action == sqlite3.SQLITE_FUNCTION and (name or "").lower() in VOLATILE_FUNCTIONS
        for action, name in connection.auth_log.actions
    )


def _quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _has_rows(connection: sqlite3.Connection, schema: str, table: str) -> bool:
    target = f"{_quote_identifier(schema)}.{_quote_identifier(table)}"
    return bool(connection.execute(f"SELECT EXISTS (SELECT 1 FROM {target})").fetchone()[0])


def _json_chars(value: Any) -> int:
    """Characters of ``value`` as compact JSON, like :func:`json_size` but ~5× faster.

    Only for converted values (no bytes, NaN or inf: pydantic-core would write those as text or as
    bare NaN rather than fail).
    """
    try:
        encoded = to_json(value)
    except Exception:
        return json_size(value)
    return _encoded_chars(encoded)


def _encoded_chars(encoded: bytes) -> int:
    return len(encoded) if encoded.isascii() else len(encoded.decode())


def _quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


_IDENTIFIER = re.compile(r'"((?:[^"]|"")+)"|`([^`]+)`|\[([^\]]+)\]|([^\W\d][\w$]*)')


def _identifiers(sql: str) -> Iterator[str]:
    """Every identifier-like word of ``sql``, unquoted and lower-cased (string literals included)."""
    for match in _IDENTIFIER.finditer(sql):
        quoted, backticked, bracketed, bare = match.groups()
        word = quoted.replace('""', '"') if quoted is not None else backticked or bracketed or bare
        yield word.lower()


def _column_list(table: str, columns: list[str], max_chars: int = 1_000) -> str:
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


def _bind(params: Params) -> Sequence[Any] | dict[str, Any]:
    if params is None:
        return ()
    if isinstance(params, dict):
        return {str(k).lstrip(":@$"): v for k, v in params.items()}
    return list(params)


def _one_statement(sql: str) -> str:
    text = sql.strip()
    if not text:
        raise InvalidArgument("The SQL is empty.", next_step="Pass one SQL statement.")
    # A trailing semicolon is fine; anything after it is a second statement, which sqlite3 refuses
    # itself ("one statement at a time") when the statement runs.
    return text
