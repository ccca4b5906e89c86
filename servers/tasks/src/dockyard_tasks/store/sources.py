"""Tasks made from a tracker's issues (import_github_issues): found again by the issue's URL, never twice.

``tasks.source_url`` is unique (migration 0007): an issue imported before is updated where it is now —
in whichever project or workstream it was moved to — through the same path as update_task (version,
history, checks), and a new one is created through create_tasks'. An issue's state maps to the task's
status only across open/closed: a closed issue closes an open task (done), a reopened one reopens a
done or cancelled task (todo); in_progress or blocked are left to the team.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, select, update

from dockyard_shared import Conflict, InvalidArgument

from ..drafts import IssueDraft, TaskChanges, TaskDraft
from ..rules import CLOSED, TaskRef, check_text, format_task_id
from . import mutations
from .history import Recorder
from .schema import Project, Task

__all__ = ["source_url", "upsert_issues"]


def upsert_issues(
    connection: Connection,
    rec: Recorder,
    project: str,
    issues: Sequence[IssueDraft],
    *,
    workstream: str | None,
) -> list[tuple[IssueDraft, str, str]]:
    """(issue, task id, created | updated | unchanged) per issue, in order."""
    done: list[tuple[IssueDraft, str, str]] = []
    for issue in issues:
        found = connection.execute(
            select(Project.key, Task.number, Task.status)
            .join(Project, Project.id == Task.project_id)
            .where(Task.source_url == issue.url)
        ).one_or_none()
        if found is None:
            draft = TaskDraft(
                project=project,
                title=issue.title,
                description=issue.body,
                status="done" if issue.closed else "todo",
                labels=issue.labels,
                workstream=workstream,
            )
            ((task, key),) = mutations.create_tasks(connection, rec, [draft], batch=False)
            connection.execute(update(Task.__table__).where(Task.id == task.id).values(source_url=issue.url))
            done.append((issue, format_task_id(key, task.number), "created"))
            continue
        status = None
        if issue.closed and found.status not in CLOSED:
            status = "done"
        elif not issue.closed and found.status in CLOSED:
            status = "todo"
        changes = TaskChanges(title=issue.title, description=issue.body, labels=issue.labels, status=status)
        ref = TaskRef(found.key, found.number)
        _, changed = mutations.update_task(connection, rec, ref, changes, expected_version=None, force=True)
        done.append((issue, str(ref), "updated" if changed else "unchanged"))
    return done


def source_url(session: Connection, url: str | None, where: str, seen: dict[str, str]) -> str | None:
    """An imported task's link back, unique in the database: one issue is one task. ``seen``: the URLs
    of the document's tasks so far, and where each was."""
    if not url:
        return None
    url = check_text(url, field=f"{where}.source_url", limit=500)
    if url in seen:
        raise InvalidArgument(f"{where}.source_url is also {seen[url]}.source_url: one issue is one task.")
    seen[url] = where
    holder = session.execute(
        select(Project.key, Task.number)
        .join(Project, Project.id == Task.project_id)
        .where(Task.source_url == url)
    ).first()
    if holder is not None:
        raise Conflict(
            f"{where}.source_url {url[:100]} is already the source of {format_task_id(*holder)} here: one issue "
            "is one task; nothing was imported.",
            next_step="Import into another database, or remove source_url from the copy.",
        )
    return url
