"""Moving tasks to another project or workstream, each with all its subtasks (move_tasks).

A task keeps its database id, so everything hung on it follows: comments, checklists, history, and its
dependencies and parent in both directions (links may cross projects, as anywhere in this tracker, so
a blocker left behind still blocks). The dependency graph and the parent tree are the same after a move
as before, so a move can never close a cycle. Moved to another project, a task is renumbered there from
the project's next number, in the order of the old ids; its history records ``moved`` (id: old → new)
and the change feed announces the old id as gone and the new one as come. Tasks are locked in id order,
then the target project's row (its numbers), as every write here takes tasks first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, select, update

from dockyard_shared import Conflict, InvalidArgument, LimitExceeded

from ..models import MoveResult
from ..rules import (
    MAX_TASK_NUMBER,
    TaskRef,
    check_workstream,
    format_task_id,
    parse_project_key,
    task_not_found,
)
from .history import Recorder
from .queries import project_id_of
from .schema import Activity, Project, Task

__all__ = ["MAX_MOVED", "MAX_NAMED", "move_tasks", "moved_to"]

MAX_NAMED = 50  # task ids one call names
MAX_MOVED = 500  # tasks one call moves, subtasks included
SHOWN = 100

_tasks, _projects = Task.__table__, Project.__table__


@dataclass
class _Moving:
    id: int
    number: int
    version: int
    key: str
    workstream: str | None


def _subtree(connection: Connection, roots: list[int]) -> list[int]:
    """The roots and every subtask below them, breadth first, refusing past MAX_MOVED."""
    seen = dict.fromkeys(roots)
    level = list(roots)
    while level:
        level = [
            i
            for i in connection.scalars(select(Task.id).where(Task.parent_id.in_(level)).order_by(Task.id))
            if i not in seen
        ]
        seen.update(dict.fromkeys(level))
        if len(seen) > MAX_MOVED:
            raise LimitExceeded(
                f"The move would take more than {MAX_MOVED} tasks with their subtasks; nothing was moved.",
                next_step="Move fewer or smaller subtrees per call.",
            )
    return list(seen)


def move_tasks(
    connection: Connection,
    rec: Recorder,
    refs: Sequence[TaskRef],
    *,
    project: str | None,
    workstream: str | None,
) -> MoveResult:
    if not refs:
        raise InvalidArgument("task_ids is empty.", next_step="Name at least one task to move.")
    if len(refs) > MAX_NAMED:
        raise InvalidArgument(f"{len(refs)} task ids given; one call names at most {MAX_NAMED}.")
    if project is None and workstream is None:
        raise InvalidArgument(
            "Nothing to move to: give project, workstream or both.",
            next_step='Pass project="KEY" and/or workstream="name" ("" takes tasks off their workstream).',
        )
    key = parse_project_key(project) if project is not None else None
    stream = check_workstream(workstream) if workstream is not None else None
    roots: list[int] = []
    for ref in dict.fromkeys(refs):
        found = connection.scalar(
            select(Task.id)
            .join(Project, Project.id == Task.project_id)
            .where(Project.key == ref.key, Task.number == ref.number)
        )
        if found is None:
            raise task_not_found(str(ref))
        roots.append(found)
    ids = sorted(_subtree(connection, roots))
    rows = connection.execute(
        select(Task.id, Task.number, Task.version, Task.workstream, Project.key)
        .join(Project, Project.id == Task.project_id)
        .where(Task.id.in_(ids))
        .order_by(Task.id)
        .with_for_update(of=Task)
    ).all()
    tasks = [_Moving(r.id, r.number, r.version, r.key, r.workstream) for r in rows]
    renumbered = [t for t in tasks if key is not None and t.key != key]
    numbers: list[int] = []
    target_id = None
    if key is not None:
        target_id = project_id_of(connection, key)
    if renumbered:
        taken = connection.execute(
            update(_projects)
            .where(_projects.c.id == target_id)
            .values(next_number=_projects.c.next_number + len(renumbered))
            .returning(_projects.c.next_number)
        ).scalar_one()
        first = taken - len(renumbered)
        if taken - 1 > MAX_TASK_NUMBER:
            raise Conflict(
                f"Project {key} has too few task numbers left for {len(renumbered)} tasks; nothing was moved.",
                next_step="Move them to another project.",
            )
        numbers = list(range(first, taken))
    moved: list[dict[str, str]] = []
    new_numbers = dict(zip((t.id for t in renumbered), numbers, strict=True))
    for task in tasks:
        values: dict[str, object] = {}
        old_id = format_task_id(task.key, task.number)
        if task.id in new_numbers:
            values.update(project_id=target_id, number=new_numbers[task.id])
        if workstream is not None and task.workstream != stream:
            values["workstream"] = stream
        if not values:
            continue
        task.version += 1
        connection.execute(
            update(_tasks)
            .where(_tasks.c.id == task.id)
            .values(**values, version=task.version, updated_at=rec.now)
        )
        if task.id in new_numbers:
            task.number, old_key, task.key = new_numbers[task.id], task.key, key or task.key
            rec.task_moved(old_key, task.key, task, old_id, format_task_id(task.key, task.number))
        if "workstream" in values:
            rec.task_changed(task.key, task, "workstream", task.workstream, stream)
            task.workstream = stream
        moved.append({"from": old_id, "to": format_task_id(task.key, task.number)})
    note = None
    if len(moved) > SHOWN:
        note = f"Showed {SHOWN} of {len(moved)} tasks moved; changes_since lists every move."
    elif not moved:
        note = "Nothing moved: every task was already there."
    return MoveResult(moved=moved[:SHOWN], count=len(moved), note=note)


def moved_to(connection: Connection, task_id: str, hops: int = 5) -> str | None:
    """Where a task id that no longer exists went, following up to ``hops`` moves; None if never moved.
    Read only when a lookup failed (the history has no index on old values: a scan, on an error path)."""
    found = None
    for _ in range(hops):
        new = connection.scalar(
            select(Activity.new_value)
            .where(Activity.action == "moved", Activity.field == "id", Activity.old_value == task_id)
            .order_by(Activity.id.desc())
            .limit(1)
        )
        if new is None:
            break
        found = task_id = new
    return found
