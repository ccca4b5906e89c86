"""The ``across`` toolset: query_across, one read-only statement over every served database. Read-only."""

from typing import Annotated, Any

from fastmcp import Context
from fastmcp.dependencies import CurrentContext
from pydantic import Field, WithJsonSchema

from dockyard_shared import READ_ONLY
from dockyard_shared.results import model_result
from dockyard_shared.schema import optional
from dockyard_shared.toolsets import ToolRegistrar

from ..database_set import DatabaseSet
from ..models import QueryResult
from .arguments import Params, Sql
from .long_queries import as_called

__all__ = ["register"]


def register(tools: ToolRegistrar, databases: DatabaseSet, *, task: Any = None) -> None:
    """``task``: query_across's task configuration when the server serves the tasks extension (--tasks)."""
    limits = databases.limits

    @tools.tool(annotations=READ_ONLY, task=task)
    async def query_across(
        sql: Sql,
        params: Params = (),
        max_rows: Annotated[
            int, Field(ge=1), WithJsonSchema({"type": "integer", "minimum": 1, "maximum": limits.max_rows})
        ] = limits.default_rows,
        cursor: Annotated[str | None, optional("string", "next_cursor of the previous page.")] = None,
        ctx: Context = CurrentContext(),
    ) -> QueryResult:
        """Run one read-only statement over all served databases: tables as alias.table.

        Use when: joining or comparing tables of two databases.
        Not for: one database (query).
        Returns: as query. Quote an alias with '-': "my-db".t.
        Limits: as query; first 10 databases, attached read-only; ATTACH refused.
        """
        page = await as_called(  # as a task (--tasks) when it may run long
            ctx,
            limits.task_timeout_ms,
            lambda as_task: databases.query_across(
                sql, params, max_rows=max_rows, cursor=cursor, as_task=as_task
            ),
        )
        return model_result(page, plain_fields=("rows",))  # type: ignore[return-value]
