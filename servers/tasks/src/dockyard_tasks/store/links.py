"""Comments, dependencies and deletes: the write paths that go through the ORM, inside the caller's one
transaction, under the same locking rules as mutations.py (the changed task's row first, then the feed).
"""

from __future__ import annotations

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

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


def add_comment(session: Session, rec: Recorder, ref: TaskRef, body: str) -> CommentResult:
    body = check_text(body, field="comment", limit=MAX_COMMENT, required=True)
    task, key = find_task(session, ref)
    comment = Comment(task_id=task.id, author=rec.actor, body=body, created_at=rec.now)
    session.add(comment)
    session.flush()
    rec.commented(key, task, body)
    total = session.scalar(select(func.count()).where(Comment.task_id == task.id))
    return CommentResult(
        task=str(ref),
        comment=CommentEntry(id=comment.id, author=rec.actor, body=body, created_at=iso(rec.now) or ""),
        comments_total=total or 0,
    )


def link(
    session: Session, rec: Recorder, ref: TaskRef, blocker_ref: TaskRef, *, add: bool, limit: int
) -> DependencyResult:
    """Add or remove one dependency; the reply lists the first ``limit`` blockers (open ones first)."""
    task, key = find_task(session, ref, lock=True)
    blocker, _ = find_task(session, blocker_ref)
    if blocker.id == task.id:
        raise InvalidArgument(f"{ref} cannot be blocked by itself.", next_step="Name another task.")
    exists_now = session.get(Dependency, (task.id, blocker.id)) is not None
    changed = False
    if add and not exists_now:
        lock_graph(session)
        path = waits_on(session, blocker.id, task.id)
        if path:
            names = task_ids(session, path)
            loop = " → ".join(names[i] for i in [task.id, *path])
            raise Conflict(
                f"{ref} cannot wait on {blocker_ref}: {blocker_ref} already waits on {ref}, so this would "
                f"make a cycle ({loop}; → means 'is blocked by').",
                next_step=f"Remove one of those dependencies first (remove_dependency), or leave {ref} as it is.",
            )
        session.add(Dependency(task_id=task.id, blocker_id=blocker.id))
        changed = True
    elif not add and exists_now:
        session.execute(
            delete(Dependency).where(Dependency.task_id == task.id, Dependency.blocker_id == blocker.id)
        )
        changed = True
    if changed:
        task.version += 1
        task.updated_at = rec.now
        rec.linked(key, task, str(blocker_ref), added=add)
    session.flush()
    shown = blockers(session, task.id, limit=limit)
    return DependencyResult(
        task=str(ref),
        blocked_by=shown.shown,
        blocked_by_total=shown.total,
        open_blockers=[b.id for b in shown.shown if b.status in OPEN],
        open_blockers_total=shown.open_total,
        changed=changed,
        version=task.version,
        note=shown.note(str(ref)),
    )


# -- deleting ------------------------------------------------------------------------------------------

DETACHED_SHOWN = 50  # detached subtasks a delete's reply names


def delete_task(session: Session, rec: Recorder, ref: TaskRef) -> DeleteResult:
    task, key = find_task(session, ref, lock=True)
    # Every task whose version this delete bumps is locked first, in id order (one statement, so two
    # deletes lock their common rows in the same order): a concurrent update_task of one of them then
    # waits, and reads the version written here, instead of writing the same version number again.
    affected = list(
        session.scalars(
            select(Task)
            .where(
                (Task.parent_id == task.id)
                | Task.id.in_(select(Dependency.task_id).where(Dependency.blocker_id == task.id))
            )
            .order_by(Task.id)
            .with_for_update()
        )
    )
    subtasks = [t for t in affected if t.parent_id == task.id]
    waiting = list(
        session.scalars(
            select(Task)
            .where(Task.id.in_(select(Dependency.task_id).where(Dependency.blocker_id == task.id)))
            .order_by(Task.id)
        )
    )
    removed = session.scalar(
        select(func.count())
        .select_from(Dependency)
        .where((Dependency.task_id == task.id) | (Dependency.blocker_id == task.id))
    )
    keys = task_ids(session, [t.id for t in [*subtasks, *waiting]])
    # Each task that loses its parent or a blocker changes once: one version step, history for each.
    for other in {t.id: t for t in [*subtasks, *waiting]}.values():
        other.version += 1
        other.updated_at = rec.now
    for sub in subtasks:
        sub.parent_id = None
        rec.task_changed(_key_of(keys[sub.id]), sub, "parent", str(ref), None)
    for other in waiting:
        rec.linked(_key_of(keys[other.id]), other, str(ref), added=False)
    rec.task_deleted(key, task)
    session.flush()
    session.delete(task)
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
