"""Writes: create and change tasks — each inside the caller's one transaction (comments, links and
deletes: links.py).

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
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Select, Update, bindparam, delete, func, insert, select, update
from sqlalchemy.orm import aliased

from dockyard_shared import Conflict, InvalidArgument

from ..drafts import TaskChanges, TaskDraft, ValidDraft, validate_draft
from ..models import ProjectInfo, TaskRow
from ..rules import (
    MAX_DESCRIPTION,
    MAX_TASK_NUMBER,
    MAX_TITLE,
    TaskRef,
    check_labels,
    check_name,
    check_status,
    check_text,
    check_transition,
    check_workstream,
    format_task_id,
    parse_date,
    parse_project_key,
    parse_task_id,
    priority_name,
    priority_rank,
    task_not_found,
)
from .checklists import unchecked_criteria
from .graph import find_cycle, lock_graph, parent_loop
from .history import Recorder, changes_after_version, describe_changes, iso
from .queries import project_id_of, task_ids
from .relations import open_blockers
from .rows import task_row
from .schema import Dependency, Label, Project, Task

__all__ = ["create_project", "create_tasks", "created_row", "update_task"]


@dataclass
class TaskState:
    """A task as a write on a plain connection knows it: its stored columns by name (what the reply
    is built from) and the ``id``, ``number`` and ``version`` the history is written with."""

    id: int
    values: dict[str, Any]
    labels: list[str] = field(default_factory=list)
    parent: str | None = None  # the parent's id (WEB-12), if any

    @property
    def number(self) -> int:
        return self.values["number"]

    @property
    def title(self) -> str:
        return self.values["title"]

    @property
    def version(self) -> int:
        return self.values["version"]


def _row_of(task: TaskState, key: str) -> TaskRow:
    return task_row(task.values, key, full=True, labels=task.labels, parent=task.parent)


# Statements of the write paths on a plain connection, built once: their compiled forms are cached,
# where the ORM's unit of work rebuilt and flushed objects on every call (~2 ms of CPU a write).
_tasks, _projects, _labels, _dependencies = (
    Task.__table__,
    Project.__table__,
    Label.__table__,
    Dependency.__table__,
)
_parent, _parent_project = aliased(Task), aliased(Project)


def _locked_task(labels: Any) -> Select:
    """The task by key and number, locked, with ``labels`` and its parent's id (no round trip each)."""
    return (
        select(
            Task.id,
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
            Task.updated_at,
            Task.workstream,
            labels.scalar_subquery().label("labels"),
            select(_parent_project.key)
            .join(_parent, _parent.project_id == _parent_project.id)
            .where(_parent.id == Task.parent_id)
            .scalar_subquery()
            .label("parent_key"),
            select(_parent.number)
            .where(_parent.id == Task.parent_id)
            .scalar_subquery()
            .label("parent_number"),
        )
        .join(Project, Project.id == Task.project_id)
        .where(Project.key == bindparam("key"), Task.number == bindparam("number"))
        .with_for_update(of=Task)
    )


# SQLite: how many labels (read after, when there are any: a call into SQLite, not a round trip).
# PostgreSQL: the labels themselves, in the database's order (labels never hold a comma); SQLite has
# no ordered group_concat before 3.44.
_LOCKED_TASK = _locked_task(select(func.count()).where(Label.task_id == Task.id))
_LOCKED_TASK_PG = _locked_task(
    select(func.aggregate_strings(Label.label, ",").aggregate_order_by(Label.label)).where(
        Label.task_id == Task.id
    )
)
_TASK_REF = (
    select(Task.id, Task.parent_id, Project.key, Task.number)
    .join(Project, Project.id == Task.project_id)
    .where(Project.key == bindparam("key"), Task.number == bindparam("number"))
)
_LABELS = select(Label.label).where(Label.task_id == bindparam("task_id")).order_by(Label.label)
_DELETE_LABELS = delete(_labels).where(_labels.c.task_id == bindparam("task_id"))
_INSERT_LABELS = insert(_labels)
_INSERT_DEPENDENCIES = insert(_dependencies)
_NEXT_NUMBERS = (
    update(_projects)
    .where(_projects.c.key == bindparam("project_key"))
    .values(next_number=_projects.c.next_number + bindparam("count"))
    .returning(_projects.c.id, _projects.c.next_number)
)
_INSERT_TASKS = insert(_tasks).returning(_tasks.c.id, sort_by_parameter_order=True)
_SET_PARENT = (
    update(_tasks).where(_tasks.c.id == bindparam("task_id")).values(parent_id=bindparam("new_parent"))
)
# One UPDATE per set of changed columns: only those are written, so the count triggers (which fire on
# UPDATE OF status, assignee, due_date…) run only when their columns change, as they did under the ORM.
_UPDATES: dict[tuple[str, ...], Update] = {}


