"""Resources and completions: the summary (the seed's URI), one per project, one per task.

* ``project://tasks/summary`` — totals by status, assignee and project, overdue, blocked;
* ``project://{key}`` — the same for one project, with the project itself (each project is also listed,
  so a client sees projects come and go);
* ``task://{task_id}`` — one task with its comments and history, as get_task returns it;
* ``project://{key}/export`` — the whole export of a project in one document (what export_project pages
  through), up to 250,000 characters: the target of export_project's resource link.

Completions offer project keys, task ids, assignees and statuses from the data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pydantic_core
from fastmcp import FastMCP
from fastmcp.resources import Resource
from fastmcp.server.providers import Provider

from dockyard_shared import LimitExceeded
from dockyard_shared.offload import run_in_thread
from dockyard_shared.server import complete_arguments

from .notify import SUMMARY_URI, project_uri
from .rules import STATUSES

if TYPE_CHECKING:  # the store may open after initialize (opening.py): it is read in worker threads only
    from .store import TaskStore

__all__ = ["EXPORT_RESOURCE_CHARS", "export_uri", "register"]

JSON = "application/json"
# A host reads a linked export to save or attach it, not as a tool reply; at most 3 bytes a character, it
# stays under the MCP SDK's 1 MiB bound on one message over HTTP.
EXPORT_RESOURCE_CHARS = 250_000


def export_uri(key: str) -> str:
    return f"project://{key}/export"


def whole_export(store: TaskStore, key: str) -> dict:
    """Every page of ``key``'s export as one document, or LimitExceeded past EXPORT_RESOURCE_CHARS."""
    page = store.export_project(key, None)
    document = {"format": page.format, "project": page.project, "tasks": list(page.tasks)}
    size = len(pydantic_core.to_json(document))
    while page.next_cursor:
        page = store.export_project(key, page.next_cursor)
        document["tasks"].extend(page.tasks)
        size += len(pydantic_core.to_json(page.tasks))
        if size > EXPORT_RESOURCE_CHARS:
            raise LimitExceeded(
                f"The export of {key} is larger than the {EXPORT_RESOURCE_CHARS:,} characters one read holds.",
                next_step="Page through it with export_project (next_cursor), concatenating the tasks.",
            )
    return document


LISTED_PROJECTS = 200  # project resources listed; every project can be read through the template


class ProjectResources(Provider):
    """Lists ``project://KEY`` for each project, read from the database each time (any replica's).

    Only the listing comes from here: a read of ``project://KEY`` is answered by the template, so reading
    any resource never lists the projects first (FastMCP asks providers on every read).
    """

    def __init__(self, store: TaskStore) -> None:
        super().__init__()
        self.store = store

    async def _list_resources(self) -> Sequence[Resource]:
        keys = await run_in_thread(lambda: self.store.project_keys(limit=LISTED_PROJECTS))
        return [
            Resource.from_function(
                _project_reader(self.store, key),
                uri=project_uri(key),
                name=f"project {key}",
                description=f"Summary of project {key}: totals by status and assignee, overdue, blocked.",
                mime_type=JSON,
            )
            for key in keys
        ]

    async def _get_resource(self, uri: str, version=None) -> Resource | None:
        return None

    async def get_tasks(self) -> Sequence[Resource]:
        # FastMCP asks every provider for background-task components before it serves (to check that a
        # task engine is installed), which would list the projects, opening the store before initialize
        # (opening.py). These reads are never background tasks.
        return []


def _project_reader(store: TaskStore, key: str):
    async def read() -> dict:
        return await project_summary(store, key)

    return read


async def project_summary(store: TaskStore, key: str) -> dict:
    def work() -> dict:
        return {
            "project": store.project(key).model_dump(),
            **store.summary(key).model_dump(exclude_none=True),
        }

    return await run_in_thread(work)


def register(server: FastMCP, store: TaskStore) -> None:
    @server.resource(SUMMARY_URI, mime_type=JSON)
    async def summary() -> dict:
        """Every task counted: total, by_status, by_assignee, by_project, overdue, blocked."""
        return (await run_in_thread(lambda: store.summary())).model_dump(exclude_none=True)

    @server.resource("project://{key}", mime_type=JSON)
    async def project(key: str) -> dict:
        """One project and its summary: totals by status and assignee, overdue, blocked."""
        return await project_summary(store, key)

    @server.resource("project://{key}/export", mime_type=JSON)
    async def export(key: str) -> dict:
        """A project's whole export in one document (up to 250,000 characters; beyond: export_project)."""
        return await run_in_thread(lambda: whole_export(store, key))

    @server.resource("task://{task_id}", mime_type=JSON)
    async def task(task_id: str) -> dict:
        """One task in full, with its comments and recent history (as get_task returns it)."""
        return (await run_in_thread(lambda: store.get_task(task_id))).model_dump()

    server.add_provider(ProjectResources(store))

    async def complete(argument: str, typed: str, given: Mapping[str, str]) -> list[str]:
        value = typed[:40]
        if argument in ("key", "project"):
            return await run_in_thread(lambda: store.project_keys(value))
        if argument in ("task_id", "blocked_by", "blocking", "parent"):
            return await run_in_thread(lambda: store.task_ids(value))
        if argument == "assignee":
            return await run_in_thread(lambda: store.assignees(value))
        if argument in ("status", "new_status"):
            return [s for s in STATUSES if s.startswith(value.lower())]
        return []

    complete_arguments(server, complete)
