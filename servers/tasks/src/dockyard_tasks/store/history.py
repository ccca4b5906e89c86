"""The activity history: every change recorded as what, old → new, when and by whom.

A write transaction collects its changes in a :class:`Recorder`; ``finish()`` takes the next revision
from the one-row ``feed`` table (which locks that row until commit, so revisions follow commit order)
and writes the activity rows under it. The :class:`ChangeEvent` it returns is what the notification
layer fans out once the transaction has committed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from functools import cache
from typing import Any

from sqlalchemy import Connection, TextClause, bindparam, insert, select, text, update

from ..models import ChangeEntry
from ..rules import format_task_id
from .schema import Activity, Feed

__all__ = [
    "ChangeEvent",
    "Recorder",
    "change_entry",
    "changes_after_version",
    "describe_changes",
    "iso",
    "shown",
]

SHOWN_VALUE = 200  # characters of an old/new value shown in a history entry


def iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat(timespec="seconds") + "Z"


def shown(value: str | None, limit: int = SHOWN_VALUE) -> str | None:
    if value is None or len(value) <= limit:
        return value
    return value[:limit] + f"… ({len(value):,} characters)"


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value)
    return str(value)


@dataclass(frozen=True)
class ChangeEvent:
    """What one committed transaction changed, by resource."""

    revision: int
    tasks: tuple[str, ...] = ()  # task ids changed (created, updated, deleted)
    projects: tuple[str, ...] = ()  # project keys whose summary changed
    created: tuple[str, ...] = ()  # task ids that came into existence
    deleted: tuple[str, ...] = ()  # task ids that no longer exist
    new_projects: tuple[str, ...] = ()

    @property
    def resources_changed(self) -> bool:
        """Did resources come or go (a task:// or project:// URI appeared or vanished)?"""
        return bool(self.created or self.deleted or self.new_projects)


# Built once (their compiled forms are cached): the history is written with plain Core statements on the
# write's connection.
_NEXT_REVISION = update(Feed).where(Feed.id == 1).values(revision=Feed.revision + 1).returning(Feed.revision)
_INSERT_ACTIVITY = insert(Activity.__table__)


@dataclass
class Recorder:
    """The history rows of one write transaction, written on its connection.

    A task it is told about is anything with ``id``, ``number`` and ``version`` (an ORM ``Task``, or
    the plain state the Core write paths keep)."""

    connection: Connection
    actor: str
    now: datetime
    rows: list[dict[str, Any]] = field(default_factory=list)
    # Rows about a task get its id and final version at finish(): a new task has no id before the
    # flush, and a task's version moves once per transaction, whatever number of fields changed.
    about: list[tuple[dict[str, Any], Any]] = field(default_factory=list)
    tasks: dict[str, None] = field(default_factory=dict)
    projects: dict[str, None] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    new_projects: list[str] = field(default_factory=list)

    def _add(self, key: str, task: Any, action: str, *, field_name=None, old=None, new=None) -> None:
        self.projects[key] = None
        row = dict(
            at=self.now,
            actor=self.actor,
            project_key=key,
            task_id=task.id if task is not None else None,
            task_number=task.number if task is not None else None,
            task_version=task.version if task is not None else None,
            action=action,
            field=field_name,
            old_value=_as_text(old),
            new_value=_as_text(new),
        )
        self.rows.append(row)
        if task is not None:
            self.tasks[format_task_id(key, task.number)] = None
            if action != "deleted":
                self.about.append((row, task))

    def project_created(self, key: str, name: str, action: str = "project_created") -> None:
        self.new_projects.append(key)
        self._add(key, None, action, new=name)

    def task_created(self, key: str, task: Any) -> None:
        self.created.append(format_task_id(key, task.number))
        self._add(key, task, "created", new=task.title)

    def task_changed(self, key: str, task: Any, name: str, old: Any, new: Any) -> None:
        self._add(key, task, "changed", field_name=name, old=old, new=new)

    def task_moved(self, old_key: str, key: str, task: Any, old_id: str, new_id: str) -> None:
        """A task renumbered into project ``key``: its old id (and project) are announced as changed and
        gone, the new id as come; the history entry (under the new project) says old id → new id."""
        self.projects[old_key] = None
        self.tasks[old_id] = None
        self.deleted.append(old_id)
        self.created.append(new_id)
        self._add(key, task, "moved", field_name="id", old=old_id, new=new_id)

    def commented(self, key: str, task: Any, body: str) -> None:
        self._add(key, task, "commented", new=shown(body))

    def linked(self, key: str, task: Any, blocker_id: str, *, added: bool) -> None:
        if added:
            self._add(key, task, "linked", field_name="blocked_by", new=blocker_id)
        else:
            self._add(key, task, "unlinked", field_name="blocked_by", old=blocker_id)

    def task_deleted(self, key: str, task: Any) -> None:
        self.deleted.append(format_task_id(key, task.number))
        self._add(key, task, "deleted", old=task.title)

    def imported(self, rows: Iterable[dict[str, Any]]) -> None:
        """History carried over from an export (transfer.py makes each row the importer's, action
        ``imported``): each row a dict of every activity column but ``id`` and ``revision``."""
        self.rows.extend(rows)

    def finish(self, *, postgres: bool = False, announce: Announce | None = None) -> ChangeEvent:
        """Write the rows under the next revision (call last in the transaction, just before commit).

        ``announce`` gives the PostgreSQL NOTIFY of the change (see :data:`Announce`); it is sent in
        this transaction, so only a commit delivers it. On PostgreSQL the revision, the rows and the
        notice go in one statement: each statement is a round trip that wakes the database backend."""
        if not self.rows:
            return ChangeEvent(revision=0)
        for row, task in self.about:
            row["task_id"], row["task_version"] = task.id, task.version
        event = ChangeEvent(
            revision=0,
            tasks=tuple(self.tasks),
            projects=tuple(self.projects),
            created=tuple(self.created),
            deleted=tuple(self.deleted),
            new_projects=tuple(self.new_projects),
        )
        notice = announce(event) if announce is not None else None
        if postgres and len(self.rows) <= _COMBINED_ROWS:
            parameters = {f"{c.name}_{i}": row[c.name] for i, row in enumerate(self.rows) for c in _WRITTEN}
            if notice is not None:
                parameters.update(channel=notice[0], head=notice[1], tail=notice[2])
            revision = self.connection.execute(
                _recorded(len(self.rows), notify=notice is not None), parameters
            ).scalar_one()
            return replace(event, revision=revision)
        revision = self.connection.execute(_NEXT_REVISION).scalar_one()
        for row in self.rows:
            row["revision"] = revision
        self.connection.execute(_INSERT_ACTIVITY, self.rows)
        if notice is not None:
            channel, head, tail = notice
            self.connection.execute(_NOTIFY, {"channel": channel, "payload": f"{head}{revision}{tail}"})
        return replace(event, revision=revision)


# PostgreSQL: NOTIFY as (channel, payload before the revision, payload after it), made from the change
# before its revision is known, because the statement that takes the revision also sends the notice.
Announce = Callable[[ChangeEvent], tuple[str, str, str]]

_NOTIFY = text("SELECT pg_notify(CAST(:channel AS TEXT), CAST(:payload AS TEXT))")
# The history columns a change writes, in the table's order: every one but the id and the revision.
_WRITTEN = tuple(column for column in Activity.__table__.columns if column.name not in ("id", "revision"))
_COMBINED_ROWS = 20  # history rows written by the combined statement; more (imports) take the two above
_COMBINED: dict[tuple[int, bool], TextClause] = {}


@cache
def _cast_types() -> tuple[tuple[str, str], ...]:
    """Each written column and its PostgreSQL type, from the table definition. Without a length: a CAST
    to VARCHAR(n) would cut a longer value silently, where the INSERT itself refuses it."""
    from sqlalchemy.dialects import postgresql  # PostgreSQL only: a SQLite tracker never needs its dialect

    dialect = postgresql.dialect()
    return tuple((c.name, c.type.compile(dialect=dialect).partition("(")[0]) for c in _WRITTEN)


def _recorded(count: int, *, notify: bool) -> TextClause:
    """PostgreSQL: take the next revision, write ``count`` history rows under it in their order, and
    (``notify``) send the notice, in one statement (one per row count, built once)."""
    statement = _COMBINED.get((count, notify))
    if statement is None:
        values = _cast_types()
        names = ", ".join(name for name, _ in values)
        rows = ", ".join(
            "(" + ", ".join([str(i), *(f"CAST(:{name}_{i} AS {kind})" for name, kind in values)]) + ")"
            for i in range(count)
        )
        notice = (
            ", pg_notify(CAST(:channel AS TEXT), CAST(:head AS TEXT) || taken.revision || CAST(:tail AS TEXT))"
            if notify
            else ""
        )
        statement = text(
            "WITH taken AS (UPDATE feed SET revision = revision + 1 WHERE id = 1 RETURNING revision), "
            f"written AS (INSERT INTO activity (revision, {names}) "
            f"SELECT taken.revision, {', '.join('v.' + name for name, _ in values)} "
            f"FROM taken, (VALUES {rows}) AS v(n, {names}) ORDER BY v.n) "
            f"SELECT taken.revision{notice} FROM taken"
        )
        _COMBINED[count, notify] = statement
    return statement


def change_entry(row: Activity) -> ChangeEntry:
    return ChangeEntry(
        revision=row.revision,
        at=iso(row.at) or "",
        actor=row.actor,
        project=row.project_key,
        task=format_task_id(row.project_key, row.task_number) if row.task_number is not None else None,
        version=row.task_version,
        action=row.action,
        field=row.field,
        old=shown(row.old_value),
        new=shown(row.new_value),
    )


_CHANGES_AFTER_VERSION = (
    select(
        Activity.task_version,
        Activity.action,
        Activity.field,
        Activity.old_value,
        Activity.new_value,
        Activity.actor,
        Activity.at,
    )
    .where(Activity.task_id == bindparam("task_id"), Activity.task_version > bindparam("version"))
    .order_by(Activity.id)
    .limit(bindparam("limit"))
)


def changes_after_version(session: Connection, task_id: int, version: int, limit: int = 20) -> list[Any]:
    """The history rows of a task after ``version`` (what describe_changes needs of each)."""
    return list(
        session.execute(_CHANGES_AFTER_VERSION, {"task_id": task_id, "version": version, "limit": limit})
    )


def describe_changes(rows: list[Any]) -> str:
    """``v4 status todo → in_progress by alice at …; v5 title …`` for a conflict message."""
    parts = []
    for row in rows:
        what = row.field or row.action
        if row.action == "changed":
            text = f"{what} {shown(row.old_value, 60)!r} → {shown(row.new_value, 60)!r}"
        elif row.action in ("linked", "unlinked"):
            text = f"{row.action} {row.new_value or row.old_value}"
        else:
            text = row.action
        parts.append(f"v{row.task_version} {text} by {row.actor} at {iso(row.at)}")
    return "; ".join(parts)
