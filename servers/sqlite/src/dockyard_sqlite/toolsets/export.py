"""The ``export`` toolset: export_csv, off by default (--export-dir turns it on). It writes files, only in
the operator's export folder, and never overwrites one."""

from pathlib import Path
from typing import Annotated, Any

from fastmcp import Context
from fastmcp.dependencies import CurrentContext
from pydantic import Field

from dockyard_shared import ADDITIVE, PermissionDenied
from dockyard_shared.schema import optional
from dockyard_shared.toolsets import ToolRegistrar

from ..database_set import DatabaseSet
from ..models import ExportResult
from .arguments import DatabaseName, Params
from .long_queries import as_called

__all__ = ["register"]


def register(tools: ToolRegistrar, databases: DatabaseSet, folder: Path | None, *, task: Any = None) -> None:
    """``task``: export_csv's task configuration when the server serves the tasks extension (--tasks)."""
    max_bytes = databases.limits.max_export_mb * 1024 * 1024

    @tools.tool(annotations=ADDITIVE, task=task)
    async def export_csv(
        file: Annotated[str, Field(description="Plain name, .csv or .tsv")],
        sql: Annotated[str | None, optional("string", "Read-only; or pass table")] = None,
        table: Annotated[str | None, optional("string")] = None,
        params: Params = (),
        database: DatabaseName = None,
        ctx: Context = CurrentContext(),
    ) -> ExportResult:
        """Write a query's or table's rows to a CSV/TSV file in the export folder.

        Use when: the user wants a file.
        Not for: reading rows (query).
        Returns: path, rows, bytes; header row, blobs hex, cells starting = + - @ prefixed '.
        Never overwrites (fresh name).
        Limits: --max-export-mb; time limit; a partial file is removed.
        """
        if folder is None:
            raise PermissionDenied(
                "Export is not enabled on this server: no export folder was named.",
                next_step="Ask the user to restart the server with --export-dir <folder>.",
            )

        return await as_called(  # as a task (--tasks) when it may run long
            ctx,
            databases.limits.task_timeout_ms,
            lambda as_task: databases.export(
                database,
                file=file,
                sql=sql,
                table=table,
                params=params,
                folder=folder,
                max_bytes=max_bytes,
                as_task=as_task,
            ),
        )
