"""Rows of a SQLite file that this server cannot read, found by SQL so a failed read can name them.

Why: SQLite keeps whatever a file holds — a due date ``'garbage'``, a priority 99 written with the checks
off, a title stored as bytes — and one such row made every listing that reached it fail with an internal
error, for every caller, with nothing saying where. PostgreSQL's column types and checks refuse such
values on write, so this is SQLite's alone.

When a read fails while turning rows into answers (or SQLite cannot decode a value), the store runs
:func:`find_unreadable` on a fresh connection: one statement, each column checked against what the
schema stores. If it finds rows, the caller is told which tasks and which values; if it finds none the
failure is ours, and reported as such.
"""

from __future__ import annotations

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError

from dockyard_shared import UpstreamUnavailable

from ..rules import PRIORITIES, STATUSES

__all__ = ["UNREADABLE_SHOWN", "find_unreadable", "unreadable_in", "unreadable_note", "unreadable_problem"]

UNREADABLE_SHOWN = 5  # rows named in one error
SKIPPED_SHOWN = 20  # task ids named in a listing's note
_VALUE_CHARS = 40  # of a stored value quoted back

_STATUSES = ", ".join(f"'{status}'" for status in STATUSES)
# Each check: the column, and when its stored value is not what the schema writes (SQLAlchemy's text forms).
_TASK_CHECKS = {
    "status": f"typeof(t.status) <> 'text' OR t.status NOT IN ({_STATUSES})",
    "priority": f"typeof(t.priority) <> 'integer' OR t.priority NOT BETWEEN 0 AND {len(PRIORITIES) - 1}",
    "due_date": "t.due_date IS NOT NULL AND (typeof(t.due_date) <> 'text' OR date(t.due_date) IS NOT t.due_date)",
    "created_at": "typeof(t.created_at) <> 'text' OR datetime(t.created_at) IS NULL",
    "updated_at": "typeof(t.updated_at) <> 'text' OR datetime(t.updated_at) IS NULL",
    "title": "typeof(t.title) <> 'text'",
    "description": "typeof(t.description) NOT IN ('text', 'null')",
    "assignee": "typeof(t.assignee) NOT IN ('text', 'null')",
    "version": "typeof(t.version) <> 'integer'",
    "number": "typeof(t.number) <> 'integer'",
    "project_id": "p.id IS NULL",
}
_COMMENT_CHECKS = {
    "comment body": "typeof(c.body) <> 'text'",
    "comment author": "typeof(c.author) <> 'text'",
    "comment created_at": "typeof(c.created_at) <> 'text' OR datetime(c.created_at) IS NULL",
}


def _shown(column: str) -> str:
    # A blob as X'…' (hex): never decoded as UTF-8 by the driver.
    return f"CASE WHEN typeof({column}) = 'blob' THEN quote({column}) ELSE CAST({column} AS TEXT) END"


def _scan() -> str:
    parts = [
        f"SELECT p.key, t.number, '{column}', {_shown('t.' + column)} FROM tasks t "
        f"LEFT JOIN projects p ON p.id = t.project_id WHERE {check}"
        for column, check in _TASK_CHECKS.items()
    ]
    parts += [
        f"SELECT p.key, t.number, '{column}', {_shown('c.' + column.split()[-1])} FROM comments c "
        f"JOIN tasks t ON t.id = c.task_id LEFT JOIN projects p ON p.id = t.project_id WHERE {check}"
        for column, check in _COMMENT_CHECKS.items()
    ]
    return " UNION ALL ".join(f"SELECT * FROM ({part} LIMIT {UNREADABLE_SHOWN + 1})" for part in parts)


_SCAN = text(_scan())


def find_unreadable(connection: Connection) -> list[str]:
    """Up to UNREADABLE_SHOWN + 1 descriptions of unreadable values, as 'WEB-2 (due_date 'garbage')'."""
    found = []
    for key, number, column, value in connection.execute(_SCAN):
        task = f"{key}-{number}" if key is not None and isinstance(number, int) else f"task number {number!r}"
        shown = value if value is None or len(value) <= _VALUE_CHARS else value[:_VALUE_CHARS] + "…"
        found.append(f"{task} ({column} {shown!r})")
        if len(found) > UNREADABLE_SHOWN:
            break
    return found


def unreadable_problem(found: list[str]) -> UpstreamUnavailable:
    more = " and more" if len(found) > UNREADABLE_SHOWN else ""
    return UpstreamUnavailable(
        f"The task database holds values this server cannot read: {', '.join(found[:UNREADABLE_SHOWN])}{more}. "
        "Nothing was changed. Calls that reach these tasks fail until they are repaired; every other call "
        "is served.",
        next_step="Narrow the call so it leaves these tasks out (another project, status or filter; other "
        "tasks by id), and tell the user: the operator should correct or remove these values in the database.",
        retryable=False,
    )


def unreadable_in(engine: Engine) -> UpstreamUnavailable | None:
    """An error naming the unreadable values of the SQLite database ``engine`` opens; None if none."""
    try:
        with engine.connect() as connection:
            found = find_unreadable(connection)
    except DBAPIError:
        return None
    return unreadable_problem(found) if found else None


def unreadable_note(task_ids: list[str]) -> str:
    """A listing's note naming the tasks it left out because a stored value of theirs cannot be read."""
    shown = ", ".join(task_ids[:SKIPPED_SHOWN])
    more = f" and {len(task_ids) - SKIPPED_SHOWN} more" if len(task_ids) > SKIPPED_SHOWN else ""
    return (
        f"Left out {len(task_ids)} task{'s' if len(task_ids) != 1 else ''} whose stored values this server "
        f"cannot read: {shown}{more}. get_task on one names the value; tell the user, whose operator should "
        "repair or remove it in the database."
    )
