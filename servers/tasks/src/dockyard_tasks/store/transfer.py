"""Export a project as JSON and import it back, exactly, into the same or another database.

The document holds what a person wrote and what happened: the project, each task with its fields,
labels, parent, dependencies, comments and history (actors and times kept). An import records that
history as its own entries (action ``imported``, by the importer, now), each carrying the document's
claim as data, which the export gives back: a document can say anything, so it never speaks in the
change feed in anyone else's name. Database ids and change-feed
revisions are not in it: they belong to one database. Importing an export and exporting the result
gives the same document, between SQLite and PostgreSQL too (a test checks both ways).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, select

from dockyard_shared import InvalidArgument, decode_cursor, encode_cursor, json_size

from ..models import ProjectExport, TaskDoc
from ..rules import (
    MAX_DESCRIPTION,
    format_task_id,
)
from .checklists import check_doc, checklists_of
from .history import iso
from .queries import find_project
from .rows import task_row
from .schema import Activity, Comment, Dependency, Label, Project, Task

_tasks, _projects = Task.__table__, Project.__table__

__all__ = ["FORMAT", "IMPORTED", "MAX_HISTORY_VALUE", "MAX_VERSION", "export_page"]

FORMAT = "dockyard-tasks/1"
MAX_VERSION = 2_000_000_000  # a version is a 32-bit integer column
MAX_HISTORY_VALUE = 2 * MAX_DESCRIPTION  # an old or new value: a description, or labels, a title…


# The lists of a task that an export page may split: a task too big for one page is continued on the
# next ones by parts ``{"id": …, "continues": true, "blocked_by": […], "comments": […], "history": […]}``
# that import appends to the task of that id.
_PARTS = ("blocked_by", "comments", "history")
_CHUNK = 100  # comments or history entries read at a time

IMPORTED = "imported"  # the action of a history entry carried in by import_project (see _claimed)


def _history_doc(h: Activity) -> dict[str, Any]:
    claimed = _claimed(h)
    if claimed is not None:
        return claimed
    return {
        "at": iso(h.at),
        "actor": h.actor,
        "action": h.action,
        "field": h.field,
        "old": h.old_value,
        "new": h.new_value,
        "version": h.task_version,
    }


def _claimed(h: Activity) -> dict[str, Any] | None:
    """The entry an import carried in, as its document claimed it (kept, as data, in the new value)."""
    if h.action != IMPORTED or not h.new_value:
        return None
    try:
        claimed = json.loads(h.new_value)
    except ValueError:
        return None
    return claimed if isinstance(claimed, dict) else None


def _items(session: Connection, task: Any, part: str, offset: int) -> Iterator[Any]:
    """One list of a task from ``offset`` on, in export order, read a chunk at a time."""
    if part == "blocked_by":
        rows = session.execute(
            select(Project.key, Task.number)
            .join(Project, Project.id == Task.project_id)
            .where(Task.id.in_(select(Dependency.blocker_id).where(Dependency.task_id == task.id)))
        )
        yield from sorted(format_task_id(key, number) for key, number in rows)[offset:]
        return
    while True:
        if part == "comments":
            chunk = session.execute(
                select(Comment.__table__)
                .where(Comment.task_id == task.id)
                .order_by(Comment.id)
                .offset(offset)
                .limit(_CHUNK)
            ).all()
            yield from ({"author": c.author, "body": c.body, "created_at": iso(c.created_at)} for c in chunk)
        else:
            chunk = session.execute(
                select(Activity.__table__)
                .where(Activity.task_id == task.id)
                .order_by(Activity.id)
                .offset(offset)
                .limit(_CHUNK)
            ).all()
            yield from (_history_doc(h) for h in chunk)
        if len(chunk) < _CHUNK:
            return
        offset += len(chunk)


def _task_fields(session: Connection, task: Any, key: str, refs: dict[int, str]) -> dict[str, Any]:
    labels = session.scalars(select(Label.label).where(Label.task_id == task.id).order_by(Label.label)).all()
    row = task_row(
        task, key, full=True, labels=list(labels), parent=refs.get(task.parent_id) if task.parent_id else None
    )
    lists = checklists_of(session, [task.id]).get(task.id, {})
    return TaskDoc(
        **row.model_dump(exclude={"created_at", "updated_at"}),
        source_url=task.source_url,
        criteria=[check_doc(e) for e in lists.get("criteria", [])],
        plan=[check_doc(e) for e in lists.get("plan", [])],
        created_at=row.created_at or "",
        created_by=task.created_by,
        updated_at=row.updated_at or "",
    ).model_dump()


def _task_piece(
    session: Connection,
    task: Any,
    key: str,
    refs: dict[int, str],
    offsets: list[int] | None,
    room: int,
    *,
    first: bool,
) -> tuple[dict[str, Any] | None, int, list[int] | None]:
    """As much of a task as fits in ``room`` characters: (the piece or None, its size, where to go on
    next time or None when the task is complete). ``offsets`` continue a task a previous page began.
    A page's first piece always holds something (the task's fields, or one entry): that is how a page
    makes progress; an entry is never split."""
    if offsets is None:
        piece = _task_fields(session, task, key, refs)
        offsets = [0, 0, 0]
        used = json_size(piece)
        if used > room and not first:
            return None, 0, None
        holds_something = True
    else:
        piece = {
            "id": format_task_id(key, task.number),
            "continues": True,
            "blocked_by": [],
            "comments": [],
            "history": [],
        }
        used = json_size(piece)
        holds_something = False
    for index, part in enumerate(_PARTS):
        for item in _items(session, task, part, offsets[index]):
            size = json_size(item) + 1  # and its comma
            if holds_something and used + size > room:
                return piece, used, offsets
            piece[part].append(item)
            offsets[index] += 1
            used += size
            holds_something = True
    return piece, used, None


def _ref_order(task_id: str) -> tuple[str, int]:
    key, _, number = task_id.rpartition("-")
    return key, int(number)


def _refs_of(session: Connection, tasks: list[Any]) -> dict[int, str]:
    """Human ids of the parents of these tasks (in any project)."""
    wanted = {t.parent_id for t in tasks if t.parent_id}
    if not wanted:
        return {}
    rows = session.execute(
        select(Task.id, Project.key, Task.number)
        .join(Project, Project.id == Task.project_id)
        .where(Task.id.in_(wanted))
    )
    return {row[0]: format_task_id(row[1], row[2]) for row in rows}


def export_page(
    session: Connection, key: str, cursor: str | None, *, max_tasks: int, max_chars: int
) -> ProjectExport:
    """Up to ``max_tasks`` tasks and ~``max_chars`` characters; a task bigger than that goes on over the
    next pages, as parts (see _PARTS)."""
    project = find_project(session, key)
    after, resume, offsets = 0, None, None
    if cursor:
        state = decode_cursor(cursor, tool="export_project")
        if state.get("p") != project.key:
            raise InvalidArgument(
                "This cursor belongs to the export of another project.",
                next_step="Pass the cursor with the project it came from, or drop it to start again.",
            )
        after = int(state.get("n", 0))
        if "t" in state:  # a task begun on the previous page
            resume, offsets = int(state["t"]), [int(o) for o in state["o"]]
    tasks = list(
        session.execute(
            select(Task.__table__)
            .where(Task.project_id == project.id, Task.number > after)
            .order_by(Task.number)
            .limit(max_tasks + 1)
        )
    )
    refs = _refs_of(session, tasks[:max_tasks])
    documents: list[dict[str, Any]] = []
    used = 0
    next_state: dict[str, Any] | None = None
    for task in tasks[:max_tasks]:
        begun = offsets if task.number == resume else None
        piece, size, rest = _task_piece(
            session, task, project.key, refs, begun, max_chars - used, first=not documents
        )
        if piece is None:
            next_state = {"p": project.key, "n": after}
            break
        documents.append(piece)
        used += size
        if rest is not None:
            next_state = {"p": project.key, "n": after, "t": task.number, "o": rest}
            break
        after = task.number
    else:
        if len(tasks) > max_tasks:
            next_state = {"p": project.key, "n": after}
    next_cursor = None
    note = None
    if next_state is not None:
        next_cursor = encode_cursor(next_state)
        note = (
            f"Page of {len(documents)} task entries: call export_project again with next_cursor for the "
            "rest; the whole export is this project header with every page's tasks in order (a task too "
            'big for one page goes on in entries marked "continues": true; import_project reads them as is).'
        )
    header = {
        "key": project.key,
        "name": project.name,
        "description": project.description,
        "created_at": iso(project.created_at),
        "created_by": project.created_by,
        "next_number": project.next_number,
    }
    return ProjectExport(format=FORMAT, project=header, tasks=documents, next_cursor=next_cursor, note=note)
