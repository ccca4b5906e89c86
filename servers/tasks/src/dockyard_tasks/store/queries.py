"""Reads: lookups, filtered pages of tasks, one task in full, the next task, the change feed, summaries.

Every list is bounded twice — by count and by JSON size — and pages by keyset (the last row's sort key
and id), so page 500 of 100,000 tasks costs what page 1 does.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, fields
from datetime import date, datetime
from typing import Any

from sqlalchemy import Connection, Select, bindparam, case, exists, func, literal, select, tuple_

from dockyard_shared import InvalidArgument, NotFound, bound_items, decode_cursor, did_you_mean, encode_cursor

from ..models import (
    ProjectInfo,
    ProjectList,
    TaskPage,
    TaskRow,
)
from ..rules import OPEN, TaskRef, format_task_id, task_not_found
from . import search
from .history import iso
from .rows import UNREADABLE, as_date, as_datetime, raw, task_row
from .schema import Dependency, Label, Project, Task, TaskCount
from .unreadable import unreadable_note

__all__ = [
    "ProjectDirectory",
    "TaskFilter",
    "find_project",
    "find_task",
    "list_projects",
    "list_tasks",
    "project_id_of",
    "project_info",
]

FAR_FUTURE = date(9999, 12, 31)  # where tasks without a due date sort
SORTS = ("created", "priority", "due", "updated")
LIST_DESCRIPTION_CHARS = 1_000  # a description in a full list row; get_task shows it all


@dataclass(frozen=True)
class TaskFilter:
    project: str | None = None
    statuses: tuple[str, ...] = ()
    assignee: str | None = None
    label: str | None = None
    text: str | None = None
    due_before: date | None = None
    due_after: date | None = None
    parent: TaskRef | None = None
    blocking: TaskRef | None = None  # only the tasks this task waits on (its blockers)
    blocked_by: TaskRef | None = None  # only the tasks waiting on this task
    sort: str = "created"
    workstream: str | None = None  # only the tasks on this workstream

    def digest(self) -> str:
        # Not asdict(): it rebuilds tuples by their type, which a TaskRef (parent=, blocking=) refuses.
        raw = json.dumps({f.name: getattr(self, f.name) for f in fields(self)}, default=str, sort_keys=True)
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


# -- lookups ---------------------------------------------------------------------------------------


def _project_not_found(session: Connection, key: str) -> NotFound:
    keys = session.scalars(select(Project.key).order_by(Project.key).limit(200)).all()
    hint = did_you_mean(key, keys, kind="project key") if keys else "There are no projects yet."
    return NotFound(
        f"Project {key} does not exist.", next_step=f"{hint} Use list_projects to see the projects."
    )


_PROJECT = select(Project.__table__).where(Project.key == bindparam("key"))


def find_project(session: Connection, key: str) -> Any:
    """The project row (its columns by name)."""
    project = session.execute(_PROJECT, {"key": key}).one_or_none()
    if project is None:
        raise _project_not_found(session, key)
    return project


_PROJECT_ID = select(Project.id).where(Project.key == bindparam("key"))


def project_id_of(connection: Connection, key: str) -> int:
    """The database id of a project (a prebuilt Core statement: no ORM object to load)."""
    project_id = connection.scalar(_PROJECT_ID, {"key": key})
    if project_id is None:
        raise _project_not_found(connection, key)
    return project_id


_FIND_TASK = (
    select(Task.__table__, Project.key.label("project_key"))
    .join(Project, Project.id == Task.project_id)
    .where(Project.key == bindparam("key"), Task.number == bindparam("number"))
)
_FIND_TASK_LOCKED = _FIND_TASK.with_for_update(of=Task.__table__)


def find_task(connection: Connection, ref: TaskRef, *, lock: bool = False) -> tuple[Any, str]:
    """The task's row (its columns by name) and its project key; ``lock`` holds the row until commit
    (PostgreSQL)."""
    statement = _FIND_TASK_LOCKED if lock else _FIND_TASK
    found = connection.execute(statement, {"key": ref.key, "number": ref.number}).one_or_none()
    if found is None:
        raise task_not_found(str(ref))
    return found, found.project_key


def task_ids(session: Connection, ids: list[int]) -> dict[int, str]:
    """Human ids of tasks by database id."""
    if not ids:
        return {}
    rows = session.execute(
        select(Task.id, Project.key, Task.number)
        .join(Project, Project.id == Task.project_id)
        .where(Task.id.in_(ids))
    )
    return {row[0]: format_task_id(row[1], row[2]) for row in rows}


class ProjectDirectory:
    """Project keys and ids, remembered once read.

    A project's key and id never change after it is created (projects are never renamed or deleted),
    so a remembered pair cannot go stale; a project created since (here or by another replica) is a
    miss, read from the database like before. list_tasks asked the database for both on every page:
    on PostgreSQL each is a round trip, which costs most when the server has been idle between calls.
    """

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._keys: dict[int, str] = {}

    def id_of(self, connection: Connection, key: str) -> int:
        project_id = self._ids.get(key)
        if project_id is None:
            project_id = project_id_of(connection, key)  # NotFound, with suggestions, when there is none
            self._keys[project_id], self._ids[key] = key, project_id
        return project_id

    def keys_of(self, connection: Connection, project_ids: set[int]) -> dict[int, str]:
        missing = project_ids - self._keys.keys()
        for project_id, key in project_keys_of(connection, missing).items():
            self._keys[project_id], self._ids[key] = key, project_id
        return {project_id: self._keys[project_id] for project_id in project_ids}


def project_keys_of(session: Connection, project_ids: set[int]) -> dict[int, str]:
    if not project_ids:
        return {}
    return dict(session.execute(select(Project.id, Project.key).where(Project.id.in_(project_ids))).all())


# -- projects ----------------------------------------------------------------------------------------


def _counts_by_project(scope: Any = None) -> Select:
    """Tasks and open tasks per project, from task_counts (kept by triggers; see schema.TaskCount)."""
    statement = select(
        TaskCount.project_id,
        func.sum(TaskCount.tasks).label("tasks"),
        func.sum(case((TaskCount.status.in_(OPEN), TaskCount.tasks), else_=0)).label("open"),
    ).group_by(TaskCount.project_id)
    return statement if scope is None else statement.where(scope)


_PROJECT_COUNTS = _counts_by_project().subquery()
# Built once: composing it per call through the ORM cost ~1 ms of CPU, ten times the queries themselves.
_PROJECTS_BY_KEY = (
    select(
        Project.key,
        Project.name,
        Project.description,
        Project.created_at,
        func.coalesce(_PROJECT_COUNTS.c.tasks, 0),
        func.coalesce(_PROJECT_COUNTS.c.open, 0),
    )
    .outerjoin(_PROJECT_COUNTS, _PROJECT_COUNTS.c.project_id == Project.id)
    .order_by(Project.key)
    .limit(bindparam("limit"))
)
_PROJECT_TOTAL = select(func.count()).select_from(Project)


def list_projects(connection: Connection, *, limit: int) -> ProjectList:
    rows = connection.execute(_PROJECTS_BY_KEY, {"limit": limit + 1}).all()
    total = connection.scalar(_PROJECT_TOTAL) or 0
    projects = [
        ProjectInfo(
            key=key,
            name=name,
            description=description,
            tasks=int(tasks),
            open=int(open_),
            created_at=iso(created_at) or "",
        )
        for key, name, description, created_at, tasks, open_ in rows[:limit]
    ]
    truncated = len(rows) > limit
    note = f"Showing the first {limit} of {total} projects by key." if truncated else None
    return ProjectList(projects=projects, total=total, truncated=truncated, note=note)


def project_info(session: Connection, key: str) -> ProjectInfo:
    project = find_project(session, key)
    counted = session.execute(_counts_by_project(TaskCount.project_id == project.id)).one_or_none()
    tasks, open_ = (counted.tasks, counted.open) if counted else (0, 0)
    return ProjectInfo(
        key=project.key,
        name=project.name,
        description=project.description,
        tasks=int(tasks or 0),
        open=int(open_ or 0),
        created_at=iso(project.created_at) or "",
    )


# -- list_tasks ----------------------------------------------------------------------------------------


def _sort_columns(query: TaskFilter) -> tuple[list[Any], bool]:
    """The keyset columns of a sort (the last is always the id) and whether it runs descending."""
    sort = query.sort
    if sort == "priority":
        return [Task.priority, Task.id], False
    if sort == "due" and (query.due_before is not None or query.due_after is not None):
        # A due filter leaves no task without a date, so the (due_date, id) index gives the order and
        # the page stops after its rows; ordering by the COALESCE below sorted every match first
        # (15 ms: 9,648 dated tasks checked for the label, 1,223 matches sorted, of 100,000). The
        # values, and so the cursors, are the same.
        return [Task.due_date, Task.id], False
    if sort == "due":
        return [func.coalesce(Task.due_date, FAR_FUTURE), Task.id], False
    if sort == "updated":
        return [Task.updated_at, Task.id], True
    return [Task.id], False


def _key_values(sort: str, row: Any) -> list[Any]:
    """The keyset of ``row`` (its sort column read raw: see rows.raw), for the next page's cursor."""
    if sort == "priority":
        return [row.priority, row.id]
    if sort == "due":
        return [_iso_or_stored(as_date, row.due_date or FAR_FUTURE), row.id]
    if sort == "updated":
        return [_iso_or_stored(as_datetime, row.updated_at), row.id]
    return [row.id]


