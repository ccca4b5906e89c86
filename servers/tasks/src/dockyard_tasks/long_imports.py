"""``--tasks``: the MCP tasks extension on the tasks server, for import_project of a large document.

An import of a few hundred tasks is answered in place; from :data:`import_steps.LARGE_IMPORT` task entries
on it runs as a task (for a client that declared the extension, 2026-07-28), its progress the task's status
message, ``tasks/cancel`` rolling it back (import_steps.py). With ``--tasks-url redis://…`` the task state
is shared by the replicas on the same database: the queue is named after the database (without its
credentials) unless ``--tasks-queue`` names it, so any replica polls or cancels a task another started, and
tasks stay scoped to the caller's actor token (dockyard_shared.long_calls).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .import_steps import is_large_import

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from .settings import Settings

__all__ = ["serve_tasks"]


def serve_tasks(server: FastMCP, settings: Settings) -> Any:
    """Add the tasks extension to ``server``; import_project's task configuration."""
    from dockyard_shared.long_calls import LongCalls, task_config  # pydocket: only with --tasks

    long_calls = LongCalls("dockyard-tasks", backend=settings.task_backend, deployment=settings.database_url)

    async def large(arguments: Mapping[str, Any]) -> bool:
        return is_large_import(arguments)

    long_calls.decide("import_project", large)
    long_calls.report_health(server)
    server.add_extension(long_calls)
    return task_config()
