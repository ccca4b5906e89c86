"""The summary: counts by status, assignee and project, and overdue work, by SQL aggregation."""

from __future__ import annotations

from datetime import date

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ..models import Summary
from .feed import current_revision
from .queries import find_project
from .rules import OPEN, STATUSES
from .schema import Project, Task

__all__ = ["summary"]


def summary(session: Session, *, today: date, project: str | None, max_groups: int) -> Summary:
    """Totals by status, assignee and project, and overdue: all by SQL aggregation.

    One grouped scan of the (project_id, status, assignee) index gives every count; the groups (at most
    projects × statuses × assignees) are folded here. Overdue is a range of the (status, due_date) index.
    """
    scope = []
    if project is not None:
        scope.append(Task.project_id == find_project(session, project).id)
    groups = session.execute(
        select(Task.project_id, Task.status, Task.assignee, func.count())
        .where(*scope)
        .group_by(Task.project_id, Task.status, Task.assignee)
    ).all()
    keys = dict(session.execute(select(Project.id, Project.key)).all())
    by_status = dict.fromkeys(STATUSES, 0)
    assignees: dict[str, int] = {}
    projects: dict[str, dict[str, int]] = {}
    for project_id, status, assignee, count in groups:
        by_status[status] += count
        assignees[assignee or ""] = assignees.get(assignee or "", 0) + count
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
    overdue = session.scalar(select(func.count()).where(*scope, Task.status.in_(OPEN), Task.due_date < today))
    return Summary(
        total=sum(by_status.values()),
        by_status=by_status,
        by_assignee=dict(ranked[:max_groups]),
        by_project=by_project,
        overdue=overdue or 0,
        blocked=by_status["blocked"],
        revision=current_revision(session),
        note="; ".join(notes) + "." if notes else None,
    )
