"""One task in full (get_task, the task:// resource): up to five statements, built once.

Profiling showed the time of a read went to SQLAlchemy building and caching statements and loading ORM
objects, not to the database: eleven ORM queries cost ~5 ms of CPU where their SQL took ~0.2 ms. So
the statements here are Core selects built at import (their cache keys and compiled forms are then
reused), with bound parameters, returning plain rows: the task with its counts, its related
tasks (parent, blockers, blocked, subtasks — one UNION ALL, each part bounded, open ones first), labels, comments and
history, all in the caller's read transaction.
"""

from __future__ import annotations

from sqlalchemy import Connection, bindparam, case, func, literal_column, select, union_all
from sqlalchemy.orm import aliased

from ..models import CommentEntry, RelatedTask, TaskDetail
from ..rules import OPEN, TaskRef, format_task_id, task_not_found
from .checklists import checklists_of
from .history import change_entry, iso
from .rows import task_row
from .schema import Activity, CheckItem, Comment, Dependency, Label, Project, Task

__all__ = ["get_task"]

_other = aliased(Task)
_OPEN_SQL = [literal_column(f"'{status}'") for status in OPEN]
_TASK = (
    select(
        Task.id,
        Project.key,
        Task.number,
        Task.title,
        Task.description,
        Task.status,
        Task.priority,
        Task.assignee,
        Task.due_date,
        Task.parent_id,
        Task.version,
        Task.created_at,
        Task.created_by,
        Task.updated_at,
        Task.workstream,
        Task.source_url,
        select(func.count()).where(CheckItem.task_id == Task.id).scalar_subquery().label("checklist_total"),
        select(func.count()).where(_other.parent_id == Task.id).scalar_subquery().label("subtasks_total"),
        select(func.count()).where(Comment.task_id == Task.id).scalar_subquery().label("comments_total"),
        select(func.count()).where(Activity.task_id == Task.id).scalar_subquery().label("history_total"),
        # Whether the statements below would find anything: each one skipped saves a round trip.
        select(func.count()).where(Label.task_id == Task.id).scalar_subquery().label("labels_total"),
        select(func.count())
        .where((Dependency.task_id == Task.id) | (Dependency.blocker_id == Task.id))
        .scalar_subquery()
        .label("links_total"),
        select(func.count()).where(Dependency.task_id == Task.id).scalar_subquery().label("blocked_by_total"),
        select(func.count())
        .select_from(Dependency)
        .join(_other, _other.id == Dependency.blocker_id)
        .where(Dependency.task_id == Task.id, _other.status.in_(_OPEN_SQL))
        .scalar_subquery()
        .label("open_blockers_total"),
        select(func.count()).where(Dependency.blocker_id == Task.id).scalar_subquery().label("blocks_total"),
    )
    .join(Project, Project.id == Task.project_id)
    .where(Project.key == bindparam("key"), Task.number == bindparam("number"))
)

PARENT, BLOCKED_BY, BLOCKS, SUBTASK = range(4)


# Open tasks first in each part, so a bounded list of blockers shows the open ones before the closed.
_CLOSED_LAST = case((Task.status.in_(_OPEN_SQL), literal_column("0")), else_=literal_column("1"))


def _related_part(kind: int, condition, *, bounded: bool):
    part = (
        select(
            literal_column(str(kind)).label("kind"),
            _CLOSED_LAST.label("closed"),
            Task.id,
            Project.key,
            Task.number,
            Task.title,
            Task.status,
        )
        .join(Project, Project.id == Task.project_id)
        .where(condition)
        .order_by(_CLOSED_LAST, Task.id)
    )
    if bounded:
        part = part.limit(bindparam("related_limit"))
    return select(part.subquery())


_related = union_all(
    _related_part(PARENT, Task.id == bindparam("parent_id"), bounded=False),
    _related_part(
        BLOCKED_BY,
        Task.id.in_(select(Dependency.blocker_id).where(Dependency.task_id == bindparam("task_id"))),
        bounded=True,
    ),
    _related_part(
        BLOCKS,
        Task.id.in_(select(Dependency.task_id).where(Dependency.blocker_id == bindparam("task_id"))),
        bounded=True,
    ),
    _related_part(SUBTASK, Task.parent_id == bindparam("task_id"), bounded=True),
).subquery()
_RELATED = select(_related).order_by(_related.c.kind, _related.c.closed, _related.c.id)

