"""Import a project from export_project's JSON (the export side and the format are in transfer.py).

Every field of the document is checked (it can say anything), and its history is recorded as the
importer's own entries carrying the document's claim as data (transfer.py says why).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Connection, bindparam, insert, select, update

from dockyard_shared import Conflict, InvalidArgument

from ..models import ExportDocument, HistoryDoc, ImportResult, TaskDoc
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
from .checklists import checklist_rows
from .graph import find_cycle
from .history import Recorder, iso
from .queries import find_task
from .schema import CheckItem, Comment, Dependency, Label, Project, Task
from .sources import source_url
from .transfer import FORMAT, IMPORTED, MAX_HISTORY_VALUE, MAX_VERSION

_tasks, _projects = Task.__table__, Project.__table__

__all__ = ["Steps", "import_document"]

#: A checkpoint (import_steps.ImportSteps): called with (done, total, what) every STEP tasks; it may raise
#: to stop the import, which the caller's transaction then rolls back.
Steps = Callable[[int, int, str], None]
STEP = 100


def _moment(value: str, field: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
        # Stored as naive UTC, like every time in this schema.
        return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo is not None else parsed
    except (ValueError, OverflowError):  # OverflowError: a time at the very edge of the calendar
        raise InvalidArgument(f"{field} {value[:40]!r} is not an ISO 8601 time.") from None


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


def _no_steps(done: int, total: int, what: str) -> None:
    return None


def import_document(
    session: Connection,
    rec: Recorder,
    document: object,
    *,
    key: str | None,
    max_tasks: int,
    steps: Steps = _no_steps,
) -> ImportResult:
    """Create the project and everything in it, or nothing (the caller's one transaction). ``steps`` is
    called between batches of tasks (progress, and a chance to stop: see ``Steps``)."""
    doc, items = _parsed(document, max_tasks)
    total = 2 * len(items)  # each task is visited twice: its row, then what hangs off it
    steps(0, total, f"read {len(items):,} tasks")
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
        if index and index % STEP == 0:
            steps(index, total, f"checked {index:,} of {len(items):,} tasks")
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
        steps(len(items), total, f"inserting {len(items):,} tasks")
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
        if index % STEP == 0:
            steps(len(items) + index, total, f"linked {index:,} of {len(items):,} tasks")
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
    steps(total, total, f"inserting the comments, history and links of {len(items):,} tasks")
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
