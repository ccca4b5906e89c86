"""The ``export`` toolset: export_csv, off by default (--export-dir turns it on). It writes files, only in
the operator's export folder, and never overwrites one."""

from pathlib import Path
from typing import Annotated

from pydantic import Field

from dockyard_shared import ADDITIVE, PermissionDenied
from dockyard_shared.schema import optional
from dockyard_shared.toolsets import ToolRegistrar

from ..database_set import DatabaseSet
from ..models import ExportResult
from .arguments import DatabaseName, Params

__all__ = ["register"]


def register(tools: ToolRegistrar, databases: DatabaseSet, folder: Path | None) -> None:
    max_bytes = databases.limits.max_export_mb * 1024 * 1024

    @tools.tool(annotations=ADDITIVE)
    async def export_csv(
        file: Annotated[str, Field(description="Plain name, .csv or .tsv")],
        sql: Annotated[str | None, optional("string", "Read-only; or pass table")] = None,
        table: Annotated[str | None, optional("string")] = None,
        params: Params = (),
        database: DatabaseName = None,
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
        return await databases.export(
            database, file=file, sql=sql, table=table, params=params, folder=folder, max_bytes=max_bytes
        )
