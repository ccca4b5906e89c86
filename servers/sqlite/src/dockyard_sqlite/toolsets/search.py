"""The ``search`` toolset: search_schema, the catalog by name and column type, in levels. Read-only."""

from typing import Annotated, Literal

from dockyard_shared import READ_ONLY
from dockyard_shared.schema import optional
from dockyard_shared.toolsets import ToolRegistrar

from ..database_set import DatabaseSet
from ..models import SchemaSearch
from .arguments import DatabaseName

__all__ = ["register"]


def register(tools: ToolRegistrar, databases: DatabaseSet) -> None:
    @tools.tool(annotations=READ_ONLY)
    async def search_schema(
        pattern: Annotated[str | None, optional("string", "Name substring, or glob * ?")] = None,
        column_type: Annotated[str | None, optional("string", "Type contains, e.g. INT")] = None,
        detail: Literal["names", "summary", "full"] = "names",
        offset: int = 0,
        database: DatabaseName = None,
    ) -> SchemaSearch:
        """Find tables, views and columns by name or type, in levels.

        Use when: many tables; where does a column live.
        Not for: one known table (describe_table).
        Returns: names ('t' or 't.col'), summary (+column_count, matching 'col TYPE') or full
        (+all columns, foreign keys); total, next_offset.
        Limits: 200/50/10 tables a page; first 10,000 tables.
        """
        return await databases.search_schema(database, pattern, column_type, detail, offset)
