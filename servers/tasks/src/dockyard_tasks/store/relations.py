"""A task's relations as short rows (id, title, status): its blockers, bounded, open ones first."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, case, func, select

from ..models import RelatedTask
from ..rules import OPEN, format_task_id
from .schema import Dependency, Project, Task

__all__ = ["Blockers", "blockers", "open_blockers"]


_OPEN_BLOCKERS = (
    select(Project.key, Task.number, Task.title, Task.status)
    .join(Project, Project.id == Task.project_id)
    .where(
        Task.id.in_(select(Dependency.blocker_id).where(Dependency.task_id == bindparam("task_id"))),
        Task.status.in_(OPEN),
    )
    .order_by(Task.id)
)


def open_blockers(session: Connection, task_id: int, limit: int) -> list[RelatedTask]:
    """The first ``limit`` open blockers of a task."""
    return [
        RelatedTask(id=format_task_id(key, number), title=title, status=status)
        for key, number, title, status in session.execute(_OPEN_BLOCKERS.limit(limit), {"task_id": task_id})
    ]


@dataclass(frozen=True)
class Blockers:
    shown: list[RelatedTask]  # the first ``limit``, open ones first
    total: int
    open_total: int

    def note(self, task_id: str) -> str | None:
        if self.total <= len(self.shown):
            return None
        return (
            f"Showing the first {len(self.shown)} of {self.total} blockers, open ones first "
            f"({self.open_total} open); list_tasks blocking={task_id} lists all."
        )


def blockers(session: Connection, task_id: int, *, limit: int) -> Blockers:
    """A task's blockers, bounded: open ones first, then by id, with the totals."""
    waits = select(Dependency.blocker_id).where(Dependency.task_id == task_id)
    rows = session.execute(
        select(Project.key, Task.number, Task.title, Task.status)
        .join(Project, Project.id == Task.project_id)
        .where(Task.id.in_(waits))
        .order_by(case((Task.status.in_(OPEN), 0), else_=1), Task.id)
        .limit(limit)
    )
    shown = [RelatedTask(id=format_task_id(k, n), title=t, status=st) for k, n, t, st in rows]
    total, open_total = session.execute(
        select(func.count(), func.count(case((Task.status.in_(OPEN), 1))))
        .select_from(Task)
        .where(Task.id.in_(waits))
    ).one()
    return Blockers(shown=shown, total=total, open_total=open_total)