def _update_of(columns: tuple[str, ...]) -> Update:
    statement = _UPDATES.get(columns)
    if statement is None:
        statement = (
            update(_tasks)
            .where(_tasks.c.id == bindparam("task_id"))
            .values({column: bindparam(f"new_{column}") for column in columns})
        )
        _UPDATES[columns] = statement
    return statement


def _task_ref(connection: Connection, ref: TaskRef) -> Any:
    found = connection.execute(_TASK_REF, {"key": ref.key, "number": ref.number}).one_or_none()
    if found is None:
        raise task_not_found(str(ref))
    return found


def _stored_labels(connection: Connection, task_id: int) -> list[str]:
    return list(connection.scalars(_LABELS, {"task_id": task_id}))


# -- projects ------------------------------------------------------------------------------------------


def create_project(
    connection: Connection, rec: Recorder, key: str, name: str, description: str
) -> ProjectInfo:
    key = parse_project_key(key)
    name = check_name(name, field="name")
    description = check_text(description or "", field="description", limit=MAX_DESCRIPTION)
    if connection.scalar(select(_projects.c.id).where(_projects.c.key == key)) is not None:
        raise Conflict(f"Project {key} already exists.", next_step="Use it, or choose another key.")
    connection.execute(
        insert(_projects).values(
            key=key,
            name=name,
            description=description,
            next_number=1,
            created_at=rec.now,
            created_by=rec.actor,
        )
    )
    rec.project_created(key, name)
    return ProjectInfo(
        key=key, name=name, description=description, tasks=0, open=0, created_at=iso(rec.now) or ""
    )


# -- creating tasks ------------------------------------------------------------------------------------


