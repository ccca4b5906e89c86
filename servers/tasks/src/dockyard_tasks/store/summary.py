"""The summary: counts by status, assignee and project, and overdue work, by SQL aggregation.

The counts come from ``task_counts`` (kept by triggers as tasks change, migration 0004): sums over at
most projects × statuses × assignees rows, whatever the number of tasks, instead of a grouped scan of
every task after each write. Overdue depends on the day: for the whole tracker it sums ``task_due_counts``
(tasks per status and due date, kept the same way, migration 0005) before today; for one project it is
counted from the (status, due_date) index.
The statements are built once (as in detail.py) and run on a plain connection.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from sqlalchemy import Connection, Select, bindparam, func, select

from ..models import Summary
from .queries import project_id_of
from .rules import OPEN, STATUSES
from .schema import Project, Task, TaskCount, TaskDueCount

__all__ = ["summary"]

_TASKS = func.sum(TaskCount.tasks)


def _statements(scope: Any) -> tuple[Select, Select, Select, Select]:
    """By status, by assignee (most tasks first, one more than shown: was the list cut?), by project
    and status, and overdue; ``scope`` narrows them to one project (or is None)."""
    where = [] if scope is None else [scope == bindparam("project_id")]
    by_status = select(TaskCount.status, _TASKS).where(*where).group_by(TaskCount.status)
    by_assignee = (
        select(TaskCount.assignee, _TASKS)
        .where(*where)
        .group_by(TaskCount.assignee)
        .having(_TASKS > 0)
        .order_by(_TASKS.desc(), TaskCount.assignee)
        .limit(bindparam("groups"))
    )
    by_project = (
        select(Project.key, TaskCount.status, _TASKS)
        .join(Project, Project.id == TaskCount.project_id)
        .where(*where)
        .group_by(Project.key, TaskCount.status)
        .having(_TASKS > 0)
    )
    if scope is None:  # a sum over a few hundred kept counts (migration 0005)
        overdue = select(func.sum(TaskDueCount.tasks)).where(
            TaskDueCount.status.in_(OPEN), TaskDueCount.due_date < bindparam("today")
        )
    else:  # one project's share of the (status, due_date) index range
        overdue = select(func.count()).where(
            Task.status.in_(OPEN),
            Task.due_date < bindparam("today"),
            Task.project_id == bindparam("project_id"),
        )
    return by_status, by_assignee, by_project, overdue


# Sums over task_counts (a few hundred rows) in SQL, not folded row by row here: the fold of 1,100
# rows cost ~3 ms of Python per summary.
_EVERY = _statements(None)
_ONE = _statements(TaskCount.project_id)


def summary(
    connection: Connection, *, today: date, project: str | None, max_groups: int, revision: int
) -> Summary:
    """Totals by status, assignee and project, overdue and blocked, read in the caller's transaction
    (the one that read ``revision``, so the numbers are those of that revision)."""
    parameters: dict[str, Any] = {"today": today, "groups": max_groups + 1}
    if project is not None:
        parameters["project_id"] = project_id_of(connection, project)
    by_status_sql, by_assignee_sql, by_project_sql, overdue_sql = _EVERY if project is None else _ONE
    by_status = dict.fromkeys(STATUSES, 0)
    by_status.update((status, int(count)) for status, count in connection.execute(by_status_sql, parameters))
    # "" is no assignee, as before.
    ranked = [(name, int(count)) for name, count in connection.execute(by_assignee_sql, parameters)]
    overdue = connection.scalar(overdue_sql, parameters)
    notes = []
    if len(ranked) > max_groups:
        notes.append(f"by_assignee shows the {max_groups} assignees with the most tasks")
    by_project = None
    if project is None:
        projects: dict[str, dict[str, int]] = {}
        for key, status, count in connection.execute(by_project_sql):
            counts = projects.setdefault(key, {"total": 0})
            counts[status] = int(count)
            counts["total"] += int(count)
        shown = sorted(projects)[:max_groups]
        if len(projects) > max_groups:
            notes.append(f"by_project shows the first {max_groups} projects by key")
        by_project = {key: projects[key] for key in shown}
    return Summary(
        total=sum(by_status.values()),
        by_status=by_status,
        by_assignee=dict(ranked[:max_groups]),
        by_project=by_project,
        overdue=int(overdue or 0),
        blocked=by_status["blocked"],
        revision=revision,
        note="; ".join(notes) + "." if notes else None,
    )
