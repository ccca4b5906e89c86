"""One served SQLite database: the verbs the tools call, each on a guarded connection under a budget.

The work is done by the modules beside this one: :mod:`.connection` (how a statement reaches SQLite:
a leased worker process, under a budget), :mod:`.errors` (what a SQLite error means for the model),
:mod:`.catalog` (tables, columns, DDL, counts), :mod:`.pages` (rows as a reply shows them, a page at a
time) and :mod:`.writes` (what a write would destroy, and the guarded real run). Everything is read
through ``sqlite_master`` and ``pragma_*`` on the guarded connection, so every look-up runs under a
budget and the authorizer, in a worker process (:mod:`..workers`).
"""

from __future__ import annotations

import contextlib
import logging
import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from dockyard_shared import InvalidArgument, NotFound, Problem

from ..catalog_cache import CatalogCache
from ..csv_rows import CHUNK_BYTES
from ..files import ExportFile
from ..models import (
    ExecuteResult,
    ForeignKeyInfo,
    ImportResult,
    PlanNode,
    QueryPlan,
    QueryResult,
    SchemaSearch,
    TableDescription,
    TableSummary,
)
from ..settings import DatabaseSpec, Limits
from ..workers.connection import RemoteConnection
from ..workers.limits import DatabaseTarget
from ..workers.pool import WorkerPool
from . import catalog, imports, writes
from .catalog import MAX_LISTED_TABLES, TableListing, search
from .connection import (
    MAX_VALUE_BYTES,
    Budget,
    Params,
    bind,
    checkout,
    one_statement,
    quote_identifier,
    worker_limits,
)
from .errors import ColumnsNearby, problem_for
from .pages import continuation, offset_from, query_fingerprint, rows_budget, too_wide

__all__ = ["MAX_LISTED_TABLES", "MAX_VALUE_BYTES", "Budget", "Database", "TableListing"]

T = TypeVar("T")
_log = logging.getLogger(__name__)

# How long a look-up made only to word an error (a did-you-mean) may take.
_HINT_BUDGET_MS = 500
# How many plan steps a time-out's index advice looks at.
_HINT_PLAN_STEPS = 50