_LABELS = select(Label.label).where(Label.task_id == bindparam("task_id")).order_by(Label.label)
_COMMENTS = (
    select(Comment.id, Comment.author, Comment.body, Comment.created_at)
    .where(Comment.task_id == bindparam("task_id"))
    .order_by(Comment.id.desc())
    .limit(bindparam("history_limit"))
)
_HISTORY = (
    select(
        Activity.revision,
        Activity.at,
        Activity.actor,
        Activity.project_key,
        Activity.task_number,
        Activity.task_version,
        Activity.action,
        Activity.field,
        Activity.old_value,
        Activity.new_value,
    )
    .where(Activity.task_id == bindparam("task_id"))
    .order_by(Activity.id.desc())
    .limit(bindparam("history_limit"))
)


def get_task(connection: Connection, ref: TaskRef, *, related_limit: int, history_limit: int) -> TaskDetail:
    """The task ``ref`` in full, read in the caller's transaction on ``connection``."""

    def fetch(statement, values: dict) -> list:
        return list(connection.execute(statement, values))

    found = fetch(_TASK, {"key": ref.key, "number": ref.number})
    if not found:
        raise task_not_found(str(ref))
    task = found[0]
    # A statement runs only when the counts above say it has rows to find (most tasks have no comments,
    # many no labels or relations): on PostgreSQL each one is a round trip.
    related: list[list[RelatedTask]] = [[], [], [], []]
    if task.parent_id is not None or task.links_total or task.subtasks_total:
        rows = fetch(
            _RELATED, {"parent_id": task.parent_id, "task_id": task.id, "related_limit": related_limit}
        )
        for kind, _closed, _id, key, number, title, status in rows:
            related[kind].append(RelatedTask(id=format_task_id(key, number), title=title, status=status))
    parent, blocked_by, blocks, subtasks = related
    labels = [row[0] for row in fetch(_LABELS, {"task_id": task.id})] if task.labels_total else []
    limits = {"task_id": task.id, "history_limit": history_limit}
    comments = fetch(_COMMENTS, limits) if task.comments_total else []
    history = fetch(_HISTORY, limits) if task.history_total else []

    cut = []
    if task.comments_total > len(comments):
        cut.append(f"the latest {len(comments)} of {task.comments_total} comments")
    if task.history_total > len(history):
        cut.append(f"the latest {len(history)} of {task.history_total} changes")
    if task.subtasks_total > len(subtasks):
        cut.append(
            f"the first {len(subtasks)} of {task.subtasks_total} subtasks (list_tasks parent=… lists all)"
        )
    if task.blocked_by_total > len(blocked_by):
        cut.append(
            f"the first {len(blocked_by)} of {task.blocked_by_total} blockers, open ones first "
            f"({task.open_blockers_total} open; list_tasks blocking={ref} lists all)"
        )
    if task.blocks_total > len(blocks):
        cut.append(
            f"the first {len(blocks)} of {task.blocks_total} blocked tasks (list_tasks blocked_by={ref} lists all)"
        )
    note = "Showing " + "; ".join(cut) + "." if cut else None
    if cut and task.history_total > len(history):
        note += " changes_since gives the whole history."
    if cut and task.comments_total > len(comments):
        note += " export_project gives every comment."
    row = task_row(task, task.key, full=True)
    lists = checklists_of(connection, [task.id]).get(task.id, {}) if task.checklist_total else {}
    return TaskDetail(
        id=row.id,
        project=task.key,
        title=row.title,
        description=row.description or "",
        status=row.status,
        priority=row.priority,
        assignee=row.assignee,
        due=row.due,
        labels=list(labels),
        parent=parent[0] if parent else None,
        workstream=task.workstream,
        source_url=task.source_url,
        criteria=lists.get("criteria", []),
        plan=lists.get("plan", []),
        version=row.version or 0,
        created_at=row.created_at or "",
        created_by=task.created_by,
        updated_at=row.updated_at or "",
        blocked_by=blocked_by,
        blocked_by_total=task.blocked_by_total,
        open_blockers=[b.id for b in blocked_by if b.status in OPEN],
        open_blockers_total=task.open_blockers_total,
        blocks=blocks,
        blocks_total=task.blocks_total,
        subtasks=subtasks,
        subtasks_total=task.subtasks_total,
        comments=[
            CommentEntry(id=c.id, author=c.author, body=c.body, created_at=iso(c.created_at) or "")
            for c in reversed(comments)
        ],
        comments_total=task.comments_total,
        history=[change_entry(row) for row in reversed(history)],  # type: ignore[arg-type]  # same fields
        history_total=task.history_total,
        note=note,
    )