def _iso_or_stored(parse: Any, value: Any) -> Any:
    # A stored value that is not a date (SQLite, rows.UNREADABLE) still orders the page: as its text.
    try:
        return parse(value).isoformat()
    except UNREADABLE:
        return str(value)


def _decoded_key(sort: str, values: list[Any]) -> list[Any]:
    parse = date.fromisoformat if sort == "due" else datetime.fromisoformat if sort == "updated" else None
    if parse is None:
        return values
    try:
        return [parse(values[0]), values[1]]
    except ValueError:
        return values  # the text of an unreadable stored value (_iso_or_stored)


_TASK_ID = (
    select(Task.id)
    .join(Project, Project.id == Task.project_id)
    .where(Project.key == bindparam("key"), Task.number == bindparam("number"))
)


def task_id_of(connection: Connection, ref: TaskRef) -> int:
    """The database id of a task (a prebuilt Core statement: no ORM object to load)."""
    task_id = connection.scalar(_TASK_ID, {"key": ref.key, "number": ref.number})
    if task_id is None:
        raise task_not_found(str(ref))
    return task_id


def _filtered(
    session: Connection, query: TaskFilter, statement: Select, projects: ProjectDirectory
) -> Select:
    if query.project is not None:
        statement = statement.where(Task.project_id == projects.id_of(session, query.project))
    if query.statuses:
        statement = statement.where(Task.status.in_(query.statuses))
    if query.assignee is not None:
        statement = statement.where(Task.assignee == query.assignee)
    if query.workstream is not None:
        statement = statement.where(Task.workstream == query.workstream)
    if query.label is not None:
        statement = statement.where(
            exists().where(Label.task_id == Task.id, Label.label == query.label.strip().lower())
        )
    if query.due_before is not None:
        statement = statement.where(Task.due_date < query.due_before)
    if query.due_after is not None:
        statement = statement.where(Task.due_date > query.due_after)
    if query.parent is not None:
        statement = statement.where(Task.parent_id == task_id_of(session, query.parent))
    if query.blocking is not None:
        waiting = task_id_of(session, query.blocking)
        statement = statement.where(
            exists().where(Dependency.task_id == waiting, Dependency.blocker_id == Task.id)
        )
    if query.blocked_by is not None:
        blocker = task_id_of(session, query.blocked_by)
        statement = statement.where(
            exists().where(Dependency.blocker_id == blocker, Dependency.task_id == Task.id)
        )
    return statement


