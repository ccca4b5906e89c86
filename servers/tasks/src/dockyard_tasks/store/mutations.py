"""Writes: create, change, comment, link and delete — each inside the caller's one transaction.

Concurrency rules (see engine.py for how transactions start):

* a changed task's row is locked first (``SELECT … FOR UPDATE``; SQLite holds the write lock for the
  whole transaction), so ``expected_version`` is compared with the committed version and two writers
  of one task take turns instead of losing an update;
* changes that could close a cycle (dependencies, parents) then lock the feed row before looking for
  one, so two of them cannot each miss the other's new edge; every transaction takes its locks in
  that order — tasks, then the feed — so they cannot deadlock on each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from dockyard_shared import Conflict, InvalidArgument

from ..models import CommentEntry, CommentResult, DeleteResult, DependencyResult, ProjectInfo, TaskRow
from .graph import find_cycle, lock_graph, parent_loop, waits_on
from .history import Recorder, changes_after_version, describe_changes, iso
from .queries import find_project, find_task, open_blockers, related, task_ids
from .rules import (
    DEFAULT_PRIORITY,
    MAX_COMMENT,
    MAX_DESCRIPTION,
    MAX_TITLE,
    TaskRef,
    check_labels,
    check_name,
    check_status,
    check_text,
    check_transition,
    format_task_id,
    parse_date,
    parse_project_key,
    parse_task_id,
    priority_name,
    priority_rank,
)
from .schema import Comment, Dependency, Label, Project, Task

__all__ = ["TaskChanges", "TaskDraft"]

MAX_BLOCKED_BY = 20  # dependencies named in one create call


@dataclass(frozen=True)
class TaskDraft:
    """A task to create. In a batch, ``parent`` and ``blocked_by`` may name an item as ``@N``."""

    project: str
    title: str
    description: str = ""
    status: str = "todo"
    priority: str = DEFAULT_PRIORITY
    assignee: str | None = None
    labels: Sequence[str] = ()
    due: str | None = None
    parent: str | None = None
    blocked_by: Sequence[str] = ()


@dataclass(frozen=True)
class TaskChanges:
    """A partial update: None leaves a field as it is; "" clears assignee, due or parent."""

    title: str | None = None
    description: str | None = None
    status: str | None = None
    priority: str | None = None
    assignee: str | None = None
    labels: Sequence[str] | None = None
    due: str | None = None
    parent: str | None = None


@dataclass
class _Valid:
    key: str
    title: str
    description: str
    status: str
    priority: int
    assignee: str | None
    labels: list[str]
    due: date | None
    parent: TaskRef | int | None  # an existing task, or the index of a batch item
    blocked_by: list[TaskRef | int]


def _reference(value: str, *, size: int | None, field: str) -> TaskRef | int:
    if isinstance(value, str) and value.startswith("@") and size is not None:
        try:
            index = int(value[1:])
        except ValueError:
            index = -1
        if not 0 <= index < size:
            raise InvalidArgument(
                f"{field} {value!r} names no item of this batch (items are @0–@{size - 1})."
            )
        return index
    return parse_task_id(value)


def validate_draft(draft: TaskDraft, *, batch_size: int | None = None) -> _Valid:
    blocked_by = list(draft.blocked_by or ())
    if len(blocked_by) > MAX_BLOCKED_BY:
        raise InvalidArgument(f"blocked_by names {len(blocked_by)} tasks; at most {MAX_BLOCKED_BY}.")
    return _Valid(
        key=parse_project_key(draft.project),
        title=check_text(draft.title, field="title", limit=MAX_TITLE, required=True),
        description=check_text(draft.description or "", field="description", limit=MAX_DESCRIPTION),
        status=check_status(draft.status),
        priority=priority_rank(draft.priority),
        assignee=check_name(draft.assignee, field="assignee") if draft.assignee else None,
        labels=check_labels(list(draft.labels or ())),
        due=parse_date(draft.due, field="due") if draft.due else None,
        parent=_reference(draft.parent, size=batch_size, field="parent") if draft.parent else None,
        blocked_by=[_reference(b, size=batch_size, field="blocked_by") for b in blocked_by],
    )


def task_row(task: Task, key: str, labels: list[str], parent: str | None) -> TaskRow:
    return TaskRow(
        id=format_task_id(key, task.number),
        title=task.title,
        status=task.status,
        priority=priority_name(task.priority),
        assignee=task.assignee,
        due=task.due_date.isoformat() if task.due_date else None,
        description=task.description,
        labels=labels,
        parent=parent,
        version=task.version,
        created_at=iso(task.created_at),
        updated_at=iso(task.updated_at),
    )


def stored_row(session: Session, task: Task, key: str, labels: list[str] | None = None) -> TaskRow:
    """A full row of ``task`` as it stands in this transaction; ``labels`` are the task's if known and
    at most one (more are read back, in the database's order)."""
    session.flush()
    if labels is None or len(labels) > 1:
        labels = list(
            session.scalars(select(Label.label).where(Label.task_id == task.id).order_by(Label.label))
        )
    parent = task_ids(session, [task.parent_id]).get(task.parent_id) if task.parent_id else None
    return task_row(task, key, labels, parent)


# -- projects ------------------------------------------------------------------------------------------


def create_project(session: Session, rec: Recorder, key: str, name: str, description: str) -> ProjectInfo:
    key = parse_project_key(key)
    name = check_name(name, field="name")
    description = check_text(description or "", field="description", limit=MAX_DESCRIPTION)
    if session.scalar(select(Project.id).where(Project.key == key)) is not None:
        raise Conflict(f"Project {key} already exists.", next_step="Use it, or choose another key.")
    project = Project(
        key=key, name=name, description=description, next_number=1, created_at=rec.now, created_by=rec.actor
    )
    session.add(project)
    rec.project_created(key, name)
    return ProjectInfo(
        key=key, name=name, description=description, tasks=0, open=0, created_at=iso(rec.now) or ""
    )


# -- creating tasks ------------------------------------------------------------------------------------


def create_tasks(
    session: Session, rec: Recorder, drafts: Sequence[TaskDraft], *, batch: bool
) -> list[tuple[Task, str]]:
    """Create every draft or none; a batch reports every invalid item at once."""
    valid: list[_Valid] = []
    errors: list[str] = []
    for index, draft in enumerate(drafts):
        try:
            valid.append(validate_draft(draft, batch_size=len(drafts) if batch else None))
        except InvalidArgument as problem:
            errors.append(f"item {index}: {problem.what}" if batch else problem.what)
    if errors:
        shown = "; ".join(errors[:10]) + (f"; and {len(errors) - 10} more" if len(errors) > 10 else "")
        raise InvalidArgument(
            ("Nothing was created. " if batch else "") + shown,
            next_step="Fix the items named and send the whole batch again." if batch else None,
        )
    projects = {v.key: find_project(session, v.key) for v in valid}
    numbers: dict[str, int] = {}
    for key, project in projects.items():
        count = sum(1 for v in valid if v.key == key)
        after = session.execute(
            update(Project)
            .where(Project.id == project.id)
            .values(next_number=Project.next_number + count)
            .returning(Project.next_number)
        ).scalar_one()
        numbers[key] = after - count
    existing: dict[TaskRef, Task] = {}
    for v in valid:
        for ref in [v.parent, *v.blocked_by]:
            if isinstance(ref, TaskRef) and ref not in existing:
                existing[ref] = find_task(session, ref)[0]
    created: list[tuple[Task, str]] = []
    for v in valid:
        task = Task(
            project_id=projects[v.key].id,
            number=numbers[v.key],
            title=v.title,
            description=v.description,
            status=v.status,
            priority=v.priority,
            assignee=v.assignee,
            due_date=v.due,
            created_at=rec.now,
            updated_at=rec.now,
            created_by=rec.actor,
            version=1,
        )
        numbers[v.key] += 1
        session.add(task)
        created.append((task, v.key))
    session.flush()

    def resolve(ref: TaskRef | int) -> Task:
        return created[ref][0] if isinstance(ref, int) else existing[ref]

    parents = {i: resolve(v.parent).id for i, v in enumerate(valid) if v.parent is not None}
    by_id = {task.id: i for i, (task, _) in enumerate(created)}
    cycle = find_cycle({i: [by_id[p]] for i, p in parents.items() if p in by_id})
    if cycle:
        names = " → ".join(f"@{i}" for i in cycle)
        raise Conflict(f"Nothing was created: the parents of items {names} form a cycle.")
    edges: dict[int, list[int]] = {}
    for index, v in enumerate(valid):
        task = created[index][0]
        if index in parents:  # assigning None to a task without a parent would still cost an UPDATE
            task.parent_id = parents[index]
        for label in v.labels:
            session.add(Label(task_id=task.id, label=label))
        for ref in dict.fromkeys(v.blocked_by):
            blocker = resolve(ref)
            if blocker.id == task.id:
                raise InvalidArgument(f"item {index}: a task cannot be blocked by itself.")
            session.add(Dependency(task_id=task.id, blocker_id=blocker.id))
            if blocker.id in by_id:
                edges.setdefault(index, []).append(by_id[blocker.id])
    cycle = find_cycle(edges)
    if cycle:
        names = " → ".join(f"@{i}" for i in cycle)
        raise Conflict(f"Nothing was created: items {names} would block each other in a cycle.")
    for task, key in created:
        rec.task_created(key, task)
    return created


# -- changing a task -----------------------------------------------------------------------------------


def _check_version(session: Session, task: Task, ref: TaskRef, expected: int | None) -> None:
    if expected is None or expected == task.version:
        return
    if expected > task.version:
        raise Conflict(
            f"{ref} is at version {task.version}; version {expected} does not exist.",
            next_step="Read the task with get_task and pass the version it shows.",
        )
    changes = describe_changes(changes_after_version(session, task.id, expected))
    raise Conflict(
        f"{ref} is at version {task.version}, not {expected}: it changed since you read it. "
        f"Changes since version {expected}: {changes or 'none recorded'}.",
        next_step=f"Check whether your change still applies, then retry with expected_version={task.version}.",
    )


def update_task(
    session: Session,
    rec: Recorder,
    ref: TaskRef,
    changes: TaskChanges,
    *,
    expected_version: int | None,
    force: bool = False,
) -> tuple[TaskRow, list[str]]:
    task, key = find_task(session, ref, lock=True)
    _check_version(session, task, ref, expected_version)
    labels = list(session.scalars(select(Label.label).where(Label.task_id == task.id).order_by(Label.label)))
    parent_id = task_ids(session, [task.parent_id]).get(task.parent_id) if task.parent_id else None
    changed: list[tuple[str, object, object]] = []

    def change(name: str, old: object, new: object) -> bool:
        if old != new:
            changed.append((name, old, new))
            return True
        return False

    if changes.title is not None:
        title = check_text(changes.title, field="title", limit=MAX_TITLE, required=True)
        if change("title", task.title, title):
            task.title = title
    if changes.description is not None:
        description = check_text(changes.description, field="description", limit=MAX_DESCRIPTION)
        if change("description", task.description, description):
            task.description = description
    if changes.priority is not None:
        rank = priority_rank(changes.priority)
        if change("priority", priority_name(task.priority), changes.priority):
            task.priority = rank
    if changes.assignee is not None:
        assignee = check_name(changes.assignee, field="assignee") if changes.assignee.strip() else None
        if change("assignee", task.assignee, assignee):
            task.assignee = assignee
    if changes.labels is not None:
        new_labels = check_labels(list(changes.labels))
        if change("labels", labels, new_labels):
            session.execute(delete(Label).where(Label.task_id == task.id))
            session.add_all(Label(task_id=task.id, label=label) for label in new_labels)
            labels = new_labels
    if changes.due is not None:
        due = parse_date(changes.due, field="due") if changes.due.strip() else None
        if change("due", task.due_date, due):
            task.due_date = due
    if changes.parent is not None:
        new_parent: Task | None = None
        if changes.parent.strip():
            new_parent = find_task(session, parse_task_id(changes.parent))[0]
            lock_graph(session)
            loop = parent_loop(session, task, new_parent)
            if loop:
                names = task_ids(session, loop)
                shown = " → ".join(names.get(i, "?") for i in loop)
                raise Conflict(
                    f"{ref} cannot become a subtask of {changes.parent.strip().upper()}: the parent chain "
                    f"would loop ({shown}).",
                    next_step="Choose a parent that is not one of this task's own subtasks.",
                )
        new_parent_id = format_task_id(*_key_number(session, new_parent)) if new_parent else None
        if change("parent", parent_id, new_parent_id):
            task.parent_id = new_parent.id if new_parent else None
            parent_id = new_parent_id
    if changes.status is not None:
        status = check_status(changes.status)
        check_transition(str(ref), task.status, status)
        if status == "done" and status != task.status and not force:
            blockers = open_blockers(session, task.id)
            if blockers:
                listed = ", ".join(f"{b.id} ({b.status})" for b in blockers[:10])
                raise Conflict(
                    f"{ref} has open blockers: {listed}.",
                    next_step="Finish or cancel those first, or pass force=true to close it anyway.",
                )
        if change("status", task.status, status):
            task.status = status
    if changed:
        task.version += 1
        task.updated_at = rec.now
        for name, old, new in changed:
            rec.task_changed(key, task, name, old, new)
    return task_row(task, key, labels, parent_id), [name for name, _, _ in changed]


def _key_number(session: Session, task: Task) -> tuple[str, int]:
    key = session.scalar(select(Project.key).where(Project.id == task.project_id))
    return key or "", task.number


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


def _blocked_by(session: Session, task: Task) -> list:
    return related(session, Task.id.in_(select(Dependency.blocker_id).where(Dependency.task_id == task.id)))


def link(
    session: Session, rec: Recorder, ref: TaskRef, blocker_ref: TaskRef, *, add: bool
) -> DependencyResult:
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
    blocked_by = _blocked_by(session, task)
    return DependencyResult(
        task=str(ref),
        blocked_by=blocked_by,
        open_blockers=[b.id for b in blocked_by if b.status in ("todo", "in_progress", "blocked")],
        changed=changed,
        version=task.version,
    )


# -- deleting ------------------------------------------------------------------------------------------


def delete_task(session: Session, rec: Recorder, ref: TaskRef) -> DeleteResult:
    task, key = find_task(session, ref, lock=True)
    subtasks = list(session.scalars(select(Task).where(Task.parent_id == task.id).order_by(Task.id)))
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
    return DeleteResult(
        deleted=str(ref),
        title=task.title,
        detached_subtasks=[keys[s.id] for s in subtasks],
        removed_dependencies=removed or 0,
    )


def _key_of(task_id: str) -> str:
    return task_id.rsplit("-", 1)[0]
