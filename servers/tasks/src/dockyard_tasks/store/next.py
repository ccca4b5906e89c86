"""next_task: the assignee's highest-priority todo task with no open blocker, read from an index.

Why: it sorted every todo task of the assignee by priority and due date on each call, so its cost grew
with the tracker (median ×5.5 from 100,000 to 1,000,000 tasks). Migration 0006's indexes hold the tasks
of an assignee and status in exactly this order — (priority, due date with none last, id), the due date
as the same expression (schema.DUE_LAST) — so each statement below reads its rows in order and stops at
its LIMIT. A blocker is looked up through the dependency table's primary key (task_id, blocker_id).

The answer is the one the sorting version gave (tests/tasks/test_next_and_search_scale.py compares the
two on random trackers): the first ``look_ahead`` candidates, those among them waiting on an open
blocker named as skipped, and, when all of them wait, the first free candidate further down.
"""

from __future__ import annotations

from sqlalchemy import Connection, bindparam, literal, select, text
from sqlalchemy.orm import aliased

from ..models import NextTask, TaskRow
from ..rules import OPEN, format_task_id, priority_name
from .checklists import unchecked_criteria
from .queries import ProjectDirectory, project_id_of
from .schema import DUE_LAST, CheckItem, Dependency, Task

__all__ = ["next_task"]

_blocker = aliased(Task)
# "Waits on an open blocker", asked of each candidate read. A scalar subquery with LIMIT 1, not EXISTS:
# PostgreSQL turned the EXISTS into one hashed subplan built from every open blocker of the tracker
# (19 ms at 100,000 tasks, before the first candidate), and NOT EXISTS into an anti-join that may do
# the same; this form it can only evaluate row by row, as SQLite does.
_WAITING = (
    select(literal(1))
    .select_from(Dependency)
    .join(_blocker, _blocker.id == Dependency.blocker_id)
    .where(Dependency.task_id == Task.id, _blocker.status.in_(OPEN))
    .limit(1)
    .correlate(Task)
    .scalar_subquery()
    .is_not(None)
)
_NEXT_STEP = (
    select(CheckItem.text)
    .where(CheckItem.task_id == bindparam("task_id"), CheckItem.kind == "plan", CheckItem.done_at.is_(None))
    .order_by(CheckItem.position)
    .limit(1)
)
_ORDER = (Task.priority, text(DUE_LAST), Task.id)
# No join with projects: SQLite would drive the query from the projects and read every task of each.
# The keys of the few rows shown are looked up afterwards.
_COLUMNS = (Task.id, Task.project_id, Task.number, Task.title, Task.status, Task.priority, Task.assignee)


def next_task(
    connection: Connection,
    *,
    assignee: str,
    project: str | None,
    look_ahead: int = 10,
    projects: ProjectDirectory | None = None,
    workstream: str | None = None,
) -> NextTask:
    projects = projects or ProjectDirectory()
    base = select(*_COLUMNS, Task.due_date).where(Task.assignee == assignee)
    if project is not None:
        base = base.where(Task.project_id == project_id_of(connection, project))
    if workstream is not None:
        base = base.where(Task.workstream == workstream)
    started = connection.execute(base.where(Task.status == "in_progress").order_by(Task.id).limit(10)).all()
    todo = base.where(Task.status == "todo").order_by(*_ORDER)
    ahead = connection.execute(todo.add_columns(_WAITING.label("waiting")).limit(look_ahead)).all()
    pick = next((r for r in ahead if not r.waiting), None)
    if pick is None and len(ahead) == look_ahead:
        # Further down the same index: rows are checked in order until the first free one.
        pick = connection.execute(todo.where(~_WAITING).limit(1)).first()
    keys = projects.keys_of(connection, {r.project_id for r in [*started, *ahead, *([pick] if pick else [])]})
    in_progress = [format_task_id(keys[r.project_id], r.number) for r in started]
    skipped = [format_task_id(keys[r.project_id], r.number) for r in ahead if r.waiting]
    if pick is None:
        whom = f"{assignee} in {project}" if project else assignee
        whom += f" on workstream {workstream}" if workstream else ""
        reason = f"No todo task assigned to {whom} is free to start"
        reason += f" ({len(skipped)} wait on open blockers)." if skipped else "."
        return NextTask(task=None, reason=reason, in_progress=in_progress, skipped_blocked=skipped)
    row = TaskRow(
        id=format_task_id(keys[pick.project_id], pick.number),
        title=pick.title,
        status=pick.status,
        priority=priority_name(pick.priority),
        assignee=pick.assignee,
        due=pick.due_date.isoformat() if pick.due_date else None,
    )
    reason = f"{row.id} is the highest-priority todo task of {assignee} with no open blocker (priority {row.priority}"
    reason += f", due {row.due})" if row.due else ", no due date)"
    if skipped:
        reason += f"; skipped {', '.join(skipped)}: waiting on open blockers"
    if in_progress:
        reason += f". Already in progress: {', '.join(in_progress)}"
    unchecked = [text for _, text in unchecked_criteria(connection, pick.id, 10)]
    step = connection.scalar(_NEXT_STEP, {"task_id": pick.id})
    if unchecked:
        reason += f". Done when its {len(unchecked)}{'+' if len(unchecked) == 10 else ''} unchecked criteria are met"
    return NextTask(
        task=row,
        reason=reason + ".",
        in_progress=in_progress,
        skipped_blocked=skipped,
        unchecked_criteria=unchecked,
        next_step=step,
    )
