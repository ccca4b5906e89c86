"""What a write is asked to make or change, checked field by field before any database work.

No SQLAlchemy here (as in ``rules.py``): the tools build drafts before the store is open, and a draft
that fails its checks is refused without opening a transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from dockyard_shared import InvalidArgument

from .rules import (
    DEFAULT_PRIORITY,
    MAX_DESCRIPTION,
    MAX_TITLE,
    TaskRef,
    check_labels,
    check_name,
    check_status,
    check_text,
    check_workstream,
    parse_date,
    parse_project_key,
    parse_task_id,
    priority_rank,
)

__all__ = ["MAX_BLOCKED_BY", "IssueDraft", "TaskChanges", "TaskDraft", "ValidDraft", "validate_draft"]

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
    workstream: str | None = None


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
    workstream: str | None = None  # "" takes the task off its workstream


@dataclass(frozen=True)
class IssueDraft:
    """An issue as the task it becomes: values already cut to the tracker's limits."""

    url: str
    number: int
    title: str
    body: str
    labels: tuple[str, ...]
    closed: bool


@dataclass
class ValidDraft:
    """A draft checked field by field: each value as it will be stored."""

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
    workstream: str | None = None


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


def validate_draft(draft: TaskDraft, *, batch_size: int | None = None) -> ValidDraft:
    blocked_by = list(draft.blocked_by or ())
    if len(blocked_by) > MAX_BLOCKED_BY:
        raise InvalidArgument(f"blocked_by names {len(blocked_by)} tasks; at most {MAX_BLOCKED_BY}.")
    return ValidDraft(
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
        workstream=check_workstream(draft.workstream),
    )
