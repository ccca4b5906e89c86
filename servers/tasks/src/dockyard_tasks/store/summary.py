"""The summary: counts by status, assignee and project, and overdue work, by SQL aggregation.

The counts come from ``task_counts`` (kept by triggers as tasks change, migration 0004): sums over at
most projects × statuses × assignees rows, whatever the number of tasks, instead of a grouped scan of
every task after each write. Overdue depends on the day: for the whole tracker it sums ``task_due_counts``
(tasks per status and due date, kept the same way, migration 0005) before today; for one project it is
counted from the (status, due_date) index.
The statement is built once (as in detail.py) and runs on a plain connection.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from sqlalchemy import (
    CompoundSelect,
    Connection,
    Integer,
    String,
    bindparam,
    cast,
    func,
    literal_column,
    null,
    select,
    union_all,
)

from ..models import Summary
from ..rules import OPEN, STATUSES
from .queries import project_id_of
from .schema import Project, Task, TaskCount, TaskDueCount

__all__ = ["summary"]

_TASKS = func.sum(TaskCount.tasks)
_NO_TEXT = cast(null(), String(100))
_NO_POSITION = cast(null(), Integer)


def _statement(scope: Any) -> CompoundSelect:
    """Every number of a summary in one statement (each round trip to PostgreSQL costs a wake-up of
    its backend; four statements made a recomputed summary cost twice the cached one's wall time).

    Rows are (part, name, status, position, tasks): ``p`` per project and status (the whole tracker:
    by status is their sum), ``s`` per status (one project), ``a`` per assignee, most tasks first
    (``position``; one more than shown: was the list cut?), and one ``o`` row, overdue. ``scope`` narrows
    them to one project (or is None)."""
    where = [] if scope is None else [scope == bindparam("project_id")]
    ranked = (
        select(
            TaskCount.assignee.label("name"),
            func.row_number().over(order_by=(_TASKS.desc(), TaskCount.assignee)).label("position"),
            _TASKS.label("tasks"),
        )
        .where(*where)
        .group_by(TaskCount.assignee)
        .having(_TASKS > 0)
        .subquery()
    )
    by_assignee = select(
        literal_column("'a'").label("part"), ranked.c.name, _NO_TEXT, ranked.c.position, ranked.c.tasks
    ).where(ranked.c.position <= bindparam("groups"))
    if scope is None:
        counts = (
            select(literal_column("'p'"), Project.key, TaskCount.status, _NO_POSITION, _TASKS)
            .join(Project, Project.id == TaskCount.project_id)
            .group_by(Project.key, TaskCount.status)
            .having(_TASKS > 0)
        )
        # A sum over a few hundred kept counts (migration 0005).
        overdue = select(func.sum(TaskDueCount.tasks)).where(
            TaskDueCount.status.in_(OPEN), TaskDueCount.due_date < bindparam("today")
        )
    else:
        counts = (
            select(literal_column("'s'"), _NO_TEXT, TaskCount.status, _NO_POSITION, _TASKS)
            .where(*where)
            .group_by(TaskCount.status)
        )
        # One project's share of the (status, due_date) index range.
        overdue = select(func.count()).where(
            Task.status.in_(OPEN),
            Task.due_date < bindparam("today"),
            Task.project_id == bindparam("project_id"),
        )
    overdue_row = select(literal_column("'o'"), _NO_TEXT, _NO_TEXT, _NO_POSITION, overdue.scalar_subquery())
    return union_all(counts, by_assignee, overdue_row)


# Sums over task_counts (a few hundred rows) in SQL, not folded row by row here: the fold of 1,100
# rows cost ~3 ms of Python per summary.
_EVERY = _statement(None)
_ONE = _statement(TaskCount.project_id)


def summary(
    connection: Connection, *, today: date, project: str | None, max_groups: int, revision: int
) -> Summary:
    """Totals by status, assignee and project, overdue and blocked, read in the caller's transaction
    (the one that read ``revision``, so the numbers are those of that revision)."""
    parameters: dict[str, Any] = {"today": today, "groups": max_groups + 1}
    if project is not None:
        parameters["project_id"] = project_id_of(connection, project)
    by_status = dict.fromkeys(STATUSES, 0)
    projects: dict[str, dict[str, int]] = {}
    ranked: list[tuple[int, str, int]] = []
    overdue = 0
    for part, name, status, position, count in connection.execute(
        _EVERY if project is None else _ONE, parameters
    ):
        if part == "p":
            counts = projects.setdefault(name, {"total": 0})
            counts[status] = int(count)
            counts["total"] += int(count)
            by_status[status] += int(count)
        elif part == "s":
            by_status[status] = int(count or 0)
        elif part == "a":
            ranked.append((position, name, int(count)))  # "" is no assignee, as before
        else:
            overdue = int(count or 0)
    ranked.sort()
    notes = []
    if len(ranked) > max_groups:
        notes.append(f"by_assignee shows the {max_groups} assignees with the most tasks")
    by_project = None
    if project is None:
        shown = sorted(projects)[:max_groups]
        if len(projects) > max_groups:
            notes.append(f"by_project shows the first {max_groups} projects by key")
        by_project = {key: projects[key] for key in shown}
    return Summary(
        total=sum(by_status.values()),
        by_status=by_status,
        by_assignee={name: count for _, name, count in ranked[:max_groups]},
        by_project=by_project,
        overdue=overdue,
        blocked=by_status["blocked"],
        revision=revision,
        note="; ".join(notes) + "." if notes else None,
    )
