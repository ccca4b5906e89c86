"""The read toolset: projects, tasks, the next task, the change feed and exports. Changes nothing.

The store is read in worker threads only (``run_in_thread(lambda: store...)``): the first read may open it
(``opening.py``), which the event loop must not wait for."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from dockyard_shared import READ_ONLY
from dockyard_shared.offload import run_in_thread
from dockyard_shared.results import linked_result, model_result
from dockyard_shared.toolsets import ToolRegistrar

from ..actors import Actors
from ..models import ChangePage, NextTask, ProjectExport, ProjectList, TaskDetail, TaskPage
from ..resources import EXPORT_RESOURCE_CHARS, export_uri
from ..rules import check_status, parse_date, parse_project_key, parse_task_id
from .params import ProjectKey, Status, TaskId

if TYPE_CHECKING:
    from ..store import TaskStore

__all__ = ["register"]


def _date(value: str | None, field: str) -> date | None:
    return parse_date(value, field=field) if value else None


def register(tools: ToolRegistrar, store: TaskStore, actors: Actors) -> None:
    @tools.tool(annotations=READ_ONLY)
    async def list_projects() -> ProjectList:
        """List the projects with their task counts.

        Use when: starting out, or you need a project key.
        Not for: tasks (list_tasks) or totals (the project://tasks/summary resource).
        Returns: key, name, description, tasks, open, created_at per project.
        Limits: the first 200 projects by key.
        """
        return await run_in_thread(lambda: store.list_projects())

    @tools.tool(annotations=READ_ONLY)
    async def list_tasks(
        status: Status | None = None,
        assignee: str = "",
        project: Annotated[str, Field(description="A project key, e.g. WEB.")] = "",
        statuses: Annotated[list[Status], Field(description="Any of these (with status).")] = [],  # noqa: B006
        label: str = "",
        text: Annotated[str, Field(description="Words in the title or description.", max_length=200)] = "",
        due_before: Annotated[str, Field(description="YYYY-MM-DD, exclusive.")] = "",
        due_after: Annotated[str, Field(description="YYYY-MM-DD, exclusive.")] = "",
        parent: Annotated[str, Field(description="Only subtasks of this task.")] = "",
        blocking: str = "",
        blocked_by: str = "",
        sort: Literal["created", "priority", "due", "updated"] = "created",
        fields: Literal["compact", "full"] = "compact",
        limit: Annotated[int, Field(ge=1, le=200)] = 50,
        cursor: Annotated[str, Field(description="next_cursor of the previous page.")] = "",
    ) -> TaskPage:
        """List tasks matching filters (all combined with AND), a page at a time.

        Use when: finding tasks by their fields, parent, blocking=ID (its blockers) or blocked_by=ID
        (what it blocks).
        Not for: one task's comments and history (get_task); counts (project://tasks/summary).
        Returns: tasks (id, title, status, priority, assignee, due; fields=full adds the rest),
        has_more, next_cursor.
        Limits: 50 rows a page (≤ 200), ~60,000 characters; next_cursor + same filters: more.
        sort=updated is newest first.
        """
        from ..store import TaskFilter  # imported by the store's opening, at the latest (opening.py)

        statuses_wanted = tuple(dict.fromkeys([*([status] if status else []), *(statuses or [])]))
        query = TaskFilter(
            project=parse_project_key(project) if project else None,
            statuses=tuple(check_status(s) for s in statuses_wanted),
            assignee=assignee or None,
            label=label or None,
            text=text or None,
            due_before=_date(due_before, "due_before"),
            due_after=_date(due_after, "due_after"),
            parent=parse_task_id(parent) if parent else None,
            blocking=parse_task_id(blocking) if blocking else None,
            blocked_by=parse_task_id(blocked_by) if blocked_by else None,
            sort=sort,
        )
        page = await run_in_thread(
            lambda: store.list_tasks(query, limit=limit, full=fields == "full", cursor=cursor or None)
        )
        return model_result(page, exclude_none=True)  # type: ignore[return-value]

    @tools.tool(annotations=READ_ONLY)
    async def get_task(task_id: TaskId) -> TaskDetail:
        """Read one task in full: fields, relations, comments, history.

        Use when: you need a task's details, or its version before update_task.
        Not for: many tasks (list_tasks).
        Returns: the task; open_blockers (not yet done); history: what, old → new, when, who.
        Limits: the latest 20 comments, changes; the first 50 subtasks, blockers (open first),
        blocked tasks (list_tasks lists all).
        """
        return await run_in_thread(lambda: store.get_task(task_id))

    @tools.tool(annotations=READ_ONLY)
    async def next_task(
        assignee: Annotated[str, Field(description="Whose next task (default: you).")] = "",
        project: Annotated[str, Field(description="Only this project.")] = "",
    ) -> NextTask:
        """Pick the task to work on next: the highest-priority todo task with no open blocker.

        Use when: deciding what to start.
        Not for: listing a backlog (list_tasks sort=priority).
        Returns: task (or null), reason (why it was picked), in_progress, skipped_blocked.
        Limits: ties go to the earliest due date, then the oldest task.
        """
        who = assignee or actors.current()
        return await run_in_thread(lambda: store.next_task(who, project or None))

    @tools.tool(annotations=READ_ONLY)
    async def changes_since(
        cursor: Annotated[
            str | None,
            Field(description="next_cursor of the last call, or a summary's revision; none: from the start."),
        ] = None,
        project: ProjectKey | None = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 100,
    ) -> ChangePage:
        """List every change after a cursor, oldest first, whoever made it.

        Use when: catching up on what changed (some clients drop resource notifications).
        Not for: one task's history (get_task).
        Returns: changes (revision, at, actor, task, version, action, field, old, new), next_cursor.
        Limits: 100 changes a call by default, 200 at most, ~60,000 characters; no cursor starts at the first change.
        """
        page = await run_in_thread(
            lambda: store.changes_since(cursor or None, project=project or None, limit=limit)
        )
        return model_result(page, exclude_none=True)  # type: ignore[return-value]

    @tools.tool(annotations=READ_ONLY)
    async def export_project(
        project: ProjectKey,
        cursor: Annotated[str, Field(description="next_cursor of the previous page.")] = "",
    ) -> ProjectExport:
        """Export a project as JSON: every task with its fields, comments and history.

        Use when: backing up or moving a project (import_project reads it back exactly).
        Not for: reading tasks (list_tasks, get_task).
        Returns: format, project, tasks, next_cursor while more follow.
        Limits: 200 tasks or ~60,000 characters a page; concatenate the pages' tasks.
        """
        page = await run_in_thread(lambda: store.export_project(project, cursor or None))
        # The documents are plain JSON already, and their nulls are part of the format.
        if not page.next_cursor:
            return model_result(page, plain_fields=("project", "tasks"), exclude_none=True)  # type: ignore[return-value]
        # More pages follow: a host that reads resource links can save or attach the whole export at once.
        key = page.project["key"]
        return linked_result(  # type: ignore[return-value]
            page,
            uri=export_uri(key),
            name=f"{key} export",
            description=f"The whole export of {key} in one document (up to {EXPORT_RESOURCE_CHARS:,} characters)",
            mime_type="application/json",
            plain_fields=("project", "tasks"),
            exclude_none=True,
        )
