"""Comments, dependencies and deletes, in Core statements inside the caller's one transaction, under the
same locking rules as mutations.py (the changed task's row first, then the feed).
"""

from __future__ import annotations

from types import SimpleNamespace

from sqlalchemy import Connection, delete, func, insert, select, update

from dockyard_shared import Conflict, InvalidArgument

from ..models import CommentEntry, CommentResult, DeleteResult, DependencyResult
from ..rules import MAX_COMMENT, OPEN, TaskRef, check_text
from .graph import lock_graph, waits_on
from .history import Recorder, iso
from .queries import find_task, task_ids
from .relations import blockers
from .schema import Comment, Dependency, Task

__all__ = ["add_comment", "delete_task", "link"]


# -- comments and dependencies -------------------------------------------------------------------------


_tasks, _comments, _dependencies = Task.__table__, Comment.__table__, Dependency.__table__


def _bumped(task, now) -> SimpleNamespace:
    """What the history records of a task this change bumps: its id, number, title and next version."""
    return SimpleNamespace(id=task.id, number=task.number, title=task.title, version=task.version + 1)


def _write_bump(connection: Connection, task: SimpleNamespace, now, **values) -> None:
    connection.execute(
        update(_tasks).where(_tasks.c.id == task.id).values(version=task.version, updated_at=now, **values)
    )


def add_comment(connection: Connection, rec: Recorder, ref: TaskRef, body: str) -> CommentResult:
    body = check_text(body, field="comment", limit=MAX_COMMENT, required=True)
    task, key = find_task(connection, ref)
    comment_id = connection.scalar(
        insert(_comments)
        .values(task_id=task.id, author=rec.actor, body=body, created_at=rec.now)
        .returning(_comments.c.id)
    )
    rec.commented(key, task, body)
    total = connection.scalar(select(func.count()).where(Comment.task_id == task.id))
    return CommentResult(
        task=str(ref),
        comment=CommentEntry(id=comment_id, author=rec.actor, body=body, created_at=iso(rec.now) or ""),
        comments_total=total or 0,
    )


def link(
    connection: Connection, rec: Recorder, ref: TaskRef, blocker_ref: TaskRef, *, add: bool, limit: int
) -> DependencyResult:
    """Add or remove one dependency; the reply lists the first ``limit`` blockers (open ones first)."""
    task, key = find_task(connection, ref, lock=True)
    blocker, _ = find_task(connection, blocker_ref)
    if blocker.id == task.id:
        raise InvalidArgument(f"{ref} cannot be blocked by itself.", next_step="Name another task.")
    edge = (_dependencies.c.task_id == task.id) & (_dependencies.c.blocker_id == blocker.id)
    exists_now = connection.scalar(select(_dependencies.c.task_id).where(edge)) is not None
    changed = False
    if add and not exists_now:
        lock_graph(connection)
        path = waits_on(connection, blocker.id, task.id)
        if path:
            names = task_ids(connection, path)
            loop = " → ".join(names[i] for i in [task.id, *path])
            raise Conflict(
                f"{ref} cannot wait on {blocker_ref}: {blocker_ref} already waits on {ref}, so this would "
                f"make a cycle ({loop}; → means 'is blocked by').",
                next_step=f"Remove one of those dependencies first (remove_dependency), or leave {ref} as it is.",
            )
        connection.execute(insert(_dependencies).values(task_id=task.id, blocker_id=blocker.id))
        changed = True
    elif not add and exists_now:
        connection.execute(delete(_dependencies).where(edge))
        changed = True
    version = task.version
    if changed:
        bumped = _bumped(task, rec.now)
        _write_bump(connection, bumped, rec.now)
        rec.linked(key, bumped, str(blocker_ref), added=add)
        version = bumped.version
    shown = blockers(connection, task.id, limit=limit)
    return DependencyResult(
        task=str(ref),
        blocked_by=shown.shown,
        blocked_by_total=shown.total,
        open_blockers=[b.id for b in shown.shown if b.status in OPEN],
        open_blockers_total=shown.open_total,
        changed=changed,
        version=version,
        note=shown.note(str(ref)),
    )


# -- deleting ------------------------------------------------------------------------------------------

DETACHED_SHOWN = 50  # detached subtasks a delete's reply names


def delete_task(connection: Connection, rec: Recorder, ref: TaskRef) -> DeleteResult:
    task, key = find_task(connection, ref, lock=True)
    waits = select(_dependencies.c.task_id).where(_dependencies.c.blocker_id == task.id)
    # Every task whose version this delete bumps is locked first, in id order (one statement, so two
    # deletes lock their common rows in the same order): a concurrent update_task of one of them then
    # waits, and reads the version written here, instead of writing the same version number again.
    affected = connection.execute(
        select(_tasks.c.id, _tasks.c.number, _tasks.c.title, _tasks.c.version, _tasks.c.parent_id)
        .where((_tasks.c.parent_id == task.id) | _tasks.c.id.in_(waits))
        .order_by(_tasks.c.id)
        .with_for_update()
    ).all()
    subtasks = [t for t in affected if t.parent_id == task.id]
    waiting_ids = set(connection.scalars(waits))
    waiting = [t for t in affected if t.id in waiting_ids]
    removed = connection.scalar(
        select(func.count())
        .select_from(_dependencies)
        .where((_dependencies.c.task_id == task.id) | (_dependencies.c.blocker_id == task.id))
    )
    keys = task_ids(connection, [t.id for t in affected])
    # Each task that loses its parent or a blocker changes once: one version step, history for each.
    bumped = {t.id: _bumped(t, rec.now) for t in affected}
    for other in affected:
        detached = {"parent_id": None} if other.parent_id == task.id else {}
        _write_bump(connection, bumped[other.id], rec.now, **detached)
    for sub in subtasks:
        rec.task_changed(_key_of(keys[sub.id]), bumped[sub.id], "parent", str(ref), None)
    for other in waiting:
        rec.linked(_key_of(keys[other.id]), bumped[other.id], str(ref), added=False)
    rec.task_deleted(key, task)
    connection.execute(delete(_tasks).where(_tasks.c.id == task.id))
    shown = [keys[s.id] for s in subtasks[:DETACHED_SHOWN]]
    note = None
    if len(subtasks) > len(shown):
        note = (
            f"Showing the first {len(shown)} of {len(subtasks)} detached subtasks; their history says "
            f"'parent {ref} → none' (changes_since lists every one)."
        )
    return DeleteResult(
        deleted=str(ref),
        title=task.title,
        detached_subtasks=shown,
        detached_total=len(subtasks),
        removed_dependencies=removed or 0,
        note=note,
    )


def _key_of(task_id: str) -> str:
    return task_id.rsplit("-", 1)[0]
