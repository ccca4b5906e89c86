"""The write toolset: create, change, comment, link, import, and delete (after the user confirms).

As in the read toolset, the store is used in worker threads only, and its types are imported where a call
needs them: the store may open after ``initialize`` (``opening.py``), and its package imports SQLAlchemy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastmcp import Context
from fastmcp.dependencies import CurrentContext
from pydantic import BaseModel, Field

from dockyard_shared import ADDITIVE, DESTRUCTIVE
from dockyard_shared.confirm import Confirm, require_confirmation
from dockyard_shared.offload import run_in_thread
from dockyard_shared.toolsets import Exposure, ToolRegistrar
from dockyard_shared.words import plural

from ..actors import Actors
from ..drafts import TaskChanges, TaskDraft
from ..models import (
    BatchResult,
    CommentResult,
    DeleteResult,
    DependencyResult,
    ImportResult,
    ProjectInfo,
    TaskRow,
    UpdateResult,
)
from .params import ExpectedVersion, Force, Priority, ProjectKey, Status, TaskId

if TYPE_CHECKING:
    from ..store import TaskStore

__all__ = ["register"]

Labels = Annotated[list[str], Field(description="Short tags, e.g. bug, frontend.")]
Due = Annotated[str, Field(description="YYYY-MM-DD.")]


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


def register(tools: ToolRegistrar, store: TaskStore, actors: Actors, exposure: Exposure) -> None:
    @tools.tool(annotations=ADDITIVE)
    async def create_project(
        key: Annotated[
            str, Field(description="2–10 letters/digits, e.g. WEB; task ids become WEB-1, WEB-2…")
        ],
        name: str,
        description: str = "",
    ) -> ProjectInfo:
        """Create a project; its tasks are numbered KEY-1, KEY-2, …

        Use when: starting a new body of work.
        Not for: adding tasks to an existing project (create_task).
        Returns: the project.
        Limits: a key exists once; name ≤ 100 characters.
        """
        actor = actors.current()
        return await run_in_thread(lambda: store.create_project(key, name, description, actor=actor))

    @tools.tool(annotations=ADDITIVE)
    async def create_task(
        project: ProjectKey,
        title: str,
        description: str = "",
        status: Status = "todo",
        priority: Priority = "medium",
        assignee: str = "",
        labels: Labels = [],  # noqa: B006 - never mutated: the schema shows the default
        due: Due = "",
        parent: Annotated[str, Field(description="Parent task id: this becomes its subtask.")] = "",
        blocked_by: Annotated[list[str], Field(description="Task ids this waits on.")] = [],  # noqa: B006
    ) -> TaskRow:
        """Create one task.

        Use when: adding a single task.
        Not for: several at once (create_tasks, one transaction).
        Returns: the task with its new id and version 1.
        Limits: title ≤ 300, description ≤ 20,000 characters; ≤ 20 labels.
        """
        draft = TaskDraft(
            project=project,
            title=title,
            description=description,
            status=status,
            priority=priority,
            assignee=assignee or None,
            labels=labels,
            due=due or None,
            parent=parent or None,
            blocked_by=blocked_by,
        )
        actor = actors.current()
        return (await run_in_thread(lambda: store.create_task(draft, actor=actor))).task

    @tools.tool(annotations=ADDITIVE)
    async def create_tasks(tasks: list[NewTask]) -> BatchResult:
        """Create several tasks in one transaction: all of them, or none.

        Use when: planning work into many tasks; items refer to each other as @0, @1… in parent and
        blocked_by.
        Not for: one task (create_task).
        Returns: created: index, id, title per item.
        Limits: 100 tasks a call; any invalid item refuses the batch, naming every bad item.
        """
        drafts = [task.draft() for task in tasks]
        actor = actors.current()
        return await run_in_thread(lambda: store.create_tasks(drafts, actor=actor))

    @tools.tool(annotations=ADDITIVE)
    async def update_task(
        task_id: TaskId,
        title: str | None = None,
        description: str | None = None,
        status: Status | None = None,
        priority: Priority | None = None,
        assignee: Annotated[str | None, Field(description='"" unassigns.')] = None,
        labels: Annotated[list[str] | None, Field(description="Replaces the labels.")] = None,
        due: Annotated[str | None, Field(description='YYYY-MM-DD; "" clears.')] = None,
        parent: Annotated[str | None, Field(description='Parent task id; "" detaches.')] = None,
        expected_version: ExpectedVersion = None,
        force: Force = False,
    ) -> UpdateResult:
        """Change some fields of a task; fields left out stay as they are.

        Use when: editing a task; pass expected_version so nobody's change is overwritten.
        Not for: status alone (update_task_status), comments, blockers.
        Returns: the task, changed (field names), version.
        Limits: status changes follow the allowed transitions; done needs its blockers closed or force.
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
    async def update_task_status(
        task_id: TaskId,
        new_status: Status,
        force: Force = False,
        expected_version: ExpectedVersion = None,
    ) -> UpdateResult:
        """Move a task to a new status.

        Use when: starting, blocking, finishing, cancelling or reopening a task.
        Not for: other fields (update_task).
        Returns: the task, changed, version.
        Limits: todo→in_progress/blocked/done/cancelled; in_progress and blocked→any; done→todo or
        in_progress; cancelled→todo. done is refused while blockers are open (named) unless force.
        """
        actor = actors.current()
        return await run_in_thread(
            lambda: store.set_status(
                task_id, new_status, actor=actor, force=force, expected_version=expected_version
            )
        )

    @tools.tool(annotations=ADDITIVE)
    async def add_comment(task_id: TaskId, body: str) -> CommentResult:
        """Add a comment to a task.

        Use when: recording progress, a question or a decision on a task.
        Not for: changing fields (update_task).
        Returns: the comment and the task's comment count.
        Limits: ≤ 10,000 characters.
        """
        actor = actors.current()
        return await run_in_thread(lambda: store.add_comment(task_id, body, actor=actor))

    @tools.tool(annotations=ADDITIVE)
    async def add_dependency(
        task_id: TaskId,
        blocked_by: Annotated[str, Field(description="The task id that must finish first.")],
    ) -> DependencyResult:
        """Record that a task waits on (is blocked by) another.

        Use when: one task cannot finish before another.
        Not for: subtasks (update_task parent=).
        Returns: the task's blockers, open_blockers, changed, version.
        Limits: a dependency that would close a cycle is refused, naming it; the first 50 blockers.
        """
        actor = actors.current()
        return await run_in_thread(lambda: store.add_dependency(task_id, blocked_by, actor=actor))

    @tools.tool(annotations=ADDITIVE)
    async def remove_dependency(task_id: TaskId, blocked_by: TaskId) -> DependencyResult:
        """Remove a dependency recorded with add_dependency.

        Use when: a task no longer waits on another.
        Not for: deleting tasks (delete_task).
        Returns: the task's remaining blockers; changed=false if there was no such dependency.
        Limits: none beyond the ids existing.
        """
        actor = actors.current()
        return await run_in_thread(lambda: store.remove_dependency(task_id, blocked_by, actor=actor))

    @tools.tool(annotations=ADDITIVE)
    async def import_project(
        document: Annotated[dict[str, Any], Field(description="An export_project document.")],
        key: Annotated[str, Field(description="Import under this key instead.")] = "",
    ) -> ImportResult:
        """Import a project from export_project's JSON in one transaction; history logged as yours.

        Use when: restoring or moving a project (between databases too).
        Not for: adding tasks to an existing project (create_tasks).
        Returns: project; counts of tasks, comments, history, dependencies.
        Limits: a new key only; ≤ 5,000 tasks; all or nothing.
        """
        actor = actors.current()
        return await run_in_thread(lambda: store.import_project(document, actor=actor, key=key or None))

    @tools.tool(annotations=DESTRUCTIVE)
    async def delete_task(
        task_id: TaskId,
        confirm: Confirm = False,
        ctx: Context = CurrentContext(),
    ) -> DeleteResult:
        """Delete a task, after the user confirms; its history stays in the change feed.

        Use when: the user asked to delete a task.
        Not for: closing work (update_task_status done or cancelled keeps it).
        Returns: deleted id, title, detached_subtasks, removed_dependencies.
        Limits: asks the user first; subtasks are detached, comments go with it.
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
