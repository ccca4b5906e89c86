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
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Connection, bindparam, insert, select, update

from dockyard_shared import Conflict, InvalidArgument, decode_cursor, encode_cursor, json_size

from ..models import ExportDocument, HistoryDoc, ImportResult, ProjectExport, TaskDoc
from ..rules import (
    MAX_COMMENT,
    MAX_DESCRIPTION,
    MAX_TASK_NUMBER,
    MAX_TITLE,
    check_labels,
    check_name,
    check_status,
    check_text,
    check_workstream,
    format_task_id,
    parse_date,
    parse_project_key,
    parse_task_id,
    priority_rank,
)
from .checklists import check_doc, checklist_rows, checklists_of
from .graph import find_cycle
from .history import Recorder, iso
from .queries import find_project, find_task
from .rows import task_row
from .schema import Activity, CheckItem, Comment, Dependency, Label, Project, Task
from .sources import source_url

_tasks, _projects = Task.__table__, Project.__table__

__all__ = ["FORMAT", "IMPORTED", "export_page", "import_document"]

FORMAT = "dockyard-tasks/1"
MAX_VERSION = 2_000_000_000  # a version is a 32-bit integer column
MAX_HISTORY_VALUE = 2 * MAX_DESCRIPTION  # an old or new value: a description, or labels, a title…


def _moment(value: str, field: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
        # Stored as naive UTC, like every time in this schema.
        return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo is not None else parsed
    except (ValueError, OverflowError):  # OverflowError: a time at the very edge of the calendar
        raise InvalidArgument(f"{field} {value[:40]!r} is not an ISO 8601 time.") from None


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


def _parsed(document: object, max_tasks: int) -> tuple[ExportDocument, list[TaskDoc]]:
    """The document, and its tasks with every continuation part appended to its task."""
    if not isinstance(document, dict):
        raise InvalidArgument("The document must be a JSON object as export_project returns it.")
    if document.get("format") != FORMAT:
        raise InvalidArgument(
            f"The document's format is {str(document.get('format'))[:40]!r}; this server reads {FORMAT!r}.",
            next_step="Pass a document written by export_project.",
        )
    tasks = document.get("tasks")
    if isinstance(tasks, list):
        count = sum(1 for t in tasks if not (isinstance(t, dict) and t.get("continues")))
        if count > max_tasks:
            raise InvalidArgument(
                f"The document holds {count:,} tasks; one import takes at most {max_tasks:,}."
            )
    try:
        doc = ExportDocument.model_validate(
            {k: v for k, v in document.items() if k not in ("next_cursor", "note")}
        )
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors(include_url=False)[:5]
        )
        raise InvalidArgument(f"The document is not a valid export: {problems}.") from None
    merged: list[TaskDoc] = []
    for index, item in enumerate(doc.tasks):
        if isinstance(item, TaskDoc):
            merged.append(item.model_copy(deep=True))
            continue
        if not merged or merged[-1].id != item.id:
            raise InvalidArgument(
                f"tasks[{index}] continues {item.id[:40]}, which is not the task just before it.",
                next_step="Concatenate the export's pages' tasks in the order they came.",
            )
        for part in ("blocked_by", "comments", "history"):
            getattr(merged[-1], part).extend(getattr(item, part))
    return doc, merged


def _in_range(value: int, low: int, high: int, field: str) -> int:
    if not low <= value <= high:
        raise InvalidArgument(
            f"{field} is {value}; it must be from {low:,} to {high:,}.",
            next_step="Pass the value export_project wrote.",
        )
    return value


def _history_value(value: str | None, field: str) -> str | None:
    return None if value is None else check_text(value, field=field, limit=MAX_HISTORY_VALUE)


def _imported_history(h: HistoryDoc, where: str) -> tuple[str | None, str]:
    """What the document says happened, checked like any value: (its field, the claim as JSON).

    It is recorded as the importer's, at the time of the import (``imported``): the document's actors
    and times are what it claims, kept as data, never the change feed's own who and when."""
    version = None if h.version is None else _in_range(h.version, 1, MAX_VERSION, f"{where}.version")
    field = check_text(h.field, field=f"{where}.field", limit=30) if h.field else None
    claim = {
        "at": iso(_moment(h.at, f"{where}.at")),
        "actor": check_name(h.actor, field=f"{where}.actor"),
        "action": check_text(h.action, field=f"{where}.action", limit=30, required=True),
        "field": field,
        "old": _history_value(h.old, f"{where}.old"),
        "new": _history_value(h.new, f"{where}.new"),
        "version": version,
    }
    return field, json.dumps(claim, ensure_ascii=False, separators=(",", ":"))


