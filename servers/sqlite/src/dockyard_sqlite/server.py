"""The MCP face of dockyard-sqlite: thin tools, resources, a prompt and completions over :mod:`.databases`."""

from typing import Annotated, Any

import mcp.types as mt
from fastmcp import Context, FastMCP
from fastmcp.dependencies import CurrentContext
from pydantic import Field

from dockyard_shared import DESTRUCTIVE, READ_ONLY, InvalidArgument, PermissionDenied
from dockyard_shared.confirm import Confirmation, ask_to_confirm
from dockyard_shared.results import model_result
from dockyard_shared.server import new_server

from .database import Database
from .databases import DatabaseSet
from .models import ExecuteResult, QueryPlan, QueryResult, TableDescription, TableList
from .settings import Settings

__all__ = ["create_server"]

DatabaseName = Annotated[
    str | None,
    Field(description="Alias of the database to use; optional when the server serves exactly one."),
]
Sql = Annotated[str, Field(description="Exactly one SQL statement. Put values in params, not in the text.")]
Params = Annotated[
    dict[str, Any] | list[Any] | None,
    Field(description="Values bound to placeholders: a list for ?, an object for :name."),
]

INSTRUCTIONS = """Query SQLite databases safely. Start with list_tables, then describe_table for the tables
you need, then query with bound params (one statement per call; page with next_cursor). explain_query
shows the plan and missing indexes. Read-only unless the server was started with --allow-write."""


QUERY_DESCRIPTION = """Run one read-only SQL statement (SELECT, WITH, VALUES, EXPLAIN, read-only PRAGMA) and return a page of rows.

Use when: reading data — filtering, joining, aggregating.
Not for: changing data — use execute (only with --allow-write); query plans — use explain_query.
Returns: columns, rows (lists in column order), row_count, truncated, and next_cursor when more rows exist.
Blobs come back as a short hex preview. REGEXP is not available (use LIKE, GLOB or instr).
Limits: one statement per call; {default_rows} rows per page by default, {max_rows} at most, and about
{max_chars} characters per page; {timeout} ms per statement; one value at most 16 MiB. Pass next_cursor with the same sql, params and
database to get the next page. Writes, ATTACH and PRAGMA writes are refused by SQLite itself.
"""


