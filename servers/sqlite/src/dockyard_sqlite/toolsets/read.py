"""The ``read`` toolset: list_tables, describe_table, query, explain_query. Nothing here can write."""

from typing import Annotated

from pydantic import Field

from dockyard_shared import READ_ONLY
from dockyard_shared.results import model_result
from dockyard_shared.toolsets import ToolRegistrar

from ..databases import DatabaseSet
from ..models import QueryPlan, QueryResult, TableDescription, TableList
from .arguments import DatabaseName, Params, Sql

__all__ = ["register"]

QUERY_DESCRIPTION = """Run one read-only SQL statement (SELECT, WITH, VALUES, EXPLAIN, read-only PRAGMA) and return a page of rows.

Use when: reading data — filtering, joining, aggregating.
Not for: changing data — use execute (only with --allow-write); query plans — use explain_query.
Returns: columns, rows (lists in column order), row_count, truncated, and next_cursor when more rows exist.
Blobs come back as a short hex preview. REGEXP is not available (use LIKE, GLOB or instr).
Limits: one statement per call; {default_rows} rows per page by default, {max_rows} at most, and about
{max_chars} characters per page; {timeout} ms per statement; one value at most 16 MiB. Pass next_cursor with the same sql, params and
database to get the next page. Writes, ATTACH and PRAGMA writes are refused by SQLite itself.
"""


def register(tools: ToolRegistrar, databases: DatabaseSet) -> None:
    limits = databases.limits

    @tools.tool(annotations=READ_ONLY)
    async def list_tables(database: DatabaseName = None) -> TableList:
        """List the tables and views of a database with their row and column counts.

        Use when: starting to explore a database, or checking which tables exist.
        Not for: column details — use describe_table; reading rows — use query.
        Returns: each table or view with row_count (row_count_exact=false when it is an estimate from the
        largest rowid, null when counting was too slow) and column_count; total, and truncated with a note
        when not every table is listed.
        Limits: at most 500 tables and views (tables first, by name); counting stops after 200 ms per table
        and the statement time limit in all.
        """
        return await databases.listing(database)

    @tools.tool(annotations=READ_ONLY)
    async def describe_table(
        table: Annotated[str, Field(description="Table or view name, as list_tables shows it.")],
        database: DatabaseName = None,
    ) -> TableDescription:
        """Describe one table or view: columns, keys, indexes, its CREATE statement and a few sample rows.

        Use when: you need column names and types before writing a query, or how tables relate.
        Not for: listing tables — use list_tables; reading many rows — use query.
        Returns: columns (type, nullable, default, primary key), foreign keys, indexes, create_sql, the
        row count and up to 3 sample rows. An unknown name is an error listing close matches.
        Limits: sample values longer than 10,000 characters are cut.
        """
        return await databases.description(database, table)

    # The description states this server's own limits, so it is formatted here.
    @tools.tool(
        annotations=READ_ONLY,
        description=QUERY_DESCRIPTION.format(
            default_rows=limits.default_rows,
            max_rows=limits.max_rows,
            max_chars=f"{limits.max_chars:,}",
            timeout=limits.timeout_ms,
        ),
    )
    async def query(
        sql: Sql,
        params: Params = None,
        max_rows: Annotated[
            int | None,
            Field(
                description=f"Rows per page (default {limits.default_rows}, at most {limits.max_rows}).", ge=1
            ),
        ] = None,
        cursor: Annotated[
            str | None, Field(description="next_cursor from the previous page of the same query.")
        ] = None,
        database: DatabaseName = None,
    ) -> QueryResult:
        page = await databases.query(database, sql, params, max_rows=max_rows, cursor=cursor)
        # The rows are plain JSON values already (made so while the page was read).
        return model_result(page, plain_fields=("rows",))  # type: ignore[return-value]

    @tools.tool(annotations=READ_ONLY)
    async def explain_query(sql: Sql, params: Params = None, database: DatabaseName = None) -> QueryPlan:
        """Show how SQLite would run a statement (EXPLAIN QUERY PLAN) and which full scans an index would avoid.

        Use when: a query is slow or you are choosing between formulations.
        Not for: running the query — use query.
        Returns: the plan as a tree of steps, and full_scans: each full table scan with the column an
        index would help on, when one is referenced in the statement.
        Limits: one statement; the statement is planned, not run.
        """
        return await databases.explain(database, sql, params)
