"""The manage toolset (off by default): full edits, bulk creation, projects, dependencies, the change feed,
export and import, and delete (after the user confirms).

The everyday job (find, read, start, finish, comment, add a task) needs only the read and write toolsets,
which every turn's tool listing pays for; these tools are served with ``--toolsets all`` (or ``manage``).
As elsewhere, the store is used in worker threads only."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

from fastmcp import Context
from fastmcp.dependencies import CurrentContext
from pydantic import BaseModel, Field

from dockyard_shared import ADDITIVE, DESTRUCTIVE, READ_ONLY
from dockyard_shared.confirm import Confirm, require_confirmation
from dockyard_shared.offload import run_in_thread
from dockyard_shared.progress import report_progress
from dockyard_shared.results import linked_result, model_result
from dockyard_shared.schema import optional
from dockyard_shared.toolsets import Exposure, ToolRegistrar
from dockyard_shared.words import plural

from ..actors import Actors
from ..drafts import TaskChanges, TaskDraft
from ..import_steps import run_import
from ..models import (
    BatchResult,
    ChangePage,
    DeleteResult,
    DependencyResult,
    ImportResult,
    MoveResult,
    ProjectExport,
    ProjectInfo,
    UpdateResult,
)
from ..resources import EXPORT_RESOURCE_CHARS, export_uri
from .params import (
    ExpectedVersion,
    ExportDocumentArgument,
    Force,
    Priority,
    PriorityOrNone,
    ProjectKey,
    Status,
    StatusOrNone,
    TaskId,
    TextOrNone,
)

if TYPE_CHECKING:
    from ..store import TaskStore

__all__ = ["register"]


class NewTask(BaseModel):
    """One task of a create_tasks batch."""

    project: str
    title: str
    description: str = ""
    status: Status = "todo"
    priority: Priority = "medium"
    assignee: str = ""
    labels: list[str] = []
    due: str = ""
    parent: str = Field(default="", description="A task id, or @N for item N of this batch.")
    blocked_by: list[str] = Field(default=[], description="Task ids or @N.")

    def draft(self) -> TaskDraft:
        return TaskDraft(
            project=self.project,
            title=self.title,
            description=self.description,
            status=self.status,
            priority=self.priority,
            assignee=self.assignee or None,
            labels=self.labels,
            due=self.due or None,
            parent=self.parent or None,
            blocked_by=self.blocked_by,
        )


def register(
    tools: ToolRegistrar, store: TaskStore, actors: Actors, exposure: Exposure, *, task: Any = None
) -> None:
    """``task``: import_project's task configuration when the server serves MCP tasks (long_imports.py)."""

    @tools.tool(annotations=READ_ONLY)
    async def changes_since(
        cursor: Annotated[str | None, optional("string", "A next_cursor, or a summary's revision.")] = None,
        project: Annotated[str | None, optional("string", "E.g. WEB.")] = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 100,
    ) -> ChangePage:
        """List every change after a cursor, oldest first, by anyone.

        Use when: catching up on what changed (some clients drop resource notifications).
        Not for: one task's history (get_task).
        Returns: changes (revision, at, actor, task, version, action, field, old, new), next_cursor.
        Limits: limit changes a call; no cursor starts at the first change.
        """
        page = await run_in_thread(
            lambda: store.changes_since(cursor or None, project=project or None, limit=limit)
        )
        return model_result(page, exclude_none=True)  # type: ignore[return-value]

    @tools.tool(annotations=READ_ONLY)
    async def export_project(
        project: ProjectKey,
        cursor: Annotated[str, Field(description="From next_cursor.")] = "",
    ) -> ProjectExport:
        """Export a project as JSON: every task with its fields, comments and history.

        Use when: backing up or moving a project (import_project reads it back).
        Not for: reading tasks (list_tasks, get_task).
        Returns: format, project, tasks, next_cursor while more follow.
        Limits: 200 tasks a page; concatenate the pages' tasks.
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

    @tools.tool(annotations=ADDITIVE)
    async def create_project(
        key: Annotated[str, Field(description="2–10 letters/digits, e.g. WEB.")],
        name: str,
        description: str = "",
    ) -> ProjectInfo:
        """Create a project; its tasks are numbered KEY-1, KEY-2, …

        Use when: starting a new body of work.
        Not for: adding tasks (create_task).
        Returns: the project.
        Limits: keys are unique; name ≤ 100 characters.
        """
        actor = actors.current()
        return await run_in_thread(lambda: store.create_project(key, name, description, actor=actor))

    @tools.tool(annotations=ADDITIVE)
    async def create_tasks(tasks: list[NewTask]) -> BatchResult:
        """Create several tasks in one transaction: all or none.

        Use when: planning work; items refer to each other as @0, @1… in parent and blocked_by.
        Not for: one task (create_task).
        Returns: created: index, id, title per item.
        Limits: 100 tasks a call; an invalid item refuses the batch, naming every bad item.
        """
        drafts = [task.draft() for task in tasks]
        actor = actors.current()
        return await run_in_thread(lambda: store.create_tasks(drafts, actor=actor))

    @tools.tool(annotations=ADDITIVE)
    async def update_task(
        task_id: TaskId,
        title: TextOrNone = None,
        description: TextOrNone = None,
        status: StatusOrNone = None,
        priority: PriorityOrNone = None,
        assignee: Annotated[str | None, optional("string", '"" unassigns.')] = None,
        labels: Annotated[
            list[str] | None, optional("array", "Replaces all.", items={"type": "string"})
        ] = None,
        due: Annotated[str | None, optional("string", 'YYYY-MM-DD; "" clears.')] = None,
        parent: Annotated[str | None, optional("string", 'Task id; "" detaches.')] = None,
        expected_version: ExpectedVersion = None,
        force: Force = False,
    ) -> UpdateResult:
        """Change some fields of a task; the others stay.

        Use when: editing a task.
        Not for: status alone (update_task_status), comments, blockers.
        Returns: the task, changed (fields), version.
        Limits: status moves as update_task_status allows.
        """
        changes = TaskChanges(
            title=title,
            description=description,
            status=status,
            priority=priority,
            assignee=assignee,
            labels=labels,
            due=due,
            parent=parent,
        )
        actor = actors.current()
        return await run_in_thread(
            lambda: store.update_task(
                task_id, changes, actor=actor, expected_version=expected_version, force=force
            )
        )

    @tools.tool(annotations=ADDITIVE)
    async def add_dependency(
        task_id: TaskId,
        blocked_by: Annotated[str, Field(description="Must finish first.")],
    ) -> DependencyResult:
        """Record that a task waits on (is blocked by) another.

        Use when: one task cannot finish before another.
        Not for: subtasks (update_task parent=).
        Returns: the task's blockers, open_blockers, changed, version.
        Limits: a cycle is refused, naming it; the first 50 blockers.
        """
        actor = actors.current()
        return await run_in_thread(lambda: store.add_dependency(task_id, blocked_by, actor=actor))

    @tools.tool(annotations=ADDITIVE)
    async def remove_dependency(task_id: TaskId, blocked_by: TaskId) -> DependencyResult:
        """Remove a dependency recorded with add_dependency.

        Use when: a task no longer waits on another.
        Not for: deleting tasks (delete_task).
        Returns: the remaining blockers; changed=false if there was none.
        Limits: both ids must exist.
        """
        actor = actors.current()
        return await run_in_thread(lambda: store.remove_dependency(task_id, blocked_by, actor=actor))

    @tools.tool(annotations=ADDITIVE, task=task)
    async def import_project(
        document: ExportDocumentArgument,
        key: Annotated[str, Field(description="A new key instead.")] = "",
        ctx: Context = CurrentContext(),
    ) -> ImportResult:
        """Import export_project's JSON as a new project, in one transaction; history logged as yours.

        Use when: restoring or moving a project (between databases too).
        Not for: adding tasks to a project (create_tasks).
        Returns: project; counts of tasks, comments, history, dependencies.
        Limits: a new key only; ≤ 5,000 tasks; all or nothing: cancelled, nothing is saved.
        """
        actor = actors.current()
        return await run_import(
            lambda steps: store.import_project(document, actor=actor, key=key or None, steps=steps),
            partial(report_progress, ctx),
        )

    @tools.tool(annotations=DESTRUCTIVE)
    async def delete_task(
        task_id: TaskId,
        confirm: Confirm = False,
        ctx: Context = CurrentContext(),
    ) -> DeleteResult:
        """Delete a task once the user confirms; its history stays in the change feed.

        Use when: the user asked to delete a task.
        Not for: closing work (update_task_status done or cancelled keeps it).
        Returns: deleted id, title, detached_subtasks, removed_dependencies.
        Limits: subtasks are detached; comments go with it.
        """
        detail = await run_in_thread(lambda: store.get_task(task_id))
        extra = (
            f", {plural(detail.subtasks_total, 'subtask')} would be detached" if detail.subtasks_total else ""
        )
        pending = await require_confirmation(
            ctx,
            f"Delete task {detail.id} ({detail.title[:80]!r}) with its {plural(detail.comments_total, 'comment')}{extra}?",
            confirm=confirm,
            exposure=exposure,
            declined=f"The user declined deleting {detail.id}; nothing was changed.",
        )
        if pending is not None:
            return pending  # type: ignore[return-value]  # the client asks the user and retries
        actor = actors.current()
        return await run_in_thread(lambda: store.delete_task(task_id, actor=actor))

    @tools.tool(annotations=ADDITIVE)
    async def move_tasks(
        task_ids: list[str],
        project: Annotated[str | None, optional("string", "E.g. WEB.")] = None,
        workstream: Annotated[str | None, optional("string", '"" clears.')] = None,
    ) -> MoveResult:
        """Move tasks, each with all its subtasks, to another project and/or workstream.

        Use when: reorganising; links, comments, checklists, history follow.
        Not for: other fields.
        Returns: moved ({from, to}; renumbered in a new project), count.
        Limits: ≤ 50 ids, ≤ 500 tasks in all.
        """
        actor = actors.current()
        return await run_in_thread(
            lambda: store.move_tasks(task_ids, actor=actor, project=project, workstream=workstream)
        )