def import_document(
    session: Connection, rec: Recorder, document: object, *, key: str | None, max_tasks: int
) -> ImportResult:
    """Create the project and everything in it, or nothing (the caller's one transaction)."""
    doc, items = _parsed(document, max_tasks)
    source = parse_project_key(doc.project.key)
    target = parse_project_key(key) if key else source
    if session.scalar(select(Project.id).where(Project.key == target)) is not None:
        raise Conflict(
            f"Project {target} already exists; an import never merges into an existing project.",
            next_step="Import under another key (key=...), or into another database.",
        )

    def renamed(task_id: str) -> str:
        ref = parse_task_id(task_id)
        return format_task_id(target if ref.key == source else ref.key, ref.number)

    numbers: dict[str, int] = {}
    for index, task in enumerate(items):
        ref = parse_task_id(task.id)
        if ref.key != source:
            raise InvalidArgument(f"tasks[{index}] {task.id} is not in project {source}.")
        if renamed(task.id) in numbers:
            raise InvalidArgument(f"tasks[{index}]: {task.id} appears twice.")
        numbers[renamed(task.id)] = ref.number
    project = dict(
        key=target,
        name=check_name(doc.project.name, field="project name"),
        description=check_text(doc.project.description, field="project description", limit=MAX_DESCRIPTION),
        next_number=max(
            [
                _in_range(doc.project.next_number, 1, MAX_TASK_NUMBER, "project.next_number"),
                *(n + 1 for n in numbers.values()),
            ]
        ),
        created_at=_moment(doc.project.created_at, "project.created_at"),
        created_by=check_name(doc.project.created_by, field="project.created_by"),
    )
    project_id = session.scalar(insert(_projects).values(**project).returning(_projects.c.id))
    made: dict[str, SimpleNamespace] = {}
    values: list[dict[str, Any]] = []
    urls: dict[str, str] = {}
    for index, item in enumerate(items):
        where = f"tasks[{index}]"
        task = dict(
            project_id=project_id,
            number=numbers[renamed(item.id)],
            title=check_text(item.title, field=f"{where}.title", limit=MAX_TITLE, required=True),
            description=check_text(item.description, field=f"{where}.description", limit=MAX_DESCRIPTION),
            status=check_status(item.status),
            priority=priority_rank(item.priority),
            assignee=check_name(item.assignee, field=f"{where}.assignee") if item.assignee else None,
            due_date=parse_date(item.due, field=f"{where}.due") if item.due else None,
            created_at=_moment(item.created_at, f"{where}.created_at"),
            updated_at=_moment(item.updated_at, f"{where}.updated_at"),
            created_by=check_name(item.created_by, field=f"{where}.created_by"),
            version=_in_range(item.version, 1, MAX_VERSION, f"{where}.version"),
            parent_id=None,
            workstream=check_workstream(item.workstream),
            source_url=source_url(session, item.source_url, where, urls),
        )
        values.append(task)
        made[renamed(item.id)] = SimpleNamespace(number=task["number"], version=task["version"])
    if values:
        ids = session.scalars(insert(_tasks).returning(_tasks.c.id, sort_by_parameter_order=True), values)
        for task, task_id in zip(made.values(), ids, strict=True):
            task.id = task_id

    def resolve(task_id: str, where: str) -> Any:
        name = renamed(task_id)
        if name in made:
            return made[name]
        if parse_task_id(name).key == target:
            raise InvalidArgument(f"{where} names {task_id}, which is not in the document.")
        return find_task(session, parse_task_id(name))[0]

    edges: dict[int, list[int]] = {}
    parents: dict[int, list[int]] = {}
    counts = {"comments": 0, "history": 0, "dependencies": 0}
    parent_of: list[dict[str, int]] = []
    labels: list[dict[str, Any]] = []
    dependencies: list[dict[str, int]] = []
    comments: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        task = made[renamed(item.id)]
        where = f"tasks[{index}]"
        if item.parent:
            parent = resolve(item.parent, f"{where}.parent")
            parent_of.append({"t_id": task.id, "p_id": parent.id})
            parents[task.id] = [parent.id]
        labels += [{"task_id": task.id, "label": label} for label in check_labels(item.labels)]
        checks += checklist_rows(task.id, "criteria", item.criteria, where, _moment)
        checks += checklist_rows(task.id, "plan", item.plan, where, _moment)
        for blocker_id in dict.fromkeys(item.blocked_by):
            blocker = resolve(blocker_id, f"{where}.blocked_by")
            if blocker.id == task.id:
                raise InvalidArgument(f"{where}: {item.id} is blocked by itself.")
            dependencies.append({"task_id": task.id, "blocker_id": blocker.id})
            edges.setdefault(task.id, []).append(blocker.id)
            counts["dependencies"] += 1
        for number, comment in enumerate(item.comments):
            comments.append(
                dict(
                    task_id=task.id,
                    author=check_name(comment.author, field=f"{where}.comments[{number}].author"),
                    body=check_text(comment.body, field=f"{where}.comments[{number}]", limit=MAX_COMMENT),
                    created_at=_moment(comment.created_at, f"{where}.comments[{number}].created_at"),
                )
            )
            counts["comments"] += 1
        rows = []
        for number, h in enumerate(item.history):
            field, claim = _imported_history(h, f"{where}.history[{number}]")
            rows.append(
                dict(
                    at=rec.now,
                    actor=rec.actor,
                    project_key=target,
                    task_id=task.id,
                    task_number=task.number,
                    # The task's version as imported: what it is at after this import (the version
                    # the document claims for the entry is in the claim).
                    task_version=task.version,
                    action=IMPORTED,
                    field=field,
                    old_value=None,
                    new_value=claim,
                )
            )
        rec.imported(rows)
        counts["history"] += len(item.history)
    for graph, what in ((edges, "dependencies"), (parents, "parents")):
        cycle = find_cycle(graph)
        if cycle:
            ids = {t.id: name for name, t in made.items()}
            shown = " → ".join(ids.get(i, "another project's task") for i in cycle)
            raise Conflict(f"Nothing was imported: the document's {what} form a cycle ({shown}).")
    if parent_of:
        session.execute(
            update(_tasks).where(_tasks.c.id == bindparam("t_id")).values(parent_id=bindparam("p_id")),
            parent_of,
        )
    for table, rows in (
        (Label.__table__, labels),
        (Dependency.__table__, dependencies),
        (Comment.__table__, comments),
        (CheckItem.__table__, checks),
    ):
        if rows:
            session.execute(insert(table), rows)
    rec.project_created(target, project["name"], action="imported")
    rec.created.extend(made)
    return ImportResult(project=target, tasks=len(made), **counts)
