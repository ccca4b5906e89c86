"""The ``read`` toolset: list_tables, describe_table, query, explain_query. Nothing here can write."""

from typing import Annotated, Any

from fastmcp import Context
from fastmcp.dependencies import CurrentContext
from pydantic import Field, WithJsonSchema

from dockyard_shared import READ_ONLY
from dockyard_shared.results import model_result
from dockyard_shared.schema import optional
from dockyard_shared.toolsets import ToolRegistrar

from ..database_set import DatabaseSet
from ..models import QueryPlan, QueryResult, TableDescription, TableList
from ..views import query_meta
from .arguments import DatabaseName, Params, Sql
from .long_queries import as_called

__all__ = ["register"]

QUERY_DESCRIPTION = """Run one read-only SQL statement (SELECT, WITH, VALUES, EXPLAIN, PRAGMA reads); return a page of rows.

Use when: reading data: filtering, joining, aggregating.
Not for: changes (execute) or plans (explain_query).
Returns: columns, rows (value lists), next_cursor while more rows exist (pass it with the same sql,
params, database). Blobs are hex previews. No REGEXP: use LIKE, GLOB, instr.
Limits: ~{max_chars} characters a page; {timeout} ms; 16 MiB a value. SQLite refuses writes and ATTACH.
"""


def register(tools: ToolRegistrar, databases: DatabaseSet, *, task: Any = None) -> None:
    """``task``: query's task configuration when the server serves the tasks extension (--tasks)."""
    limits = databases.limits

    @tools.tool(annotations=READ_ONLY)
    async def list_tables(database: DatabaseName = None) -> TableList:
        """List tables and views with their row and column counts.

        Use when: starting to explore a database.
        Not for: columns (describe_table) or rows (query).
        Returns: name, type, row_count (row_count_is: exact, estimate or at least), column_count;
        total; a note when some are left out.
        Limits: 500 tables and views, tables first; exact counts up to 10,000 rows.
        """
        return await databases.listing(database)

    @tools.tool(annotations=READ_ONLY)
    async def describe_table(
        table: Annotated[str, Field(description="As list_tables names it (any case).")],
        database: DatabaseName = None,
    ) -> TableDescription:
        """Describe a table or view: columns, foreign keys, indexes, CREATE statement, row count, sample rows.

        Use when: you need column names and types before a query, or how tables relate.
        Not for: listing tables (list_tables) or reading rows (query).
        Returns: all of the above; an unknown name is an error listing close matches.
        Limits: 3 sample rows, values over 10,000 characters cut.
        """
        return await databases.description(database, table)

    # The description states this server's own limits, so it is formatted here.
    @tools.tool(
        annotations=READ_ONLY,
        meta=query_meta(),  # hosts that render MCP Apps show the page in ui://sqlite/result
        description=QUERY_DESCRIPTION.format(
            max_chars=f"{limits.max_chars:,}",
            timeout=limits.timeout_ms,
        ),
        task=task,
    )
    async def query(
        sql: Sql,
        params: Params = (),
        # The schema states the ceiling; the logic enforces it with a message naming it.
        max_rows: Annotated[
            int, Field(ge=1), WithJsonSchema({"type": "integer", "minimum": 1, "maximum": limits.max_rows})
        ] = limits.default_rows,
        cursor: Annotated[str | None, optional("string", "next_cursor of the previous page.")] = None,
        database: DatabaseName = None,
        ctx: Context = CurrentContext(),
    ) -> QueryResult:
        page = await as_called(  # as a task (--tasks) when it may run long
            ctx,
            limits.task_timeout_ms,
            lambda as_task: databases.query(
                database, sql, params, max_rows=max_rows, cursor=cursor, as_task=as_task
            ),
        )
        # The rows are plain JSON values already (made so while the page was read).
        return model_result(page, plain_fields=("rows",))  # type: ignore[return-value]

    @tools.tool(annotations=READ_ONLY)
    async def explain_query(sql: Sql, params: Params = (), database: DatabaseName = None) -> QueryPlan:
        """Show SQLite's plan for a statement (EXPLAIN QUERY PLAN) and which full scans an index would avoid.

        Use when: a query is slow, or to compare formulations.
        Not for: running it (query).
        Returns: the plan as a tree, and full_scans naming a referenced column an index would help on.
        Limits: one statement, planned, not run.
        """
        return await databases.explain(database, sql, params)
