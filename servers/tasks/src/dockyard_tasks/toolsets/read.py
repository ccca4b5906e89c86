"""The read toolset: projects, tasks, one task, the next task. Changes nothing (the change feed and exports
are in the manage toolset).

The store is read in worker threads only (``run_in_thread(lambda: store...)``): the first read may open it
(``opening.py``), which the event loop must not wait for."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from dockyard_shared import READ_ONLY
from dockyard_shared.offload import run_in_thread
from dockyard_shared.results import model_result
from dockyard_shared.toolsets import ToolRegistrar

from ..actors import Actors
from ..models import NextTask, ProjectList, TaskDetail, TaskPage
from ..rules import check_status, check_workstream, parse_date, parse_project_key, parse_task_id
from . import board
from .params import Status, StatusOrNone, TaskId

if TYPE_CHECKING:
    from ..store import TaskStore

__all__ = ["register"]


def _date(value: str | None, field: str) -> date | None:
    return parse_date(value, field=field) if value else None


def register(tools: ToolRegistrar, store: TaskStore, actors: Actors) -> None:
    @tools.tool(annotations=READ_ONLY)
    async def list_projects() -> ProjectList:
        """List the projects with their task counts.

        Use when: you need a project key.
        Not for: tasks (list_tasks); totals (project://tasks/summary).
        Returns: key, name, description, tasks, open, created_at per project.
        Limits: the first 200 by key.
        """
        return await run_in_thread(lambda: store.list_projects())

    @tools.tool(annotations=READ_ONLY)
    async def list_tasks(
        status: StatusOrNone = None,
        assignee: str = "",
        project: str = "",
        statuses: Annotated[list[Status], Field(description="Any of these (with status).")] = [],  # noqa: B006
        label: str = "",
        workstream: str = "",
        text: Annotated[str, Field(description="In the title or description.", max_length=200)] = "",
        due_before: Annotated[str, Field(description="YYYY-MM-DD, exclusive.")] = "",
        due_after: Annotated[str, Field(description="YYYY-MM-DD, exclusive.")] = "",
        parent: Annotated[str, Field(description="Its subtasks only.")] = "",
        blocking: str = "",
        blocked_by: str = "",
        sort: Literal["created", "priority", "due", "updated"] = "created",
        fields: Literal["compact", "full"] = "compact",
        limit: Annotated[int, Field(ge=1, le=200)] = 50,
        cursor: Annotated[str, Field(description="From next_cursor.")] = "",
    ) -> TaskPage:
        """List the tasks that match every filter given, a page at a time.

        Use when: finding tasks by field, parent, blocking=ID (its blockers) or blocked_by=ID (what it blocks).
        Not for: comments, history (get_task); counts (project://tasks/summary).
        Returns: tasks (id, title, status, priority, assignee, due; fields=full: all), has_more, next_cursor.
        Limits: limit rows a page; sort=updated is newest first.
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
            workstream=check_workstream(workstream),
        )
        page = await run_in_thread(
            lambda: store.list_tasks(query, limit=limit, full=fields == "full", cursor=cursor or None)
        )
        return model_result(page, exclude_none=True)  # type: ignore[return-value]

    @tools.tool(annotations=READ_ONLY)
    async def get_task(task_id: TaskId) -> TaskDetail:
        """Read one task in full: fields, relations, comments, history.

        Use when: you need its details, or its version before an update.
        Not for: many tasks (list_tasks).
        Returns: the task; open_blockers; history (what, old → new, when, who).
        Limits: the latest 20 comments and changes; the first 50 subtasks, blockers (open first), blocked tasks.
        """
        return await run_in_thread(lambda: store.get_task(task_id))

    @tools.tool(annotations=READ_ONLY)
    async def next_task(
        assignee: Annotated[str, Field(description="Default: you.")] = "",
        project: str = "",
        workstream: str = "",
    ) -> NextTask:
        """Pick the task to start next: the highest-priority todo task with no open blocker.

        Use when: deciding what to start.
        Not for: a backlog (list_tasks sort=priority).
        Returns: task, reason, in_progress; skipped_blocked, unchecked_criteria, next_step if any.
        Limits: ties go to the earliest due date, then the oldest task.
        """
        who = assignee or actors.current()
        found = await run_in_thread(lambda: store.next_task(who, project or None, workstream or None))
        return model_result(found, exclude_defaults=True)  # type: ignore[return-value]

    board.register(tools, store)  # show_board and its view (toolsets/board.py)
