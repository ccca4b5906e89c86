"""One served SQLite database: guarded connections, the catalog, paged queries, plans and writes.

SQLAlchemy is the connection layer (an engine per database and mode, pooled connections, the
inspector for the catalog); the statements themselves run on the pooled ``sqlite3`` connection so a
result can stream from its cursor and every statement runs under :class:`Budget` (a deadline and a
cancellation flag checked by SQLite's progress handler).
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
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import create_engine, inspect
from sqlalchemy.engine import Engine
from sqlalchemy.pool import QueuePool

from dockyard_shared import (
    Conflict,
    InvalidArgument,
    LimitExceeded,
    NotFound,
    PermissionDenied,
    Problem,
    close_matches,
    decode_cursor,
    did_you_mean,
    encode_cursor,
    json_size,
)
from dockyard_shared.errors import scrub_paths

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
from .safety import DESTRUCTIVE_ACTIONS, AuthorizerLog, authorizer
from .settings import DatabaseSpec, Limits

__all__ = ["Budget", "Database"]

Params = dict[str, Any] | list[Any] | None


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
    """A sqlite3 connection that remembers what its authorizer saw."""

    auth_log: AuthorizerLog


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
    connection.auth_log = AuthorizerLog()
    connection.set_authorizer(authorizer(writable=writable, log=connection.auth_log))
    return connection


def _engine(path: Path, *, writable: bool, create: bool, limits: Limits) -> Engine:
    return create_engine(
        f"sqlite:///{path}",
        creator=lambda: _connect(path, writable=writable, create=create, limits=limits),
        poolclass=QueuePool,
        pool_size=4,
        max_overflow=16,
        pool_timeout=limits.timeout_ms / 1000,
    )


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
        if create and writable and not spec.path.exists():
            with self._connection(writer=True):
                pass  # mode=rwc creates the file on first connect

    # -- connections -------------------------------------------------------------------------

    @contextmanager
    def _connection(
        self, *, writer: bool = False, budget: Budget | None = None
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
            connection.set_progress_handler(lambda: 1 if budget.expired() else 0, 1000)
        try:
            yield connection
        except sqlite3.Error as error:
            raise self._problem(error, connection, budget) from None
        finally:
            connection.set_progress_handler(None, 0)
            if connection.in_transaction:
                connection.rollback()
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
        self, error: BaseException, connection: GuardedConnection | None, budget: Budget | None = None
    ) -> Problem:
        message = scrub_paths(str(error), [self.path.parent])
        lowered = message.lower()
        if "interrupted" in lowered and budget is not None:
            if budget.cancelled.is_set():
                return LimitExceeded("The statement was cancelled by the client.", next_step="None needed.")
            return LimitExceeded(
                f"The statement ran longer than the {budget.timeout_ms} ms limit and was stopped "
                "(a runaway recursive CTE, a cross join or a scan of a very large table).",
                next_step="Add a LIMIT or a narrower WHERE, make sure a recursive CTE terminates, "
                "or check the plan with explain_query.",
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
            return InvalidArgument(f"{message}.", next_step=self._column_hint(name))
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

    def _column_hint(self, column: str) -> str:
        inspector = self._inspector()
        suggestions: dict[str, list[str]] = {}
        for table in self._table_names():
            for match in close_matches(column, [c["name"] for c in inspector.get_columns(table)]):
                suggestions.setdefault(match, []).append(table)
        if not suggestions:
            return "Call describe_table to see the columns of a table."
        options = [f"{name!r} (in {', '.join(tables[:4])})" for name, tables in list(suggestions.items())[:3]]
        return f"Did you mean {' or '.join(options)}? Call describe_table to see every column of a table."

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
        summaries = []
        with self._connection(budget=Budget(self.limits.timeout_ms)) as connection:
            catalog = connection.execute(
                "SELECT name, type, (SELECT count(*) FROM pragma_table_info(m.name)) FROM sqlite_master AS m "
                "WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY type, name"
            ).fetchall()
        for name, kind, columns in catalog:
            count, exact = self._count_rows(name, kind)
            summaries.append(
                TableSummary(
                    name=name, type=kind, row_count=count, row_count_exact=exact, column_count=columns
                )
            )
        return summaries

    # Above this many rows (judged by the largest rowid) a count is reported as an estimate: counting
    # a large table reads all of it, the estimate costs one index seek.
    EXACT_COUNT_UP_TO = 200_000

    def _count_rows(self, name: str, kind: str) -> tuple[int | None, bool]:
        quoted = _quote_identifier(name)
        if kind == "table":
            try:
                with self._connection(budget=Budget(200)) as connection:
                    largest = connection.execute(f"SELECT max(rowid) FROM {quoted}").fetchone()[0]
                if largest is not None and largest > self.EXACT_COUNT_UP_TO:
                    return int(largest), False
            except Problem:
                pass  # WITHOUT ROWID tables have no rowid: count them
        try:
            with self._connection(budget=Budget(200)) as connection:
                return connection.execute(f"SELECT count(*) FROM {quoted}").fetchone()[0], True
        except LimitExceeded:
            return None, False

    def describe_table(self, name: str) -> TableDescription:
        table, kind = self.resolve_table(name)
        quoted = _quote_identifier(table)
        # PRAGMAs on one connection: the catalog in a handful of index lookups.
        with self._connection(budget=Budget(self.limits.timeout_ms)) as connection:
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
            row = connection.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
            cursor = connection.execute(f"SELECT * FROM {quoted} LIMIT ?", (self.limits.sample_rows,))
            sample = [[self._cell(v) for v in r] for r in cursor.fetchall()]
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
        count, exact = self._count_rows(table, kind)
        return TableDescription(
            database=self.alias,
            name=table,
            type=kind,
            columns=columns,
            foreign_keys=list(grouped.values()),
            indexes=sorted(indexes, key=lambda ix: ix.name or ""),
            create_sql=row[0] if row else None,
            row_count=count,
            row_count_exact=exact,
            sample_rows=sample,
        )

    def schema_ddl(self) -> str:
        with self._connection(budget=Budget(self.limits.timeout_ms)) as connection:
            rows = connection.execute(
                "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
                "ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'view' THEN 1 WHEN 'index' THEN 2 ELSE 3 END, name"
            ).fetchall()
        return "\n\n".join(f"{r[0]};" for r in rows) + "\n"

    # -- reading -----------------------------------------------------------------------------

    def _cell(self, value: Any) -> Any:
        if isinstance(value, bytes):
            head = value[:32].hex()
            return f"<blob {len(value)} bytes: x'{head}{'…' if len(value) > 32 else ''}'>"
        if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
            return str(value)
        if isinstance(value, str) and len(value) > self.limits.max_cell_chars:
            cut = self.limits.max_cell_chars
            return (
                value[:cut]
                + f"…[cut: {len(value) - cut} more characters; select substr(column, {cut + 1}) to read on]"
            )
        return value

    def _page(self, cursor: sqlite3.Cursor, limit: int) -> tuple[list[list[Any]], bool, str | None]:
        """Up to ``limit`` rows within the character budget: (rows, more exist, what stopped us).

        Rows are fetched, converted and measured a batch at a time (one C-level json.dumps per batch);
        only a batch holding a blob, a non-finite float or a very long text goes value by value.
        """
        rows: list[list[Any]] = []
        chars = 0
        budget = self.limits.max_chars
        while len(rows) < limit:
            batch = cursor.fetchmany(min(64, limit - len(rows)))
            if not batch:
                return rows, False, None
            converted = [list(row) for row in batch]
            try:
                size = len(json.dumps(converted, ensure_ascii=False, allow_nan=False))
            except (TypeError, ValueError):
                size = self.limits.max_cell_chars + 1
            if size > self.limits.max_cell_chars:  # maybe a long text, a blob or NaN: convert each value
                converted = [[self._cell(v) for v in row] for row in batch]
                size = json_size(converted)
            if chars + size <= budget:
                rows.extend(converted)
                chars += size
                continue
            for row in converted:  # the budget ends inside this batch
                row_size = json_size(row)
                if rows and chars + row_size > budget:
                    return rows, True, "max_chars"
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
        with self._connection(budget=budget) as connection:
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
        with self._connection(budget=budget) as connection:
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

    def destructive_effect(self, sql: str, params: Params) -> str | None:
        """What a write would destroy (a dropped object, an emptied table), found by compiling it."""
        sql = _one_statement(sql)
        with self._connection(writer=True, budget=Budget(self.limits.timeout_ms)) as connection:
            program = connection.execute(f"EXPLAIN {sql}", _bind(params)).fetchall()
            actions = list(connection.auth_log.actions)
        # Statements compiled without any authorizer call (VACUUM) go on to run, and SQLite refuses
        # them then; only a statement that provably just reads is sent to query instead.
        reads = (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION)
        if actions and all(action in reads for action, _ in actions):
            raise InvalidArgument(
                "execute is for statements that change the database.", next_step="Use query to read."
            )
        for action, target in actions:
            if action in DESTRUCTIVE_ACTIONS and action != sqlite3.SQLITE_DELETE:
                return f"it drops {target}"
        deletes = [target for action, target in actions if action == sqlite3.SQLITE_DELETE]
        if deletes:
            cleared = any(str(step[1]) == "Clear" for step in program)
            if cleared or not re.search(r"(?i)\bwhere\b", sql):
                return f"it deletes every row of {deletes[0]}"
        return None

    def execute(self, sql: str, params: Params, *, budget: Budget) -> ExecuteResult:
        sql = _one_statement(sql)
        with self._connection(writer=True, budget=budget) as connection:
            before = connection.total_changes
            cursor = connection.execute(sql, _bind(params))
            returned = None
            if cursor.description is not None:
                returned, _, _ = self._page(cursor, 100)
            changed = connection.total_changes - before
            last_row_id = cursor.lastrowid
        return ExecuteResult(
            database=self.alias,
            rows_affected=cursor.rowcount if cursor.rowcount >= 0 else changed,
            last_row_id=last_row_id or None,
            returned_rows=returned,
        )


def _quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


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