class Database:
    """One served database. Its statements run in ``pool``'s worker processes (a pool of its own,
    sized by ``limits``, when none is given)."""

    def __init__(
        self,
        spec: DatabaseSpec,
        *,
        writable: bool,
        create: bool,
        limits: Limits,
        pool: WorkerPool | None = None,
        attach: tuple[tuple[str, str], ...] = (),
        main: str | None = None,
    ) -> None:
        """``attach`` and ``main``: a query_across database, whose connections open ``main`` (a served
        file's path, or :data:`MEMORY`) and attach ``attach`` read-only; ``spec`` only names it."""
        self.alias = spec.alias
        self.path = spec.path
        self.attached = [schema for schema, _ in attach]
        self.writable = writable
        self.limits = limits
        self._own_pool = pool is None
        self.pool = pool if pool is not None else WorkerPool(worker_limits(limits))
        self.memory_per_statement_mb = self.pool.limits.address_space // (1024 * 1024)
        self.max_write_mb = limits.max_write_mb

        def target(writable: bool, create: bool) -> DatabaseTarget:
            return DatabaseTarget(
                main or str(spec.path),
                writable,
                create,
                limits.busy_timeout_ms,
                limits.max_write_mb * 1024 * 1024,
                attach,
            )

        self._reader = target(False, False)
        self._writer = target(True, create) if writable else None
        self.catalog = CatalogCache(spec.path)
        if create and writable and not spec.path.exists():
            with self._connection(writer=True) as connection:
                connection.execute("SELECT 1").fetchone()  # mode=rwc creates the file on first connect

    def close(self) -> None:
        """Stop the worker processes of a pool this database made for itself."""
        if self._own_pool:
            self.pool.close()

    @contextmanager
    def _connection(
        self,
        *,
        writer: bool = False,
        budget: Budget | None = None,
        sql: str | None = None,
        params: Params = None,
    ) -> Iterator[RemoteConnection]:
        target = self._writer if writer else self._reader
        assert target is not None
        budget = budget or self._budget()

        def problem(error: BaseException, connection: RemoteConnection) -> Problem:
            # The next step's look-ups (did you mean…) run on the same worker: a second lease could
            # wait behind this very call when every worker is busy.
            hints = _Hints(self, connection, params)
            return problem_for(error, hints, log=connection.auth_log, budget=budget, sql=sql)

        with checkout(self.pool, target, budget=budget, problem=problem) as connection:
            yield connection

    def _budget(self) -> Budget:
        return Budget(self.limits.timeout_ms)

    def check_readable(self) -> None:
        """Fail now, with a clear message, if the file is missing, not SQLite, or unreadable.

        A schema SQLite cannot parse ("malformed database schema": a construct this SQLite does not
        know) does not fail: every call on the database says what is wrong, and the others are served.
        """
        if not self.path.exists():
            raise NotFound(
                f"The database file {self.path} does not exist.",
                next_step="Check the path; to create a new database pass --allow-write --create.",
            )
        if not self.path.is_file():
            raise InvalidArgument(
                f"{self.path} is not a file.", next_step="Pass the path of a SQLite database file."
            )
        try:
            with self._connection() as connection:
                connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except Problem as problem:
            if "malformed database schema" not in problem.what:
                raise
            _log.warning("database %r: %s", self.alias, problem.what)

    # -- what an error's next step looks up (errors.ErrorSource) ---------------------------------

    def known_tables(self) -> list[str]:
        try:
            with self._connection(budget=self._budget()) as connection:
                return _known_tables(connection, self.attached)
        except (Problem, sqlite3.Error):
            return []

    def known_columns(self, sql: str | None) -> ColumnsNearby | None:
        try:
            with self._connection(budget=Budget(_HINT_BUDGET_MS)) as connection:
                return catalog.columns_nearby(connection, sql)
        except (Problem, sqlite3.Error):
            return None

    # -- the catalog -----------------------------------------------------------------------------

    def resolve_table(self, name: str) -> tuple[str, str]:
        """The catalog's own spelling of ``name`` and whether it is a table or a view."""
        with self._connection(budget=self._budget()) as connection:
            return catalog.resolve(connection, name, alias=self.alias)

    def table_names(self, prefix: str = "", limit: int = 100) -> list[str]:
        """Names of tables and views starting with ``prefix`` (any case), without counting rows."""
        with self._connection(budget=self._budget()) as connection:
            return catalog.table_names(connection, prefix, limit)

    # Answers kept in the catalog cache, looked up without touching SQLite: cheap enough for the event loop.

    def kept_listing(self, limit: int = MAX_LISTED_TABLES) -> TableListing | None:
        return self.catalog.get(("listing", limit))

    def kept_description(self, name: str) -> TableDescription | None:
        return self.catalog.get(("describe", name))

    def kept_schema(self) -> str | None:
        return self.catalog.get(("schema",))

    def list_tables(self) -> list[TableSummary]:
        """The first :data:`MAX_LISTED_TABLES` tables and views (see :meth:`table_listing`)."""
        return self.table_listing().tables

    def table_listing(self, limit: int = MAX_LISTED_TABLES) -> TableListing:
        """Tables first, then views, by name, counted within one time limit (:func:`.catalog.listing`);
        kept in :attr:`catalog` while the file is unchanged."""

        def compute() -> tuple[TableListing, bool]:
            overall = self._budget()
            with self._connection(budget=overall) as connection:
                return catalog.listing(connection, limit, overall, self.limits.max_chars)

        return self.catalog.answer(("listing", limit), compute)

    def describe_table(self, name: str) -> TableDescription:
        """Columns, keys, indexes, DDL, row count and sample rows of one table or view; kept in
        :attr:`catalog` while the file is unchanged (not when the count was cut short or a view's rows
        change from call to call)."""

        def compute() -> tuple[TableDescription, bool]:
            budget = self._budget()
            with self._connection(budget=budget) as connection:
                return catalog.describe(connection, name, alias=self.alias, limits=self.limits, budget=budget)

        return self.catalog.answer(("describe", name), compute)

    def schema_ddl(self) -> str:
        """Every CREATE statement, tables first, up to the page budget (max_chars) and a note past it;
        kept in :attr:`catalog` while the file is unchanged."""

        def compute() -> tuple[str, bool]:
            with self._connection(budget=self._budget()) as connection:
                return catalog.schema_ddl(connection, alias=self.alias, max_chars=self.limits.max_chars), True

        return self.catalog.answer(("schema",), compute)

    # -- reading ---------------------------------------------------------------------------------

    def query(
        self, sql: str, params: Params, *, max_rows: int | None, cursor: str | None, budget: Budget
    ) -> QueryResult:
        """One page of a read-only statement's rows, and the cursor of the next page when more exist."""
        sql = one_statement(sql)
        limit = max_rows or self.limits.default_rows
        if limit < 1 or limit > self.limits.max_rows:
            raise InvalidArgument(
                f"max_rows must be between 1 and {self.limits.max_rows} (this server's ceiling).",
                next_step=f"Pass max_rows ≤ {self.limits.max_rows}, and page with the cursor for more.",
            )
        # Only a cursor, given or returned, needs the query's fingerprint (JSON and SHA-256 of the text).
        fingerprint = query_fingerprint(self.alias, sql, params) if cursor else None
        offset = offset_from(cursor, fingerprint) if fingerprint else 0
        with self._connection(budget=budget, sql=sql, params=params) as connection:
            # Sent together, answered together: one wait for the worker. The page's budget is what
            # the column names leave of max_chars, as rows_budget says (computed in the worker).
            result = connection.execute(sql, bind(params))
            result.skip(offset)  # streamed, in the worker: nothing before the page is kept
            rows, more, stopped_by = result.read_page(
                limit,
                max_chars=self.limits.max_chars,
                max_cell_chars=self.limits.max_cell_chars,
                less_names=True,
            )
            if result.description is None:
                raise InvalidArgument(
                    "The statement returned no result set.",
                    next_step="query is for statements that return rows.",
                )
            columns = [d[0] for d in result.description]
            budget_left = rows_budget(columns, self.limits.max_chars)
        if stopped_by == "too_wide":
            raise too_wide(offset + 1, len(columns), budget_left)
        if more:
            fingerprint = fingerprint or query_fingerprint(self.alias, sql, params)
            next_cursor, note = continuation(fingerprint, offset, len(rows), stopped_by)
        else:
            next_cursor, note = None, None
        # Built from values read_page produced: validating 10,000 rows again would cost more than
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
        """The statement's plan as a tree, and which full scans an index would avoid; cut to half a reply
        each (a plan of hundreds of steps: a compound SELECT of 500 parts)."""
        sql = one_statement(sql)
        if re.match(r"(?is)^\s*explain\b", sql):
            raise InvalidArgument(
                "Pass the statement itself, without EXPLAIN.", next_step="Remove the EXPLAIN prefix."
            )
        room = self.limits.max_chars // 2
        with self._connection(budget=budget, sql=sql, params=params) as connection:
            rows = connection.execute(f"EXPLAIN QUERY PLAN {sql}", bind(params)).fetchall()
            steps = _leading(rows, room, lambda row: len(row[3]) + 30)  # a step's JSON beside its detail
            notes = catalog.scan_notes(connection, [r[3] for r in steps], sql)
        scans = _leading(notes, room, len)
        nodes: dict[int, PlanNode] = {}
        roots: list[PlanNode] = []
        for node_id, parent, _unused, detail in steps:  # parents come before their children
            node = PlanNode(detail=catalog.cut_name(detail), children=[])
            nodes[node_id] = node
            (nodes[parent].children if parent in nodes else roots).append(node)
        cut = len(steps) < len(rows) or len(scans) < len(notes)
        note = f"Only the first {len(steps)} of {len(rows)} plan steps fit one reply." if cut else None
        return QueryPlan(database=self.alias, plan=roots, full_scans=scans, note=note)

    def plan_steps(self, sql: str, params: Params, *, budget: Budget) -> list[str]:
        """EXPLAIN QUERY PLAN's steps for a statement, in order (planned, not run): what --tasks weighs."""
        sql = one_statement(sql)
        with self._connection(budget=budget, sql=sql, params=params) as connection:
            return [
                row[3] for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}", bind(params)).fetchall()
            ]

    def rows_up_to(self, table: str, limit: int) -> int:
        """A table's rows, counted up to ``limit``; kept in :attr:`catalog` while the file is unchanged."""

        def compute() -> tuple[int, bool]:
            bounded = f"SELECT count(*) FROM (SELECT 1 FROM {quote_identifier(table)} LIMIT {int(limit)})"
            with self._connection(budget=self._budget()) as connection:
                return connection.execute(bounded).fetchone()[0], True

        return self.catalog.answer(("rows up to", table, limit), compute)

    def search_schema(
        self, pattern: str | None, column_type: str | None, detail: str, offset: int
    ) -> SchemaSearch:
        """Tables and columns by name or type, a page at ``detail`` (:mod:`.catalog.search`); the catalog's
        columns are kept in :attr:`catalog` while the file is unchanged."""

        def compute() -> tuple[search.CatalogColumns, bool]:
            overall = self._budget()
            with self._connection(budget=overall) as connection:
                return search.all_columns(connection, overall)

        columns = self.catalog.answer(("columns",), compute)
        with contextlib.ExitStack() as stack:
            opened: list[RemoteConnection] = []  # one connection, leased by the first look-up (full detail)

            def keys(table: str) -> list[ForeignKeyInfo]:
                if not opened:
                    opened.append(stack.enter_context(self._connection()))
                return search.foreign_keys(opened[0], table)

            return search.search(
                columns,
                alias=self.alias,
                pattern=pattern,
                column_type=column_type,
                detail=detail,
                offset=offset,
                max_chars=self.limits.max_chars,
                foreign_keys=keys,
            )

    def export(
        self, sql: str, params: Params, file: ExportFile, delimiter: str, *, budget: Budget
    ) -> tuple[int, int]:
        """Stream a read-only statement's rows into ``file`` as CSV (formatted in the worker, a chunk at a
        time): (rows, cells neutralised)."""
        sql = one_statement(sql)
        rows = neutralised = 0
        with self._connection(budget=budget, sql=sql, params=params) as connection:
            cursor = connection.execute(sql, bind(params))
            if cursor.description is None:
                raise InvalidArgument(
                    "The statement returned no result set.", next_step="Export a SELECT (or a table)."
                )
            done, header = False, True
            while not done:
                data, count, changed, done = cursor.read_csv(delimiter, header=header, max_bytes=CHUNK_BYTES)
                file.write(data)
                rows, neutralised, header = rows + count, neutralised + changed, False
        return rows, neutralised

    def import_csv(
        self, fd: int, *, name: str, delimiter: str, table: str, infer: bool, budget: Budget
    ) -> ImportResult:
        """A CSV file into a new table, in one transaction (:func:`.imports.import_rows`)."""
        with self._connection(writer=True, budget=budget) as connection:
            return imports.import_rows(
                connection,
                fd,
                name=name,
                delimiter=delimiter,
                table=table,
                infer=infer,
                alias=self.alias,
                max_write_bytes=self.max_write_mb * 1024 * 1024,
            )

    # -- writing ---------------------------------------------------------------------------------

    def destructive_effect(self, sql: str, params: Params, *, budget: Budget | None = None) -> str | None:
        """What a write would destroy — a dropped object, or every row of a table — or None
        (:func:`.writes.destructive_effect`: nothing of its trial run persists)."""
        sql = one_statement(sql)
        with self._connection(
            writer=True, budget=budget or self._budget(), sql=sql, params=params
        ) as connection:
            return writes.destructive_effect(connection, sql, params)

    def execute(
        self, sql: str, params: Params, *, budget: Budget, refuse_emptying: bool = False
    ) -> ExecuteResult:
        """Run one write statement and commit it; with ``refuse_emptying``, roll it back if it empties a
        table after all (:func:`.writes.execute`)."""
        sql = one_statement(sql)
        with self._connection(writer=True, budget=budget, sql=sql, params=params) as connection:
            return writes.execute(
                connection, sql, params, alias=self.alias, limits=self.limits, refuse_emptying=refuse_emptying
            )


