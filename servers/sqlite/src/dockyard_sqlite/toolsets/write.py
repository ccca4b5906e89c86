"""The ``write`` toolset: execute, off by default (--allow-write). A destructive statement asks the user."""

import mcp.types as mt
from fastmcp import Context
from fastmcp.dependencies import CurrentContext

from dockyard_shared import DESTRUCTIVE, PermissionDenied
from dockyard_shared.confirm import Confirm, require_confirmation
from dockyard_shared.toolsets import Exposure, ToolRegistrar

from ..database_set import DatabaseSet
from ..models import ExecuteResult
from .arguments import DatabaseName, Params, Sql

__all__ = ["register"]


def register(tools: ToolRegistrar, databases: DatabaseSet, exposure: Exposure) -> None:
    @tools.tool(annotations=DESTRUCTIVE)
    async def execute(
        sql: Sql,
        params: Params = (),
        confirm: Confirm = False,
        database: DatabaseName = None,
        ctx: Context = CurrentContext(),
    ) -> ExecuteResult:
        """Run one statement that changes the database: INSERT, UPDATE, DELETE, CREATE/ALTER/DROP TABLE, CREATE INDEX.

        Use when: the user asked to change data or schema.
        Not for: reading (query).
        Returns: rows_affected, last_row_id, RETURNING rows (first 100).
        Limits: committed on success; grows the file by at most --max-write-mb. Dropping
        a table, view, index, trigger or column, emptying a table or changing all its rows asks the user.
        Refused: ATTACH, VACUUM INTO, extensions, transactions, PRAGMA writes, TEMP objects.
        """
        effect = await databases.destructive_effect(database, sql, params)
        if effect:
            pending = await confirmed_by_user(
                ctx, databases.resolve(database).alias, sql, effect, confirm, exposure
            )
            if pending is not None:
                return pending  # type: ignore[return-value]  # the client asks the user and retries
        return await databases.execute(database, sql, params, confirmed=effect is not None)


async def confirmed_by_user(
    ctx: Context, alias: str, sql: str, effect: str, confirm: bool, exposure: Exposure
) -> mt.InputRequiredResult | None:
    """The shared confirmation flow, its refusals saying what the statement would have done."""
    try:
        return await require_confirmation(
            ctx,
            f"Allow this statement on database {alias!r}? {effect}.\n\n{sql}",
            confirm=confirm,
            exposure=exposure,
            declined=f"The user declined the statement ({effect}); nothing was changed.",
        )
    except PermissionDenied as refused:
        if effect in refused.what:
            raise
        raise PermissionDenied(
            f"{refused.what} This statement: {effect}.", next_step=refused.next_step
        ) from None