def list_tasks(
    session: Connection,
    query: TaskFilter,
    *,
    limit: int,
    max_chars: int,
    full: bool,
    cursor: str | None,
    projects: ProjectDirectory | None = None,
) -> TaskPage:
    projects = projects or ProjectDirectory()
    columns, descending = _sort_columns(query)
    # No join with projects here: SQLite would then drive the query from the 20 projects and scan every
    # task of each; the keys of the page's projects are looked up afterwards instead. Dates are read raw
    # (rows.raw): one a row holds that is not a date leaves that row out, not the page.
    statement = select(
        Task.id,
        Task.project_id,
        Task.number,
        Task.title,
        Task.status,
        Task.priority,
        Task.assignee,
        raw(Task.due_date),
        raw(Task.updated_at),
        *(
            [Task.description, Task.parent_id, Task.workstream, Task.version, raw(Task.created_at)]
            if full
            else []
        ),
    )
    statement = _filtered(session, query, statement, projects)
    if query.text:  # by the text search's index where it has one (search.py)
        statement, columns = search.containing(session, statement, columns, query.text)
    if cursor:
        state = decode_cursor(cursor, tool="list_tasks")
        if state.get("f") != query.digest():
            raise InvalidArgument(
                "This cursor belongs to a list_tasks call with other filters or another sort.",
                next_step="Pass the same filters and sort as the call that gave the cursor, or drop the cursor.",
            )
        after = tuple_(*columns)
        key = tuple_(*[literal(v) for v in _decoded_key(query.sort, state["k"])])
        statement = statement.where(after < key if descending else after > key)
    order = [c.desc() for c in columns] if descending else columns
    rows = session.execute(statement.order_by(*order).limit(limit + 1)).all()
    keys = projects.keys_of(session, {row.project_id for row in rows})
    labels: dict[int, list[str]] = {}
    parents: dict[int, str] = {}
    if full and rows:
        ids = [row.id for row in rows[:limit]]
        for task_id, label in session.execute(
            select(Label.task_id, Label.label).where(Label.task_id.in_(ids)).order_by(Label.label)
        ):
            labels.setdefault(task_id, []).append(label)
        parents = task_ids(session, [row.parent_id for row in rows[:limit] if row.parent_id])

    readable: list[tuple[Any, TaskRow]] = []
    unreadable: list[str] = []
    for row in rows[:limit]:
        try:
            item = task_row(
                row,
                keys[row.project_id],
                full=full,
                labels=labels.get(row.id, []),
                parent=parents.get(row.parent_id) if full and row.parent_id else None,
                description_chars=LIST_DESCRIPTION_CHARS,
            )
        except UNREADABLE:
            unreadable.append(_shown_id(keys, row))
            continue
        readable.append((row, item))
    bounded = bound_items(
        (item for _, item in readable),
        max_items=limit,
        max_chars=max_chars,
        size_of=lambda r: len(r.model_dump_json(exclude_none=True)),
    )
    shown = len(bounded.items)
    next_cursor = None
    notes = []
    last = readable[shown - 1][0] if shown < len(readable) else rows[limit - 1] if len(rows) > limit else None
    has_more = last is not None
    if last is not None:
        next_cursor = encode_cursor({"f": query.digest(), "k": _key_values(query.sort, last)})
        why = "the page size limit" if shown < len(readable) else f"limit={limit}"
        notes.append(
            f"More tasks match (page cut by {why}): call list_tasks again with the same filters and cursor."
        )
    if unreadable:
        notes.append(unreadable_note(unreadable))
    return TaskPage(
        tasks=bounded.items,
        count=shown,
        has_more=has_more,
        next_cursor=next_cursor,
        note=" ".join(notes) or None,
    )


def _shown_id(keys: dict[int, str], row: Any) -> str:
    key, number = keys.get(row.project_id), row.number
    return (
        format_task_id(key, number)
        if key is not None and isinstance(number, int)
        else f"task number {number!r}"
    )