def _leading(items: list[T], max_chars: int, size_of: Callable[[T], int]) -> list[T]:
    """The leading ``items`` whose sizes add up to at most ``max_chars``."""
    used = 0
    for index, item in enumerate(items):
        used += size_of(item)
        if used > max_chars:
            return items[:index]
    return items


def _known_tables(connection: RemoteConnection, attached: list[str]) -> list[str]:
    """The tables an error's next step offers: for query_across, each attached database's as alias.table."""
    if not attached:
        return catalog.table_names(connection)
    return [
        f"{schema}.{name}"
        for schema in attached
        for name in catalog.table_names(connection, limit=200, schema=schema)
    ]


class _Hints:
    """An :class:`.errors.ErrorSource` whose look-ups run on the connection the error came from."""

    def __init__(self, database: Database, connection: RemoteConnection, params: Params = None) -> None:
        self.alias = database.alias
        self.path: Path = database.path
        self.writable = database.writable
        self.memory_per_statement_mb = database.memory_per_statement_mb
        self.max_write_mb = database.max_write_mb
        self._connection = connection
        self._params = params
        self._attached = database.attached

    def known_tables(self) -> list[str]:
        try:
            self._connection.limit_to(Budget(_HINT_BUDGET_MS))
            return _known_tables(self._connection, self._attached)
        except (Problem, sqlite3.Error):
            return []

    def known_columns(self, sql: str | None) -> ColumnsNearby | None:
        try:
            self._connection.limit_to(Budget(_HINT_BUDGET_MS))
            return catalog.columns_nearby(self._connection, sql)
        except (Problem, sqlite3.Error):
            return None

    def index_advice(self, sql: str | None) -> list[str]:
        if not sql:
            return []
        try:
            self._connection.limit_to(Budget(_HINT_BUDGET_MS))
            rows = self._connection.execute(f"EXPLAIN QUERY PLAN {sql}", bind(self._params)).fetchall()
            return catalog.index_suggestions(
                self._connection, [row[3] for row in rows[:_HINT_PLAN_STEPS]], sql
            )
        except (Problem, sqlite3.Error):
            return []
