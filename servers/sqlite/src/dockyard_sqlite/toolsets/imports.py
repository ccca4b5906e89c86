"""The ``import`` toolset: import_csv, off by default (--allow-write with --import-dir). It creates a new
table from a file of the operator's import folder; it never changes an existing table."""

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from dockyard_shared import ADDITIVE, PermissionDenied
from dockyard_shared.toolsets import ToolRegistrar

from ..database_set import DatabaseSet
from ..models import ImportResult
from .arguments import DatabaseName

__all__ = ["register"]


def register(tools: ToolRegistrar, databases: DatabaseSet, folder: Path | None) -> None:
    @tools.tool(annotations=ADDITIVE)
    async def import_csv(
        file: Annotated[str, Field(description="Plain name, .csv or .tsv")],
        table: Annotated[str, Field(description="New table name")],
        types: Literal["infer", "text"] = "infer",
        database: DatabaseName = None,
    ) -> ImportResult:
        """Make a new table from a CSV/TSV file in the import folder; line 1 names the columns.

        Use when: loading a user's file.
        Not for: existing tables (execute).
        Returns: rows, columns, types. infer: INTEGER/REAL where every cell fits (empty: NULL),
        else TEXT; text: all TEXT.
        Limits: --max-write-mb; 1,000 columns; one transaction.
        """
        if folder is None:
            raise PermissionDenied(
                "Import is not enabled on this server: no import folder was named.",
                next_step="Ask the user to restart the server with --allow-write --import-dir <folder>.",
            )
        return await databases.import_csv(database, file=file, table=table, types=types, folder=folder)