def create_tasks(
    connection: Connection, rec: Recorder, drafts: Sequence[TaskDraft], *, batch: bool
) -> list[tuple[TaskState, str]]:
    """Create every draft or none; a batch reports every invalid item at once."""
    valid: list[ValidDraft] = []
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
    # Numbers are taken under each project's row lock, which also finds the project.
    project_ids: dict[str, int] = {}
    numbers: dict[str, int] = {}
    for key in dict.fromkeys(v.key for v in valid):
        count = sum(1 for v in valid if v.key == key)
        taken = connection.execute(_NEXT_NUMBERS, {"project_key": key, "count": count}).one_or_none()
        if taken is None:
            project_id_of(connection, key)  # raises NotFound, with suggestions
        if taken.next_number - 1 > MAX_TASK_NUMBER:  # a longer number would be no task id (rules.py)
            raise Conflict(
                f"Project {key} has used every task number up to {MAX_TASK_NUMBER:,} (a task id has at most "
                "nine digits); nothing was created.",
                next_step="Create the task in another project.",
            )
        project_ids[key], numbers[key] = taken.id, taken.next_number - count
    existing: dict[TaskRef, Any] = {}
    for v in valid:
        for ref in [v.parent, *v.blocked_by]:
            if isinstance(ref, TaskRef) and ref not in existing:
                existing[ref] = _task_ref(connection, ref)
    parents = {i: v.parent for i, v in enumerate(valid) if isinstance(v.parent, int)}
    cycle = find_cycle({i: [p] for i, p in parents.items()})
    if cycle:
        names = " → ".join(f"@{i}" for i in cycle)
        raise Conflict(f"Nothing was created: the parents of items {names} form a cycle.")
    created: list[tuple[TaskState, str]] = []
    for v in valid:
        parent = existing[v.parent] if isinstance(v.parent, TaskRef) else None
        values = {
            "project_id": project_ids[v.key],
            "number": numbers[v.key],
            "title": v.title,
            "description": v.description,
            "status": v.status,
            "priority": v.priority,
            "assignee": v.assignee,
            "due_date": v.due,
            "workstream": v.workstream,
            # An existing parent is written with the row; a batch item's once it has an id (below).
            "parent_id": parent.id if parent is not None else None,
            "created_at": rec.now,
            "updated_at": rec.now,
            "created_by": rec.actor,
            "version": 1,
        }
        numbers[v.key] += 1
        shown_parent = format_task_id(parent.key, parent.number) if parent is not None else None
        created.append((TaskState(id=0, values=values, labels=v.labels, parent=shown_parent), v.key))
    ids = connection.execute(_INSERT_TASKS, [task.values for task, _ in created]).scalars().all()
    for (task, _), task_id in zip(created, ids, strict=True):
        task.id = task.values["id"] = task_id
    if parents:
        for index, parent_index in parents.items():
            task, parent_task = created[index][0], created[parent_index][0]
            task.values["parent_id"] = parent_task.id
            task.parent = format_task_id(created[parent_index][1], parent_task.number)
        connection.execute(
            _SET_PARENT,
            [{"task_id": created[i][0].id, "new_parent": created[p][0].id} for i, p in parents.items()],
        )
    labels: list[dict[str, Any]] = []
    dependencies: list[dict[str, Any]] = []
    edges: dict[int, list[int]] = {}
    for index, v in enumerate(valid):
        task = created[index][0]
        labels.extend({"task_id": task.id, "label": label} for label in v.labels)
        for ref in dict.fromkeys(v.blocked_by):
            if ref == index:
                raise InvalidArgument(f"item {index}: a task cannot be blocked by itself.")
            blocker_id = created[ref][0].id if isinstance(ref, int) else existing[ref].id
            dependencies.append({"task_id": task.id, "blocker_id": blocker_id})
            if isinstance(ref, int):
                edges.setdefault(index, []).append(ref)
    cycle = find_cycle(edges)
    if cycle:
        names = " → ".join(f"@{i}" for i in cycle)
        raise Conflict(f"Nothing was created: items {names} would block each other in a cycle.")
    if labels:
        connection.execute(_INSERT_LABELS, labels)
    if dependencies:
        connection.execute(_INSERT_DEPENDENCIES, dependencies)
    for task, key in created:
        rec.task_created(key, task)
    return created


def created_row(connection: Connection, task: TaskState, key: str) -> TaskRow:
    """The full row of a task just created; more than one label is read back, in the database's order
    (what get_task and list_tasks show)."""
    if len(task.labels) > 1:
        task.labels = _stored_labels(connection, task.id)
    return _row_of(task, key)


# -- changing a task -----------------------------------------------------------------------------------


