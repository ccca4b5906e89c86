"""The MCP face of dockyard-sqlite: open the databases, install the toolsets, add resources, a prompt
and completions. Tools live in :mod:`.toolsets`; everything they call, in :mod:`.database_set`."""

from collections.abc import Mapping
from functools import partial
from pathlib import Path

from fastmcp import FastMCP

from dockyard_shared.observe import add_health_check
from dockyard_shared.server import complete_arguments, new_server
from dockyard_shared.toolsets import install, prompt
from dockyard_shared.warmup import after_initialize

from .database_set import DatabaseSet
from .settings import ACROSS, EXPORT, IMPORT, READ, SEARCH, WRITE, Settings
from .toolsets import across, export, imports, read, search, write
from .toolsets.long_queries import serve_tasks
from .workers.pool import WorkerPool

__all__ = ["create_server"]

INSTRUCTIONS = """Query SQLite databases safely. Start with list_tables (search_schema when there are many
tables), then describe_table for the tables you need, then query with bound params (one statement per call; page with next_cursor). explain_query
shows the plan and missing indexes. Read-only unless the server was started with --allow-write."""


def create_server(settings: Settings, *, pool: WorkerPool | None = None) -> FastMCP:
    """The server; ``pool``, when given, is the worker pool the entry point started before its imports."""
    server = new_server("dockyard-sqlite", instructions=INSTRUCTIONS, distribution="dockyard-sqlite")
    databases = DatabaseSet(settings.databases, settings.limits, pool=pool)
    task = serve_tasks(server, databases, settings.task_backend) if settings.tasks else None
    served = install(
        server,
        settings.exposure,
        {
            READ: lambda tools: read.register(tools, databases, task=task),
            WRITE: lambda tools: write.register(tools, databases, settings.exposure),
            SEARCH: lambda tools: search.register(tools, databases),
            ACROSS: lambda tools: across.register(tools, databases, task=task),
            EXPORT: lambda tools: export.register(tools, databases, settings.export_dir, task=task),
            IMPORT: lambda tools: imports.register(tools, databases, settings.import_dir),
        },
    )
    # Writer connections only where a tool can use them.
    databases.open(writable=bool({"execute", "import_csv"} & set(served)), create=settings.create)
    after_initialize(server, databases.warm_up)
    register_resources(server, databases)
    if "query" in served:  # its results' table, for hosts that render MCP Apps
        from .views import register_views

        register_views(server)
    for spec in settings.databases:
        add_health_check(
            server, f"database {spec.alias or spec.path.name}", partial(readable_database, spec.path)
        )
    return server


SQLITE_HEADER = b"SQLite format 3\0"


def readable_database(path: Path) -> str:
    """``/health``: the served file is still there and still reads as a SQLite database."""
    with path.open("rb") as file:
        head = file.read(len(SQLITE_HEADER))
    if head and head != SQLITE_HEADER:
        raise ValueError(f"{path} no longer reads as a SQLite database")
    return f"{path} readable"


def register_resources(server: FastMCP, databases: DatabaseSet) -> None:
    @server.resource("sqlite://{database}/schema", mime_type="application/sql")
    async def schema(database: str) -> str:
        """The full DDL of a database: every CREATE TABLE, VIEW, INDEX and TRIGGER."""
        return await databases.schema(database)

    @server.resource("sqlite://{database}/tables/{table}", mime_type="application/json")
    async def table_resource(database: str, table: str) -> dict:
        """One table's description and sample rows (as describe_table returns)."""
        return (await databases.description(database, table)).model_dump()

    @prompt(server)
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

    async def complete(argument: str, value: str, given: Mapping[str, str]) -> list[str]:
        prefix = value.lower()
        if argument == "database":
            return [alias for alias in databases.aliases if alias.lower().startswith(prefix)]
        if argument == "table":
            chosen = given.get("database")
            try:
                databases.resolve(chosen)
            except Exception:
                return []  # no such database (yet): nothing to complete
            return await databases.table_names(chosen, prefix)
        return []

    complete_arguments(server, complete)
