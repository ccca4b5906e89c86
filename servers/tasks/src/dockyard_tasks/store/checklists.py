"""Acceptance criteria and plan steps (migration 0007): ordered checklists a model ticks, who and when kept.

Each kind is at most :data:`MAX_ITEMS` one-line items of at most :data:`MAX_ITEM` characters. Replacing a
list keeps the tick of every item whose text is unchanged. A change bumps the task's version and is
recorded in its history (field ``criteria`` or ``plan``). ``done`` is refused while a criterion is
unticked, unless forced (mutations.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update

from dockyard_shared import InvalidArgument

from ..models import CheckDoc, CheckEntry, ChecklistResult
from ..rules import TaskRef, check_name, task_not_found
from .history import Recorder, iso
from .schema import CheckItem, Project, Task

__all__ = [
    "KINDS",
    "MAX_ITEM",
    "MAX_ITEMS",
    "check_doc",
    "check_items",
    "checklist_rows",
    "checklists_of",
    "unchecked_criteria",
    "update_checklist",
]

KINDS = ("criteria", "plan")
MAX_ITEMS = 50
MAX_ITEM = 300

_items = CheckItem.__table__
_UNCHECKED = (
    select(CheckItem.position, CheckItem.text)
    .where(
        CheckItem.task_id == bindparam("task_id"), CheckItem.kind == "criteria", CheckItem.done_at.is_(None)
    )
    .order_by(CheckItem.position)
    .limit(bindparam("limit"))
)
_OF_TASKS = (
    select(CheckItem)
    .where(CheckItem.task_id.in_(bindparam("ids", expanding=True)))
    .order_by(CheckItem.task_id, CheckItem.kind, CheckItem.position)
)


def check_items(values: object, *, kind: str) -> list[str]:
    """Each item a non-empty line of at most MAX_ITEM characters; at most MAX_ITEMS of them."""
    if not isinstance(values, list | tuple):
        raise InvalidArgument(f"{kind} must be a list of strings.")
    if len(values) > MAX_ITEMS:
        raise InvalidArgument(
            f"{len(values):,} {kind} items given; a task holds at most {MAX_ITEMS}.",
            next_step="Keep the checklist short: split the work into subtasks.",
        )
    items = []
    for n, value in enumerate(values, 1):
        if not isinstance(value, str) or not value.strip():
            raise InvalidArgument(f"{kind} item {n} is empty.")
        text = " ".join(value.split())
        if len(text) > MAX_ITEM or "\x00" in text:
            raise InvalidArgument(
                f"{kind} item {n} has {len(text):,} characters; at most {MAX_ITEM}, one line, no NUL.",
                next_step="Shorten it; details go in the description.",
            )
        items.append(text)
    return items


def unchecked_criteria(connection: Connection, task_id: int, limit: int) -> list[tuple[int, str]]:
    return [
        (r.position, r.text) for r in connection.execute(_UNCHECKED, {"task_id": task_id, "limit": limit})
    ]


def _entry(row: Any) -> CheckEntry:
    return CheckEntry(
        n=row.position,
        text=row.text,
        done=row.done_at is not None,
        done_by=row.done_by,
        done_at=iso(row.done_at),
    )


def checklists_of(connection: Connection, task_ids: Sequence[int]) -> dict[int, dict[str, list[CheckEntry]]]:
    """Every checklist of these tasks: task id → kind → items in order (tasks without any left out)."""
    found: dict[int, dict[str, list[CheckEntry]]] = {}
    if not task_ids:
        return found
    for row in connection.execute(_OF_TASKS, {"ids": list(task_ids)}):
        found.setdefault(row.task_id, {}).setdefault(row.kind, []).append(_entry(row))
    return found


@dataclass
class _Locked:
    id: int
    number: int
    version: int


def _summary(items: list[tuple[str, bool]]) -> str:
    return "; ".join(f"[{'x' if done else ' '}] {text}" for text, done in items)


def update_checklist(
    connection: Connection,
    rec: Recorder,
    ref: TaskRef,
    kind: str,
    *,
    items: Sequence[str] | None,
    check: Sequence[int],
    uncheck: Sequence[int],
    expected_version: int | None,
    check_version: Any,
) -> ChecklistResult:
    if kind not in KINDS:
        raise InvalidArgument(f"kind {str(kind)[:20]!r} is none of {', '.join(KINDS)}.")
    new_texts = check_items(list(items), kind=kind) if items is not None else None
    found = connection.execute(
        select(Task.id, Task.number, Task.version)
        .join(Project, Project.id == Task.project_id)
        .where(Project.key == ref.key, Task.number == ref.number)
        .with_for_update(of=Task)
    ).one_or_none()
    if found is None:
        raise task_not_found(str(ref))
    check_version(connection, found, ref, expected_version)
    rows = connection.execute(
        select(CheckItem)
        .where(CheckItem.task_id == found.id, CheckItem.kind == kind)
        .order_by(CheckItem.position)
    ).all()
    before = [(r.text, r.done_at is not None) for r in rows]
    # (text, done_at, done_by) per item, in order
    state = [(r.text, r.done_at, r.done_by) for r in rows]
    if new_texts is not None:
        ticks: dict[str, list[tuple[Any, Any]]] = {}
        for text, at, by in state:
            if at is not None:
                ticks.setdefault(text, []).append((at, by))
        state = [(text, *(ticks[text].pop(0) if ticks.get(text) else (None, None))) for text in new_texts]
    both = set(check) & set(uncheck)
    if both:
        raise InvalidArgument(f"Item {min(both)} is both in check and uncheck.")
    for n in [*check, *uncheck]:
        if not 1 <= n <= len(state):
            raise InvalidArgument(
                f"{ref} has no {kind} item {n}: "
                + (f"items are numbered 1–{len(state)}." if state else f"its {kind} list is empty."),
                next_step="Read the task with get_task (criteria, plan) and use the n shown.",
            )
    for n in check:
        text, at, by = state[n - 1]
        if at is None:
            state[n - 1] = (text, rec.now, rec.actor)
    for n in uncheck:
        state[n - 1] = (state[n - 1][0], None, None)
    after = [(text, at is not None) for text, at, _ in state]
    changed = after != before
    version = found.version
    if changed:
        connection.execute(delete(_items).where(_items.c.task_id == found.id, _items.c.kind == kind))
        if state:
            connection.execute(
                insert(_items),
                [
                    {
                        "task_id": found.id,
                        "kind": kind,
                        "position": n,
                        "text": t,
                        "done_at": at,
                        "done_by": by,
                    }
                    for n, (t, at, by) in enumerate(state, 1)
                ],
            )
        version += 1
        connection.execute(
            update(Task.__table__)
            .where(Task.__table__.c.id == found.id)
            .values(version=version, updated_at=rec.now)
        )
        rec.task_changed(
            ref.key, _Locked(found.id, found.number, version), kind, _summary(before), _summary(after)
        )
    entries = [
        CheckEntry(n=n, text=t, done=at is not None, done_by=by, done_at=iso(at))
        for n, (t, at, by) in enumerate(state, 1)
    ]
    return ChecklistResult(
        task=str(ref),
        kind=kind,
        items=entries,
        unchecked=sum(1 for e in entries if not e.done),
        changed=changed,
        version=version,
    )


# -- export and import (transfer.py) --------------------------------------------------------------


def check_doc(entry: CheckEntry) -> CheckDoc:
    return CheckDoc(text=entry.text, done_at=entry.done_at, done_by=entry.done_by)


def checklist_rows(
    task_id: int, kind: str, docs: list[CheckDoc], where: str, moment: Callable[[str, str], Any]
) -> list[dict[str, Any]]:
    texts = check_items([d.text for d in docs], kind=f"{where}.{kind}")
    rows = []
    for n, (text, d) in enumerate(zip(texts, docs, strict=True), 1):
        ticked = d.done_at is not None
        rows.append(
            dict(
                task_id=task_id,
                kind=kind,
                position=n,
                text=text,
                done_at=moment(d.done_at, f"{where}.{kind}[{n - 1}].done_at") if ticked else None,
                done_by=check_name(d.done_by or "", field=f"{where}.{kind}[{n - 1}].done_by")
                if ticked
                else None,
            )
        )
    return rows