def create_server(settings: Settings) -> FastMCP:
    databases = DatabaseSet(settings)
    limits = settings.limits
    server = new_server("dockyard-sqlite", instructions=INSTRUCTIONS, distribution="dockyard-sqlite")

    async def description(db: Database, table: str) -> TableDescription:
        """describe_table's answer: the kept one (checked on the event loop), else computed off it."""
        return db.kept_description(table) or await databases.run(lambda _: db.describe_table(table))

    @server.tool(annotations=READ_ONLY)
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
        db = databases.resolve(database)
        listing = db.kept_listing() or await databases.run(lambda _: db.table_listing())
        return TableList(
            database=db.alias,
            tables=listing.tables,
            total=listing.total,
            truncated=listing.truncated,
            note=listing.note,
        )

    @server.tool(annotations=READ_ONLY)
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
        return await description(databases.resolve(database), table)

    @server.tool(
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
        # The description (QUERY_DESCRIPTION) states this server's own limits, so it is formatted above.
        db = databases.resolve(database)
        page = await databases.run(
            lambda budget: db.query(sql, params, max_rows=max_rows, cursor=cursor, budget=budget)
        )
        # The rows are plain JSON values already (made so while the page was read).
        return model_result(page, plain_fields=("rows",))  # type: ignore[return-value]

    @server.tool(annotations=READ_ONLY)
    async def explain_query(sql: Sql, params: Params = None, database: DatabaseName = None) -> QueryPlan:
        """Show how SQLite would run a statement (EXPLAIN QUERY PLAN) and which full scans an index would avoid.

        Use when: a query is slow or you are choosing between formulations.
        Not for: running the query — use query.
        Returns: the plan as a tree of steps, and full_scans: each full table scan with the column an
        index would help on, when one is referenced in the statement.
        Limits: one statement; the statement is planned, not run.
        """
        db = databases.resolve(database)
        return await databases.run(lambda budget: db.explain(sql, params, budget=budget))

    if settings.allow_write:

        @server.tool(annotations=DESTRUCTIVE)
        async def execute(
            sql: Sql,
            params: Params = None,
            confirm: Annotated[
                bool,
                Field(description="Set true to drop or empty a table when the client cannot ask the user."),
            ] = False,
            database: DatabaseName = None,
            ctx: Context = CurrentContext(),
        ) -> ExecuteResult:
            """Run one statement that changes the database: INSERT, UPDATE, DELETE, CREATE/ALTER/DROP TABLE, CREATE INDEX.

            Use when: the user asked to change data or schema.
            Not for: reading — use query (it is read-only and pages results).
            Returns: rows_affected, last_row_id, and any RETURNING rows (up to 100).
            Limits: one statement per call, committed on success. Dropping a table or deleting every row
            asks the user to confirm (or needs confirm=true when the client cannot ask). ATTACH, VACUUM INTO,
            extensions, transaction control and PRAGMA writes are refused.
            """
            db = databases.resolve(database)
            effect = await databases.run(lambda budget: db.destructive_effect(sql, params, budget=budget))
            if effect and not confirm:
                answer = await ask_to_confirm(
                    ctx, f"Allow this statement on database {db.alias!r}? {effect}.\n\n{sql}"
                )
                if isinstance(answer, mt.InputRequiredResult):
                    return answer  # type: ignore[return-value]  # the client asks the user and retries
                if answer is Confirmation.DECLINED:
                    raise PermissionDenied(
                        f"The user declined the statement ({effect}); nothing was changed.",
                        next_step="Ask the user what they want instead; do not retry the same statement.",
                    )
                if answer is Confirmation.UNSUPPORTED:
                    raise InvalidArgument(
                        f"This statement is destructive ({effect}) and this client cannot ask the user to confirm.",
                        next_step="Ask the user in the conversation; if they agree, call execute again with confirm=true.",
                    )
            # Unless someone accepted a destructive effect, the real run is checked as the trial was:
            # another writer may have changed the data in between.
            unconfirmed = effect is None
            return await databases.run(
                lambda budget: db.execute(sql, params, budget=budget, refuse_emptying=unconfirmed)
            )

    # -- resources ---------------------------------------------------------------------------

    @server.resource("sqlite://{database}/schema", mime_type="application/sql")
    async def schema(database: str) -> str:
        """The full DDL of a database: every CREATE TABLE, VIEW, INDEX and TRIGGER."""
        db = databases.resolve(database)
        kept = db.kept_schema()
        return kept if kept is not None else await databases.run(lambda _: db.schema_ddl())

    @server.resource("sqlite://{database}/tables/{table}", mime_type="application/json")
    async def table_resource(database: str, table: str) -> dict:
        """One table's description and sample rows (as describe_table returns)."""
        return (await description(databases.resolve(database), table)).model_dump()

    @server.prompt
    def explore_database(database: str = "") -> str:
        """Walk through an unfamiliar database: its tables, how they relate, and what questions it can answer."""
        target = f"database {database!r}" if database else "the database"
        return (
            f"Explore {target} with the dockyard-sqlite tools, step by step:\n"
            "1. Call list_tables to see every table and view with its size.\n"
            "2. For the central tables (the largest, and those others refer to), call describe_table; "
            "note primary keys, foreign keys and indexes.\n"
            "3. Sketch how the tables relate (which columns join to which).\n"
            "4. Run a few small queries with query (LIMIT 10, bound params) to see typical values; "
            "use aggregates (count, min, max, group by) rather than reading many rows.\n"
            "5. If a query is slow, check it with explain_query.\n"
            "Finish with a short summary: what the database records, its main entities and relationships, "
            "and three questions it could answer, each with the SQL that answers it."
        )

    @server.completion
    async def complete(
        ref: mt.PromptReference | mt.ResourceTemplateReference,
        argument: mt.CompletionArgument,
        context: mt.CompletionContext | None,
    ) -> list[str]:
        prefix = argument.value.lower()
        if argument.name == "database":
            return [alias for alias in databases.aliases if alias.lower().startswith(prefix)]
        if argument.name == "table":
            chosen = (context.arguments or {}).get("database") if context else None
            try:
                db = databases.resolve(chosen)
            except Exception:
                return []
            return await databases.run(lambda _: db.table_names(prefix))
        return []

    return server
