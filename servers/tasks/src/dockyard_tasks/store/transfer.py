"""Export a project as JSON and import it back, exactly, into the same or another database.

The document holds what a person wrote and what happened: the project, each task with its fields,
labels, parent, dependencies, comments and history (actors and times kept). Database ids and change-feed
revisions are not in it: they belong to one database. Importing an export and exporting the result
gives the same document, between SQLite and PostgreSQL too (a test checks both ways).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from dockyard_shared import Conflict, InvalidArgument, decode_cursor, encode_cursor, json_size

from ..models import ExportDocument, ImportResult, ProjectExport, TaskDoc
from ..rules import (
    MAX_COMMENT,
    MAX_DESCRIPTION,
    MAX_TITLE,
    check_labels,
    check_name,
    check_status,
    check_text,
    format_task_id,
    parse_date,
    parse_project_key,
    parse_task_id,
    priority_name,
    priority_rank,
)
from .graph import find_cycle
from .history import Recorder, iso
from .queries import find_project, find_task
from .schema import Activity, Comment, Dependency, Label, Project, Task

__all__ = ["FORMAT", "export_page", "import_document"]

FORMAT = "dockyard-tasks/1"


def _moment(value: str, field: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidArgument(f"{field} {value[:40]!r} is not an ISO 8601 time.") from None
    # Stored as naive UTC, like every time in this schema.
    return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo is not None else parsed


def _task_doc(session: Session, task: Task, key: str, refs: dict[int, str]) -> dict[str, Any]:
    labels = session.scalars(select(Label.label).where(Label.task_id == task.id).order_by(Label.label)).all()
    blockers = session.scalars(select(Dependency.blocker_id).where(Dependency.task_id == task.id)).all()
    comments = session.scalars(select(Comment).where(Comment.task_id == task.id).order_by(Comment.id)).all()
    history = session.scalars(select(Activity).where(Activity.task_id == task.id).order_by(Activity.id)).all()
    return TaskDoc(
        id=format_task_id(key, task.number),
        title=task.title,
        description=task.description,
        status=task.status,
        priority=priority_name(task.priority),
        assignee=task.assignee,
        due=task.due_date.isoformat() if task.due_date else None,
        labels=list(labels),
        parent=refs.get(task.parent_id) if task.parent_id else None,
        blocked_by=sorted((refs[b] for b in blockers), key=_ref_order),
        created_at=iso(task.created_at) or "",
        created_by=task.created_by,
        updated_at=iso(task.updated_at) or "",
        version=task.version,
        comments=[{"author": c.author, "body": c.body, "created_at": iso(c.created_at)} for c in comments],
        history=[
            {
                "at": iso(h.at),
                "actor": h.actor,
                "action": h.action,
                "field": h.field,
                "old": h.old_value,
                "new": h.new_value,
                "version": h.task_version,
            }
            for h in history
        ],
    ).model_dump()


def _ref_order(task_id: str) -> tuple[str, int]:
    key, _, number = task_id.rpartition("-")
    return key, int(number)


def _refs_of(session: Session, tasks: list[Task]) -> dict[int, str]:
    """Human ids of every task these tasks point at (parents and blockers, in any project)."""
    wanted = {t.parent_id for t in tasks if t.parent_id}
    wanted |= set(
        session.scalars(select(Dependency.blocker_id).where(Dependency.task_id.in_([t.id for t in tasks])))
    )
    if not wanted:
        return {}
    rows = session.execute(
        select(Task.id, Project.key, Task.number)
        .join(Project, Project.id == Task.project_id)
        .where(Task.id.in_(wanted))
    )
    return {row[0]: format_task_id(row[1], row[2]) for row in rows}


def export_page(
    session: Session, key: str, cursor: str | None, *, max_tasks: int, max_chars: int
) -> ProjectExport:
    project = find_project(session, key)
    after = 0
    if cursor:
        state = decode_cursor(cursor, tool="export_project")
        if state.get("p") != project.key:
            raise InvalidArgument(
                "This cursor belongs to the export of another project.",
                next_step="Pass the cursor with the project it came from, or drop it to start again.",
            )
        after = int(state.get("n", 0))
    tasks = list(
        session.scalars(
            select(Task)
            .where(Task.project_id == project.id, Task.number > after)
            .order_by(Task.number)
            .limit(max_tasks + 1)
        )
    )
    refs = _refs_of(session, tasks[:max_tasks])
    documents: list[dict[str, Any]] = []
    used = 0
    for task in tasks[:max_tasks]:
        document = _task_doc(session, task, project.key, refs)
        size = json_size(document)
        if documents and used + size > max_chars:
            break
        documents.append(document)
        used += size
    more = len(tasks) > len(documents)
    next_cursor = None
    note = None
    if more:
        last = _ref_order(documents[-1]["id"])[1]
        next_cursor = encode_cursor({"p": project.key, "n": last})
        note = (
            f"Page of {len(documents)} tasks: call export_project again with next_cursor for the rest; the "
            "whole export is this project header with every page's tasks in order."
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


def _parsed(document: object, max_tasks: int) -> ExportDocument:
    if not isinstance(document, dict):
        raise InvalidArgument("The document must be a JSON object as export_project returns it.")
    if document.get("format") != FORMAT:
        raise InvalidArgument(
            f"The document's format is {str(document.get('format'))[:40]!r}; this server reads {FORMAT!r}.",
            next_step="Pass a document written by export_project.",
        )
    tasks = document.get("tasks")
    if isinstance(tasks, list) and len(tasks) > max_tasks:
        raise InvalidArgument(
            f"The document holds {len(tasks):,} tasks; one import takes at most {max_tasks:,}."
        )
    try:
        return ExportDocument.model_validate(
            {k: v for k, v in document.items() if k not in ("next_cursor", "note")}
        )
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors(include_url=False)[:5]
        )
        raise InvalidArgument(f"The document is not a valid export: {problems}.") from None


def import_document(
    session: Session, rec: Recorder, document: object, *, key: str | None, max_tasks: int
) -> ImportResult:
    """Create the project and everything in it, or nothing (the caller's one transaction)."""
    doc = _parsed(document, max_tasks)
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
    for index, task in enumerate(doc.tasks):
        ref = parse_task_id(task.id)
        if ref.key != source:
            raise InvalidArgument(f"tasks[{index}] {task.id} is not in project {source}.")
        if renamed(task.id) in numbers:
            raise InvalidArgument(f"tasks[{index}]: {task.id} appears twice.")
        numbers[renamed(task.id)] = ref.number
    project = Project(
        key=target,
        name=check_name(doc.project.name, field="project name"),
        description=check_text(doc.project.description, field="project description", limit=MAX_DESCRIPTION),
        next_number=max([doc.project.next_number, *(n + 1 for n in numbers.values())]),
        created_at=_moment(doc.project.created_at, "project.created_at"),
        created_by=check_name(doc.project.created_by, field="project.created_by"),
    )
    session.add(project)
    session.flush()
    made: dict[str, Task] = {}
    for index, item in enumerate(doc.tasks):
        where = f"tasks[{index}]"
        task = Task(
            project_id=project.id,
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
            version=max(1, item.version),
        )
        session.add(task)
        made[renamed(item.id)] = task
    session.flush()

    def resolve(task_id: str, where: str) -> Task:
        name = renamed(task_id)
        if name in made:
            return made[name]
        if parse_task_id(name).key == target:
            raise InvalidArgument(f"{where} names {task_id}, which is not in the document.")
        return find_task(session, parse_task_id(name))[0]

    edges: dict[int, list[int]] = {}
    parents: dict[int, list[int]] = {}
    counts = {"comments": 0, "history": 0, "dependencies": 0}
    for index, item in enumerate(doc.tasks):
        task = made[renamed(item.id)]
        where = f"tasks[{index}]"
        if item.parent:
            parent = resolve(item.parent, f"{where}.parent")
            task.parent_id = parent.id
            parents[task.id] = [parent.id]
        for label in check_labels(item.labels):
            session.add(Label(task_id=task.id, label=label))
        for blocker_id in dict.fromkeys(item.blocked_by):
            blocker = resolve(blocker_id, f"{where}.blocked_by")
            if blocker.id == task.id:
                raise InvalidArgument(f"{where}: {item.id} is blocked by itself.")
            session.add(Dependency(task_id=task.id, blocker_id=blocker.id))
            edges.setdefault(task.id, []).append(blocker.id)
            counts["dependencies"] += 1
        for number, comment in enumerate(item.comments):
            session.add(
                Comment(
                    task_id=task.id,
                    author=check_name(comment.author, field=f"{where}.comments[{number}].author"),
                    body=check_text(comment.body, field=f"{where}.comments[{number}]", limit=MAX_COMMENT),
                    created_at=_moment(comment.created_at, f"{where}.comments[{number}].created_at"),
                )
            )
            counts["comments"] += 1
        rec.imported(
            dict(
                at=_moment(h.at, f"{where}.history.at"),
                actor=check_name(h.actor, field=f"{where}.history.actor"),
                project_key=target,
                task_id=task.id,
                task_number=task.number,
                task_version=h.version,
                action=check_text(h.action, field=f"{where}.history.action", limit=30, required=True),
                field=check_text(h.field, field=f"{where}.history.field", limit=30) if h.field else None,
                old_value=h.old,
                new_value=h.new,
            )
            for h in item.history
        )
        counts["history"] += len(item.history)
    for graph, what in ((edges, "dependencies"), (parents, "parents")):
        cycle = find_cycle(graph)
        if cycle:
            ids = {t.id: name for name, t in made.items()}
            shown = " → ".join(ids.get(i, "another project's task") for i in cycle)
            raise Conflict(f"Nothing was imported: the document's {what} form a cycle ({shown}).")
    rec.project_created(target, project.name, action="imported")
    rec.created.extend(made)
    return ImportResult(project=target, tasks=len(made), **counts)
