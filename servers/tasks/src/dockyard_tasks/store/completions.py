"""Completion values (``completion/complete``): project keys, task ids and assignees that start with what
was typed, each a bounded, index-ordered read."""

from __future__ import annotations

from sqlalchemy import Connection, select

from ..rules import format_task_id
from .schema import Project, Task

__all__ = ["assignees", "project_keys", "task_ids"]


def project_keys(s: Connection, prefix: str, limit: int) -> list[str]:
    return list(
        s.scalars(
            select(Project.key)
            .where(Project.key.startswith(prefix.upper(), autoescape=True))
            .order_by(Project.key)
            .limit(limit)
        )
    )


def task_ids(s: Connection, prefix: str, limit: int) -> list[str]:
    key, _, number = prefix.upper().partition("-")
    statement = select(Project.key, Task.number).join(Project, Project.id == Task.project_id)
    if number:
        statement = statement.where(Project.key == key)
    elif key:
        statement = statement.where(Project.key.startswith(key, autoescape=True))
    rows = s.execute(statement.order_by(Project.key, Task.number).limit(5_000 if number else limit))
    ids = [format_task_id(k, n) for k, n in rows]
    return [i for i in ids if i.startswith(prefix.upper())][:limit]


def assignees(s: Connection, prefix: str, limit: int) -> list[str]:
    return list(
        s.scalars(
            select(Task.assignee)
            .where(Task.assignee.is_not(None), Task.assignee.startswith(prefix, autoescape=True))
            .group_by(Task.assignee)
            .order_by(Task.assignee)
            .limit(limit)
        )
    )
