"""The databases a server serves, found by alias (the twin of git's ``RepositorySet``), and the verbs the
tools call on them: each resolves the alias and runs the statement off the event loop under a fresh budget.

Opened in two steps because what a connection may do depends on which tools are served: the server
installs its toolsets first, then opens the databases writable only where ``execute`` was installed
(``--read-only`` or ``--exclude-tools execute`` keep writer connections closed even with --allow-write).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from dockyard_shared import InvalidArgument, NotFound, did_you_mean
from dockyard_shared.offload import run_in_thread

from .database import Budget, Database
from .database.catalog import EXACT_COUNT_UP_TO
from .database.connection import one_statement, quote_identifier, worker_limits
from .database.pages import offset_from, query_fingerprint
from .files import ExportFile, checked_name, open_import
from .models import (
    ExecuteResult,
    ExportResult,
    ImportResult,
    QueryPlan,
    QueryResult,
    SchemaSearch,
    TableDescription,
    TableList,
)
from .query_cost import Weight, statement_words, weigh
from .settings import DatabaseSpec, Limits
from .workers.pool import WorkerPool
from .workers.protocol import MAX_ATTACHED, MEMORY

__all__ = ["ACROSS_ALIAS", "DatabaseSet"]

# What query_across replies name as their database (no served alias can be spelled so).
ACROSS_ALIAS = "*"

T = TypeVar("T")
Params = dict[str, Any] | list[Any] | None

# How much of the catalog the warm-up describes ahead (DatabaseSet.describe_ahead): a first look at a
# database describes a handful of tables; the catalog cache keeps 64 answers per database.
# How far weighing a query (--tasks) counts a table the listing gives only a lower bound for (WITHOUT
# ROWID): ~10 ms of SQLite's work; a larger one weighs as unknown, so the call runs as a task.
COUNT_UP_TO = 100_000
DESCRIBE_AHEAD_TABLES = 8
DESCRIBE_AHEAD_SECONDS = 0.1


class DatabaseSet:
    """Every served database, and the pool of worker processes all their statements run in
    (:mod:`.workers`)."""

    def __init__(
        self, specs: tuple[DatabaseSpec, ...], limits: Limits, pool: WorkerPool | None = None
    ) -> None:
        self.specs = specs
        self.limits = limits
        wanted = worker_limits(limits)
        if pool is not None and pool.limits != wanted:
            # Started before the settings were read (the entry point's first worker), for other limits.
            pool.close()
            pool = None
        self.pool = pool or WorkerPool(wanted)
        self.databases: dict[str, Database] = {}
        self._across: Database | None = None

    def open(self, *, writable: bool, create: bool = False) -> DatabaseSet:
        """Open every database (creating a missing file when ``writable`` and ``create``) and check that
        it is readable now, so a bad path stops the server at start-up with a clear message."""
        for spec in self.specs:
            database = Database(
                spec, writable=writable, create=create and writable, limits=self.limits, pool=self.pool
            )
            database.check_readable()
            self.databases[spec.alias] = database
        return self

    def across(self) -> Database:
        """The database query_across reads: every served alias attached read-only under its own name by
        the worker itself (the first :data:`MAX_ATTACHED`; ``main`` and ``temp`` are SQLite's own
        names: a database served as ``main`` is opened as the main one, ``temp`` cannot be reached)."""
        if self._across is None:
            named = [spec for spec in self.specs if spec.alias.lower() not in ("main", "temp")]
            main = next((spec for spec in self.specs if spec.alias.lower() == "main"), None)
            self._across = Database(
                DatabaseSpec(ACROSS_ALIAS, self.specs[0].path),
                writable=False,
                create=False,
                limits=self.limits,
                pool=self.pool,
                attach=tuple((spec.alias, str(spec.path)) for spec in named[:MAX_ATTACHED]),
                main=str(main.path) if main else MEMORY,
            )
        return self._across

    def warm_up(self) -> Iterator[None]:
        """Once ``initialize`` has been answered (:mod:`dockyard_shared.warmup`, which runs it one item at a
        time, each only while no request is in flight): each database's table listing (kept in its catalog
        cache while the file is unchanged; the instructions tell the model to start with list_tables, whose
        first answer would otherwise read the whole catalog), one ``SELECT 1`` through the query path, whose
        first run in a worker costs ~6 ms more than the next, then the descriptions of the first tables
        (:meth:`describe_ahead`)."""
        for database in self.databases.values():
            database.table_listing()
            yield
            database.query("SELECT 1", None, max_rows=1, cursor=None, budget=Budget(self.limits.timeout_ms))
            yield
        yield from self.describe_ahead()

    def describe_ahead(
        self, tables: int = DESCRIBE_AHEAD_TABLES, seconds: float = DESCRIBE_AHEAD_SECONDS
    ) -> Iterator[None]:
        """Describe the first ``tables`` tables of the listings (tables come first, by name), one per item,
        so describe_table's first call on them is a catalog-cache hit: uncached, it reads the table's
        columns, keys, indexes, DDL, sample rows and count in a worker, 5–6 ms against ~1 ms for a kept
        answer (bench/startup). Bounded so a large database does not pay for it: views are skipped (their
        count runs their query), and so are tables too large for describe_table to count exactly (an estimate
        above EXACT_COUNT_UP_TO, or a bound) or not counted at all; it stops after
        ``tables`` tables or ``seconds`` of describing, whichever comes first."""
        started = time.monotonic()
        left = tables
        for database in self.databases.values():
            listing = database.kept_listing()
            for summary in listing.tables if listing else []:
                if left <= 0 or time.monotonic() - started > seconds:
                    return
                small = summary.row_count is not None and summary.row_count <= EXACT_COUNT_UP_TO
                if (
                    summary.type != "table"
                    or summary.row_count_is == "at least"
                    or not small
                    or summary.problem
                ):
                    continue
                database.describe_table(summary.name)
                left -= 1
                yield

    def close(self) -> None:
        """Stop the worker processes now."""
        self.pool.close()

    @property
    def aliases(self) -> list[str]:
        return [spec.alias for spec in self.specs]

    def resolve(self, name: str | None) -> Database:
        """The database called ``name``; optional when exactly one is served."""
        assert self.databases or not self.specs, "DatabaseSet.open() was not called"
        if not name:
            if len(self.databases) == 1:
                return next(iter(self.databases.values()))
            raise InvalidArgument(
                f"Several databases are served ({', '.join(self.databases)}); say which one.",
                next_step="Pass database=<one of those names>.",
            )
        if name in self.databases:
            return self.databases[name]
        raise NotFound(
            f"No database is served under the name {name!r}.",
            next_step=did_you_mean(name, self.databases, kind="database"),
        )

    async def run(self, work: Callable[[Budget], T], *, as_task: bool = False) -> T:
        """Run ``work`` in a worker thread under a fresh budget (``as_task``: a task's, --task-timeout-ms).

        The event loop keeps serving other requests meanwhile. If the request is cancelled (or its task),
        the budget is cancelled: the worker process running its statement is killed (and replaced), so the
        work stops at once, and the thread is released.
        """
        if as_task:
            budget = Budget(self.limits.task_timeout_ms, flag="--task-timeout-ms")
        else:
            budget = Budget(self.limits.timeout_ms)
        return await run_in_thread(lambda: work(budget), on_cancel=budget.cancel)

    # -- what the tools and resources call --------------------------------------------------------
    # A catalog answer kept while the file is unchanged is looked up on the event loop (three stat
    # calls), so a repeated list_tables or describe_table needs no worker thread.

    async def listing(self, name: str | None) -> TableList:
        db = self.resolve(name)
        found = db.kept_listing() or await self.run(lambda _: db.table_listing())
        return TableList(
            database=db.alias,
            tables=found.tables,
            total=found.total,
            truncated=found.truncated,
            note=found.note,
        )

    async def description(self, name: str | None, table: str) -> TableDescription:
        db = self.resolve(name)
        return db.kept_description(table) or await self.run(lambda _: db.describe_table(table))

    async def schema(self, name: str | None) -> str:
        db = self.resolve(name)
        kept = db.kept_schema()
        return kept if kept is not None else await self.run(lambda _: db.schema_ddl())

    async def table_names(self, name: str | None, prefix: str) -> list[str]:
        db = self.resolve(name)
        return await self.run(lambda _: db.table_names(prefix))

    async def query(
        self,
        name: str | None,
        sql: str,
        params: Params,
        *,
        max_rows: int | None,
        cursor: str | None,
        as_task: bool = False,
    ) -> QueryResult:
        db = self.resolve(name)
        return await self.run(
            lambda budget: db.query(sql, params, max_rows=max_rows, cursor=cursor, budget=budget),
            as_task=as_task,
        )

    async def weigh(
        self,
        name: str | None,
        sql: str | None,
        params: Params,
        *,
        max_rows: int | None = None,
        cursor: str | None = None,
        table: str | None = None,
        every_row: bool = False,
        across: bool = False,
    ) -> Weight:
        """How many rows a query call may visit before its page is complete (:mod:`.query_cost`): its plan,
        weighed by the row counts of the table listing (kept in the catalog cache). ``every_row``: an export's
        read of every row of ``sql`` (or of ``table``), not a page. ``across``: query_across's statement,
        a table weighing as the largest of that name among the attached databases."""
        db = self.across() if across else self.resolve(name)
        sources = [d for d in self.databases.values() if d.alias in db.attached or d.path == db.path]
        sources = sources if across else [db]
        every_row = every_row or table is not None
        if sql is not None:
            sql = one_statement(sql)
        offset = offset_from(cursor, query_fingerprint(db.alias, sql, params)) if cursor and sql else 0
        page_rows = offset + (max_rows or self.limits.default_rows) + 1
        bound = sum(
            len(v)
            for v in (params.values() if isinstance(params, dict) else params or ())
            if isinstance(v, str)
        )

        def work(budget: Budget) -> Weight:
            statement = f"SELECT * FROM {quote_identifier(db.resolve_table(table)[0])}" if table else sql
            assert statement is not None
            named = {word for word, _ in statement_words(statement)}
            counts: dict[str, int | None] = {}
            reads_view = False  # a view's filters and aggregates are not in the statement's text
            for source in sources:
                for summary in (source.kept_listing() or source.table_listing()).tables:
                    key = summary.name.lower()
                    reads_view = reads_view or (summary.type == "view" and key in named)
                    if summary.type != "table":
                        continue
                    rows = summary.row_count if summary.row_count_is in ("exact", "estimate") else None
                    if (
                        rows is None and key in named
                    ):  # only bounded below (WITHOUT ROWID): count, up to a bound
                        counted = source.rows_up_to(summary.name, COUNT_UP_TO + 1)
                        rows = counted if counted <= COUNT_UP_TO else None
                    known = counts.get(key, 0)
                    counts[key] = None if rows is None or known is None else max(rows, known)
            steps = db.plan_steps(statement, None if table else params, budget=budget)
            return weigh(
                statement,
                steps,
                counts,
                page_rows=None if every_row or reads_view else page_rows,
                bound_chars=bound,
            )

        return await self.run(work)

    async def explain(self, name: str | None, sql: str, params: Params) -> QueryPlan:
        db = self.resolve(name)
        return await self.run(lambda budget: db.explain(sql, params, budget=budget))

    async def destructive_effect(self, name: str | None, sql: str, params: Params) -> str | None:
        db = self.resolve(name)
        return await self.run(lambda budget: db.destructive_effect(sql, params, budget=budget))

    async def execute(self, name: str | None, sql: str, params: Params, *, confirmed: bool) -> ExecuteResult:
        """Run a write. Unless someone accepted a destructive effect (``confirmed``), the real run is
        checked as the trial was: another writer may have changed the data in between."""
        db = self.resolve(name)
        return await self.run(
            lambda budget: db.execute(sql, params, budget=budget, refuse_emptying=not confirmed)
        )

    async def query_across(
        self, sql: str, params: Params, *, max_rows: int | None, cursor: str | None, as_task: bool = False
    ) -> QueryResult:
        db = self.across()
        return await self.run(
            lambda budget: db.query(sql, params, max_rows=max_rows, cursor=cursor, budget=budget),
            as_task=as_task,
        )

    async def search_schema(
        self, name: str | None, pattern: str | None, column_type: str | None, detail: str, offset: int
    ) -> SchemaSearch:
        db = self.resolve(name)
        return await self.run(lambda _: db.search_schema(pattern, column_type, detail, offset))

    async def export(
        self,
        name: str | None,
        *,
        file: str,
        sql: str | None,
        table: str | None,
        params: Params,
        folder: Path,
        max_bytes: int,
        as_task: bool = False,
    ) -> ExportResult:
        """A statement's rows, or a table's, into ``file`` in ``folder`` (never overwriting; a partial file
        never stays)."""
        file, delimiter = checked_name(file, "--export-dir")
        if (sql is None) == (table is None):
            raise InvalidArgument(
                "Pass either sql or table (one of them).", next_step="Pass table='orders', or sql."
            )
        db = self.resolve(name)

        def work(budget: Budget) -> ExportResult:
            statement = sql
            if table is not None:
                if params:
                    raise InvalidArgument("params go with sql, not with table.", next_step="Drop params.")
                statement = f"SELECT * FROM {quote_identifier(db.resolve_table(table)[0])}"
            assert statement is not None
            written = ExportFile(folder, file, max_bytes)
            try:
                rows, neutralised = db.export(statement, params, written, delimiter, budget=budget)
                path, note = written.finish()
            finally:
                written.discard()
            return ExportResult(
                database=db.alias,
                path=str(path),
                rows=rows,
                bytes=written.size,
                neutralised_cells=neutralised,
                note=note,
            )

        return await self.run(work, as_task=as_task)

    async def import_csv(
        self, name: str | None, *, file: str, table: str, types: str, folder: Path
    ) -> ImportResult:
        file, delimiter = checked_name(file, "--import-dir")
        db = self.resolve(name)

        def work(budget: Budget) -> ImportResult:
            fd = open_import(folder, file, db.max_write_mb * 1024 * 1024)
            try:
                return db.import_csv(
                    fd, name=file, delimiter=delimiter, table=table, infer=types != "text", budget=budget
                )
            finally:
                os.close(fd)

        return await self.run(work)
