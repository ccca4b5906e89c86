"""One conversion of a stored task into the model a reply carries (:func:`task_row`), for every path.

A row is a Core ``Row`` (or any object with the task's columns as attributes) or a mapping of them (the
state the write paths keep). Dates and times come as the driver gives them: ``date``/``datetime`` objects
(PostgreSQL, or a column read through its SQLAlchemy type), or SQLite's stored text (a column read raw,
:func:`raw`). Read raw, a value that is not what the schema writes fails here, for its row alone, with one
of :data:`UNREADABLE` — so a listing can leave that row out and serve the rest (``unreadable.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from functools import partial
from typing import Any

from sqlalchemy import String, type_coerce

from ..models import TaskRow
from ..rules import PRIORITIES, STATUSES, format_task_id
from .history import iso

__all__ = ["UNREADABLE", "as_date", "as_datetime", "raw", "task_row"]

# What turning a stored value into an answer raises when the value is not what the schema writes.
UNREADABLE = (ValueError, LookupError, TypeError)


def raw(column: Any) -> Any:
    """``column`` as the driver returns it (labelled with its own name): SQLite's text for a date, not
    SQLAlchemy's parse of it, which fails for the whole statement on one bad value."""
    return type_coerce(column, String).label(column.key)


def as_date(value: Any) -> date | None:
    if value is None or (isinstance(value, date) and not isinstance(value, datetime)):
        return value
    if isinstance(value, str):
        return date.fromisoformat(value)
    raise TypeError(f"not a date: {type(value).__name__}")


def as_datetime(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, str):
        return datetime.fromisoformat(value)
    raise TypeError(f"not a time: {type(value).__name__}")


def _text(value: Any, *, optional: bool = False) -> Any:
    if isinstance(value, str) or (optional and value is None):
        return value
    raise TypeError(f"not text: {type(value).__name__}")


def _int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"not a whole number: {type(value).__name__}")


def task_row(
    row: Any,
    key: str,
    *,
    full: bool = False,
    labels: list[str] | None = None,
    parent: str | None = None,
    description_chars: int | None = None,
) -> TaskRow:
    """The task ``row`` of project ``key``: id, title, status, priority, assignee, due; with ``full``
    also description (cut at ``description_chars``, if given), labels, parent, version, created_at and
    updated_at. Raises one of :data:`UNREADABLE` for a value the schema does not write."""
    get = row.__getitem__ if isinstance(row, Mapping) else partial(getattr, row)
    status, rank = get("status"), _int(get("priority"))
    if status not in STATUSES:
        raise ValueError(f"not a status: {status!r}")
    if not 0 <= rank < len(PRIORITIES):
        raise ValueError(f"not a priority: {rank}")
    due = as_date(get("due_date"))
    task = TaskRow(
        id=format_task_id(key, _int(get("number"))),
        title=_text(get("title")),
        status=status,
        priority=PRIORITIES[rank],
        assignee=_text(get("assignee"), optional=True),
        due=due.isoformat() if due else None,
    )
    if full:
        description = _text(get("description"))
        if description_chars is not None and len(description) > description_chars:
            description = (
                description[:description_chars]
                + f"… [cut at {description_chars:,} of {len(description):,} characters: get_task shows all]"
            )
        task.description = description
        task.labels = labels if labels is not None else []
        task.parent = parent
        workstream = row.get("workstream") if isinstance(row, Mapping) else getattr(row, "workstream", None)
        task.workstream = _text(workstream, optional=True)
        task.version = _int(get("version"))
        task.created_at = iso(as_datetime(get("created_at")))
        task.updated_at = iso(as_datetime(get("updated_at")))
    return task
