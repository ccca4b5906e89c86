"""The write toolset: create a task, move it through its statuses, comment on it (the everyday writes;
the rest is in the manage toolset).

As in the read toolset, the store is used in worker threads only, and its types are imported where a call
needs them: the store may open after ``initialize`` (``opening.py``), and its package imports SQLAlchemy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from dockyard_shared import ADDITIVE
from dockyard_shared.offload import run_in_thread
from dockyard_shared.schema import optional
from dockyard_shared.toolsets import ToolRegistrar

from ..actors import Actors
from ..drafts import TaskDraft
from ..models import ChecklistResult, CommentResult, TaskRow, UpdateResult
from .params import ExpectedVersion, Force, Labels, Priority, ProjectKey, Status, TaskId

if TYPE_CHECKING:
    from ..store import TaskStore

__all__ = ["register"]

Due = Annotated[str, Field(description="YYYY-MM-DD.")]


def register(tools: ToolRegistrar, store: TaskStore, actors: Actors) -> None:
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
        parent: Annotated[str, Field(description="Makes this its subtask.")] = "",
        blocked_by: Annotated[list[str], Field(description="Task ids this waits on.")] = [],  # noqa: B006
        workstream: str = "",
    ) -> TaskRow:
        """Create one task.

        Use when: adding a single task.
        Not for: several (create_tasks, one transaction).
        Returns: the task, with its id and version 1.
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
            workstream=workstream or None,
        )
        actor = actors.current()
        return (await run_in_thread(lambda: store.create_task(draft, actor=actor))).task

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
        Limits: todo, in_progress, blocked→any; done→todo, in_progress; cancelled→todo. done needs the task's
        blockers closed, or force.
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

        Use when: recording progress, a question or a decision.
        Not for: changing fields (update_task).
        Returns: the comment and the task's comment count.
        Limits: ≤ 10,000 characters.
        """
        actor = actors.current()
        return await run_in_thread(lambda: store.add_comment(task_id, body, actor=actor))

    @tools.tool(annotations=ADDITIVE)
    async def update_checklist(
        task_id: TaskId,
        kind: Literal["criteria", "plan"],
        items: Annotated[
            list[str] | None,
            optional("array", "Replaces the list (ticks kept by text).", items={"type": "string"}),
        ] = None,
        check: list[int] = [],  # noqa: B006
        uncheck: list[int] = [],  # noqa: B006
    ) -> ChecklistResult:
        """Set (items) or tick (check=[n]) a task's acceptance criteria or plan steps.

        Use when: defining done, planning, ticking one met.
        Not for: the description.
        Returns: items (n, text, done, done_by, done_at), unchecked.
        Limits: ≤ 50 items, ≤ 300 characters each.
        """
        actor = actors.current()
        return await run_in_thread(
            lambda: store.update_checklist(
                task_id,
                kind,
                actor=actor,
                items=items,
                check=check,
                uncheck=uncheck,
            )
        )
