"""The summary: counts by status, assignee and project, and overdue work, by SQL aggregation.

The counts come from ``task_counts`` (kept by triggers as tasks change, migration 0004): at most
projects × statuses × assignees rows, whatever the number of tasks, instead of a grouped scan of every
task after each write. Overdue depends on the day, so it is counted from the (status, due_date) index.
The statements are built once (as in detail.py) and run on a plain connection.
"""

from __future__ import annotations

from datetime import date

from sqlalchemy import Connection, bindparam, func, select

from ..models import Summary
from .queries import project_id_of
from .rules import OPEN, STATUSES
from .schema import Project, Task, TaskCount

__all__ = ["summary"]

_COUNTS = select(TaskCount.project_id, TaskCount.status, TaskCount.assignee, TaskCount.tasks).where(
    TaskCount.tasks > 0
)
_PROJECT_COUNTS = _COUNTS.where(TaskCount.project_id == bindparam("project_id"))
_KEYS = select(Project.id, Project.key)
_OVERDUE = select(func.count()).where(Task.status.in_(OPEN), Task.due_date < bindparam("today"))
_PROJECT_OVERDUE = _OVERDUE.where(Task.project_id == bindparam("project_id"))


def summary(
    connection: Connection, *, today: date, project: str | None, max_groups: int, revision: int
) -> Summary:
    """Totals by status, assignee and project, overdue and blocked, read in the caller's transaction
    (the one that read ``revision``, so the numbers are those of that revision)."""
    if project is None:
        groups = connection.execute(_COUNTS).all()
        overdue = connection.scalar(_OVERDUE, {"today": today})
    else:
        scope = {"project_id": project_id_of(connection, project), "today": today}
        groups = connection.execute(_PROJECT_COUNTS, scope).all()
        overdue = connection.scalar(_PROJECT_OVERDUE, scope)
    keys = dict(connection.execute(_KEYS).all())
    by_status = dict.fromkeys(STATUSES, 0)
    assignees: dict[str, int] = {}
    projects: dict[str, dict[str, int]] = {}
    for project_id, status, assignee, count in groups:
        by_status[status] += count
        assignees[assignee] = assignees.get(assignee, 0) + count  # "" is no assignee, as before
        counts = projects.setdefault(keys[project_id], {"total": 0})
        counts[status] = counts.get(status, 0) + count
        counts["total"] += count
    ranked = sorted(assignees.items(), key=lambda item: (-item[1], item[0]))
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
        by_assignee=dict(ranked[:max_groups]),
        by_project=by_project,
        overdue=overdue or 0,
        blocked=by_status["blocked"],
        revision=revision,
        note="; ".join(notes) + "." if notes else None,
    )