def check_version(session: Connection, task: Any, ref: TaskRef, expected: int | None) -> None:
    if expected is None or expected == task.version:
        return
    if expected < 1:
        raise InvalidArgument(
            f"expected_version is {str(expected)[:20]}; versions start at 1.",
            next_step="Read the task with get_task and pass the version it shows.",
        )
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
    connection: Connection,
    rec: Recorder,
    ref: TaskRef,
    changes: TaskChanges,
    *,
    expected_version: int | None,
    force: bool = False,
) -> tuple[TaskRow, list[str]]:
    """Change the fields given, under the task's row lock, with prebuilt statements on ``connection``."""
    postgres = connection.dialect.name == "postgresql"
    found = connection.execute(
        _LOCKED_TASK_PG if postgres else _LOCKED_TASK, {"key": ref.key, "number": ref.number}
    ).one_or_none()
    if found is None:
        raise task_not_found(str(ref))
    key = ref.key
    check_version(connection, found, ref, expected_version)
    if postgres:
        labels = found.labels.split(",") if found.labels else []
    else:
        labels = _stored_labels(connection, found.id) if found.labels else []
    task = TaskState(
        id=found.id,
        values=found._asdict(),
        labels=labels,
        parent=format_task_id(found.parent_key, found.parent_number) if found.parent_id else None,
    )
    current = task.values
    written: dict[str, Any] = {}
    changed: list[tuple[str, object, object]] = []

    def change(name: str, old: object, new: object) -> bool:
        if old != new:
            changed.append((name, old, new))
            return True
        return False

    def write(column: str, value: object) -> None:
        current[column] = written[column] = value

    if changes.title is not None:
        title = check_text(changes.title, field="title", limit=MAX_TITLE, required=True)
        if change("title", current["title"], title):
            write("title", title)
    if changes.description is not None:
        description = check_text(changes.description, field="description", limit=MAX_DESCRIPTION)
        if change("description", current["description"], description):
            write("description", description)
    if changes.priority is not None:
        rank = priority_rank(changes.priority)
        if change("priority", priority_name(current["priority"]), changes.priority):
            write("priority", rank)
    if changes.assignee is not None:
        assignee = check_name(changes.assignee, field="assignee") if changes.assignee.strip() else None
        if change("assignee", current["assignee"], assignee):
            write("assignee", assignee)
    if changes.labels is not None:
        new_labels = check_labels(list(changes.labels))
        if change("labels", task.labels, new_labels):
            connection.execute(_DELETE_LABELS, {"task_id": task.id})
            if new_labels:
                connection.execute(_INSERT_LABELS, [{"task_id": task.id, "label": x} for x in new_labels])
            task.labels = new_labels
    if changes.due is not None:
        due = parse_date(changes.due, field="due") if changes.due.strip() else None
        if change("due", current["due_date"], due):
            write("due_date", due)
    if changes.workstream is not None:
        workstream = check_workstream(changes.workstream)
        if change("workstream", current["workstream"], workstream):
            write("workstream", workstream)
    if changes.parent is not None:
        new_parent = None
        if changes.parent.strip():
            new_parent = _task_ref(connection, parse_task_id(changes.parent))
            lock_graph(connection)
            loop = parent_loop(connection, found, new_parent)
            if loop:
                names = task_ids(connection, loop)
                shown = " → ".join(names.get(i, "?") for i in loop)
                raise Conflict(
                    f"{ref} cannot become a subtask of {changes.parent.strip().upper()}: the parent chain "
                    f"would loop ({shown}).",
                    next_step="Choose a parent that is not one of this task's own subtasks.",
                )
        new_parent_id = format_task_id(new_parent.key, new_parent.number) if new_parent else None
        if change("parent", task.parent, new_parent_id):
            write("parent_id", new_parent.id if new_parent else None)
            task.parent = new_parent_id
    if changes.status is not None:
        status = check_status(changes.status)
        check_transition(str(ref), current["status"], status)
        if status == "done" and status != current["status"] and not force:
            blockers = open_blockers(connection, task.id, 11)
            if blockers:
                listed = ", ".join(f"{b.id} ({b.status})" for b in blockers[:10])
                if len(blockers) > 10:
                    listed += f", … (list_tasks blocking={ref} lists all)"
                raise Conflict(
                    f"{ref} has open blockers: {listed}.",
                    next_step="Finish or cancel those first, or pass force=true to close it anyway.",
                )
            unchecked = unchecked_criteria(connection, task.id, 11)
            if unchecked:
                listed = "; ".join(f"#{i} {text!r}" for i, text in unchecked[:10])
                raise Conflict(
                    f"{ref} has unchecked acceptance criteria: {listed}"
                    + (" … (get_task lists all)" if len(unchecked) > 10 else "")
                    + ".",
                    next_step="Tick them with update_checklist check=[…] once met, or pass force=true "
                    "to close it anyway.",
                )
        if change("status", current["status"], status):
            write("status", status)
    if changed:
        write("version", current["version"] + 1)
        write("updated_at", rec.now)
        connection.execute(
            _update_of(tuple(written)),
            {"task_id": task.id, **{f"new_{column}": value for column, value in written.items()}},
        )
        for name, old, new in changed:
            rec.task_changed(key, task, name, old, new)
    return _row_of(task, key), [name for name, _, _ in changed]
