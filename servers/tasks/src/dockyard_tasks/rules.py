"""What a valid project, task and change look like: names, statuses, transitions, sizes, ids.

Pure functions (no database, no MCP): every check raises a :mod:`dockyard_shared` problem that names
the valid options, so the model can correct its next call.
"""

from __future__ import annotations

import re
from datetime import date

from dockyard_shared import InvalidArgument, NotFound

__all__ = [
    "CLOSED",
    "OPEN",
    "PRIORITIES",
    "STATUSES",
    "TRANSITIONS",
    "TaskRef",
    "check_transition",
    "parse_date",
    "parse_project_key",
    "parse_task_id",
    "priority_name",
    "priority_rank",
    "task_not_found",
]

STATUSES = ("todo", "in_progress", "blocked", "done", "cancelled")
OPEN = ("todo", "in_progress", "blocked")
CLOSED = ("done", "cancelled")
# Which status may follow which. Closed work is reopened to todo (or straight back to in_progress
# when done turns out not to be); a cancelled task is not resumed without being planned again.
TRANSITIONS: dict[str, tuple[str, ...]] = {
    "todo": ("in_progress", "blocked", "done", "cancelled"),
    "in_progress": ("todo", "blocked", "done", "cancelled"),
    "blocked": ("todo", "in_progress", "done", "cancelled"),
    "done": ("todo", "in_progress"),
    "cancelled": ("todo",),
}
# Stored as a rank so sorting and "highest priority first" are index order.
PRIORITIES = ("urgent", "high", "medium", "low")
DEFAULT_PRIORITY = "medium"

# Sizes: generous for people, small enough that one task always fits in a reply.
MAX_TITLE = 300
MAX_DESCRIPTION = 20_000
MAX_COMMENT = 10_000
MAX_NAME = 100  # project names, assignees, actors
MAX_LABEL = 40
MAX_LABELS = 20
MAX_SEARCH = 200
MAX_TASK_NUMBER = 999_999_999  # task ids have at most nine digits (parse_task_id)

_KEY = re.compile(r"^[A-Z][A-Z0-9]{1,9}$")
_TASK_ID = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]{1,9})-(\d{1,9})\s*$")
_LABEL = re.compile(r"^[^\x00-\x1f\x7f,]+$")


class TaskRef(tuple):
    """A parsed task id: (project key, number); ``str()`` gives the canonical ``WEB-12``."""

    def __new__(cls, key: str, number: int) -> TaskRef:
        return super().__new__(cls, (key, number))

    @property
    def key(self) -> str:
        return self[0]

    @property
    def number(self) -> int:
        return self[1]

    def __str__(self) -> str:
        return f"{self[0]}-{self[1]}"


def format_task_id(key: str, number: int) -> str:
    return f"{key}-{number}"


def parse_task_id(value: object) -> TaskRef:
    """``WEB-12`` (any case, leading zeros allowed: the seed's ``TASK-001`` is ``TASK-1``)."""
    text = value if isinstance(value, str) else ""
    match = _TASK_ID.match(text)
    if not match or int(match.group(2)) == 0:
        shown = repr(value)[:60]
        raise InvalidArgument(
            f"{shown} is not a task id: ids look like WEB-12 (the project key, a dash, the task number).",
            next_step="Use list_tasks to see the tasks and their ids.",
        )
    return TaskRef(match.group(1).upper(), int(match.group(2)))


def task_not_found(task_id: str) -> NotFound:
    """The seed's answer for an unknown task, so a model corrects itself the same way."""
    shown = task_id if len(task_id) <= 40 else task_id[:40] + "…"
    return NotFound(f"Task {shown} does not exist.", next_step="Use list_tasks to see the tasks.")


def parse_project_key(value: object) -> str:
    text = value.strip().upper() if isinstance(value, str) else ""
    if not _KEY.match(text):
        raise InvalidArgument(
            f"{repr(value)[:40]} is not a project key: 2–10 letters or digits, starting with a letter (WEB, OPS2).",
            next_step="Use list_projects to see the project keys.",
        )
    return text


def check_status(value: object) -> str:
    if value not in STATUSES:
        raise InvalidArgument(
            f"{repr(value)[:40]} is not a status.", next_step=f"Use one of: {', '.join(STATUSES)}."
        )
    return value  # type: ignore[return-value]


def check_transition(task_id: str, old: str, new: str) -> None:
    if new != old and new not in TRANSITIONS[old]:
        raise InvalidArgument(
            f"{task_id} cannot go from {old} to {new}.",
            next_step=f"From {old} a task may go to: {', '.join(TRANSITIONS[old])}.",
        )


def priority_rank(value: object) -> int:
    if value not in PRIORITIES:
        raise InvalidArgument(
            f"{repr(value)[:40]} is not a priority.", next_step=f"Use one of: {', '.join(PRIORITIES)}."
        )
    return PRIORITIES.index(value)  # type: ignore[arg-type]


def priority_name(rank: int) -> str:
    return PRIORITIES[rank]


def parse_date(value: object, *, field: str) -> date:
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidArgument(
            f"{field} {repr(value)[:40]} is not a date.", next_step="Write dates as YYYY-MM-DD."
        ) from None


def check_text(value: object, *, field: str, limit: int, required: bool = False) -> str:
    """A free-text field: any characters (it is data, returned verbatim), bounded in size."""
    if not isinstance(value, str):
        raise InvalidArgument(f"{field} must be text.")
    if required and not value.strip():
        raise InvalidArgument(f"{field} must not be empty.", next_step=f"Give the {field} some text.")
    if len(value) > limit:
        raise InvalidArgument(
            f"{field} is {len(value):,} characters; at most {limit:,} are allowed.",
            next_step=f"Shorten the {field}, or put the detail in comments.",
        )
    if "\x00" in value:
        raise InvalidArgument(f"{field} contains a NUL character.", next_step="Remove it.")
    return value


def check_name(value: object, *, field: str) -> str:
    """A short single-line name: an assignee, an actor, a project name."""
    text = check_text(value, field=field, limit=MAX_NAME, required=True).strip()
    if any(ch in text for ch in "\r\n\t"):
        raise InvalidArgument(f"{field} must be one line.", next_step="Remove line breaks and tabs.")
    return text


def check_labels(values: object) -> list[str]:
    if not isinstance(values, list | tuple):
        raise InvalidArgument("labels must be a list of strings.")
    labels: list[str] = []
    for value in values:
        if not isinstance(value, str) or not value.strip():
            raise InvalidArgument("Each label must be a non-empty string.")
        label = value.strip().lower()
        if len(label) > MAX_LABEL or not _LABEL.match(label):
            raise InvalidArgument(
                f"Label {value[:50]!r} is not allowed: at most {MAX_LABEL} characters, no commas or control characters.",
                next_step="Use short labels such as bug, frontend, q3.",
            )
        if label not in labels:
            labels.append(label)
    if len(labels) > MAX_LABELS:
        raise InvalidArgument(
            f"{len(labels)} labels given; at most {MAX_LABELS} per task.", next_step="Use fewer labels."
        )
    return sorted(labels)


def check_workstream(value: object) -> str | None:
    """A workstream (one board per task inside its project): as a label, lowercased; "" means none."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise InvalidArgument("workstream must be a string.")
    name = value.strip().lower()
    if len(name) > MAX_LABEL or not _LABEL.match(name):
        raise InvalidArgument(
            f"Workstream {value[:50]!r} is not allowed: at most {MAX_LABEL} characters, no commas or "
            "control characters.",
            next_step="Use a short name such as backend, docs, release-2.",
        )
    return name
