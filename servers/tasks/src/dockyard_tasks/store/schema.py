"""The tables, as SQLAlchemy 2.x ORM classes (the migrations in ``dockyard_tasks.migrations`` create them).

Times are naive UTC (``DateTime`` without a zone) so that SQLite and PostgreSQL store and return exactly
the same value and an export round-trips between them. A test compares this metadata with what the
migrations build, so the two cannot drift apart.
"""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    SmallInteger,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from ..rules import PRIORITIES, STATUSES

__all__ = [
    "Activity",
    "Base",
    "CheckItem",
    "Comment",
    "Dependency",
    "Feed",
    "Label",
    "Project",
    "Task",
    "TaskCount",
    "TaskDueCount",
    "WriteBudget",
]

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
STATUS_CHECK = "status IN (" + ", ".join(f"'{s}'" for s in STATUSES) + ")"
PRIORITY_CHECK = f"priority BETWEEN 0 AND {len(PRIORITIES) - 1}"
# next_task orders by this expression, and its indexes hold it word for word (SQLite matches an index on
# an expression only to the same expression).
DUE_LAST = "COALESCE(due_date, '9999-12-31')"
SEARCH_TABLE = "task_search"
# What migration 0006 builds that this metadata does not describe, so the comparison of the two leaves
# it out (tests/tasks/test_migrations.py): next_task's indexes on (…, priority, DUE_LAST, id), which
# SQLAlchemy cannot reflect on SQLite; SQLite's FTS5 table and the tables FTS5 keeps beside it;
# PostgreSQL's trigram indexes, which exist only where pg_trgm could be had.
UNMAPPED = frozenset(
    {"ix_tasks_next", "ix_tasks_next_project", "ix_tasks_title_trgm", "ix_tasks_description_trgm"}
    | {SEARCH_TABLE, *(f"{SEARCH_TABLE}_{part}" for part in ("data", "idx", "content", "docsize", "config"))}
)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class Project(Base):
    __tablename__ = "projects"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(10), unique=True)
    name: Mapped[str] = mapped_column(String(100))
    description: Mapped[str] = mapped_column(Text, default="")
    # The number the next task of this project gets (WEB-12 → 13); bumped under the row's lock.
    next_number: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(DateTime)
    created_by: Mapped[str] = mapped_column(String(100))


class Task(Base):
    __tablename__ = "tasks"
    __table_args__ = (
        UniqueConstraint("project_id", "number"),
        CheckConstraint(STATUS_CHECK, name="status"),
        CheckConstraint(PRIORITY_CHECK, name="priority"),
        # The filters list_tasks and the summary use most, each ending in id for stable pages.
        Index(None, "project_id", "status", "id"),
        Index(None, "status", "priority", "id"),
        Index(None, "assignee", "status", "id"),
        Index(None, "due_date", "id"),
        Index(None, "parent_id"),
        Index(None, "updated_at", "id"),
        # Migration 0003: the summary's one scan, overdue counts, an assignee's work by priority.
        Index(None, "project_id", "status", "assignee"),
        Index(None, "status", "due_date"),
        Index(None, "assignee", "priority", "id"),
        # Migration 0007: list_tasks and next_task by workstream; an imported issue found by its URL.
        Index(None, "project_id", "workstream", "id"),
        Index(None, "source_url", unique=True),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"))
    number: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(String(300))
    description: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(20), default="todo")
    priority: Mapped[int] = mapped_column(SmallInteger, default=2)  # index into rules.PRIORITIES
    assignee: Mapped[str | None] = mapped_column(String(100))
    due_date: Mapped[date | None] = mapped_column(Date)
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("tasks.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(DateTime)
    updated_at: Mapped[datetime] = mapped_column(DateTime)
    created_by: Mapped[str] = mapped_column(String(100))
    # Bumped by every change; update_task's expected_version compares against it.
    version: Mapped[int] = mapped_column(Integer, default=1)
    # Migration 0007: the board inside the project (None: none), and the issue an import made it from.
    workstream: Mapped[str | None] = mapped_column(String(40))
    source_url: Mapped[str | None] = mapped_column(String(500))


class TaskCount(Base):
    """How many tasks a project has in a status for an assignee ('' for none): the summary's numbers.

    Kept by triggers on ``tasks`` (migration 0004), in the transaction of each change, whoever makes
    it; never written by this code. Rows that fell to zero stay, with ``tasks`` 0.
    """

    __tablename__ = "task_counts"

    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"), primary_key=True)
    status: Mapped[str] = mapped_column(String(20), primary_key=True)
    assignee: Mapped[str] = mapped_column(String(100), primary_key=True)
    tasks: Mapped[int] = mapped_column(Integer)


class TaskDueCount(Base):
    """How many tasks are in a status with a due date: the summary's overdue count (migration 0005).

    Kept by triggers on ``tasks`` like :class:`TaskCount`; tasks without a due date have no row.
    """

    __tablename__ = "task_due_counts"

    status: Mapped[str] = mapped_column(String(20), primary_key=True)
    due_date: Mapped[date] = mapped_column(Date, primary_key=True)
    tasks: Mapped[int] = mapped_column(Integer)


class Label(Base):
    __tablename__ = "task_labels"
    __table_args__ = (Index(None, "label", "task_id"),)

    task_id: Mapped[int] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True)
    label: Mapped[str] = mapped_column(String(40), primary_key=True)


class Dependency(Base):
    """``task_id`` is blocked by ``blocker_id`` until the blocker is done or cancelled."""

    __tablename__ = "task_dependencies"
    __table_args__ = (Index(None, "blocker_id"), CheckConstraint("task_id <> blocker_id", name="not_self"))

    task_id: Mapped[int] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True)
    blocker_id: Mapped[int] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True)


class CheckItem(Base):
    """One acceptance criterion or plan step of a task (migration 0007), ticked with who and when."""

    __tablename__ = "task_checklist"
    __table_args__ = (CheckConstraint("kind IN ('criteria', 'plan')", name="kind"),)

    task_id: Mapped[int] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True)
    kind: Mapped[str] = mapped_column(String(10), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    text: Mapped[str] = mapped_column(String(300))
    done_at: Mapped[datetime | None] = mapped_column(DateTime)
    done_by: Mapped[str | None] = mapped_column(String(100))


class Comment(Base):
    __tablename__ = "comments"
    __table_args__ = (Index(None, "task_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("tasks.id", ondelete="CASCADE"))
    author: Mapped[str] = mapped_column(String(100))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime)


class Activity(Base):
    """One change: what, old → new, when, by whom. Outlives the task it describes (no foreign key).

    ``revision`` is the committing transaction's number from :class:`Feed`: all rows of one
    transaction share it, and revisions are handed out in commit order, so ``changes_since`` never
    skips a change that committed late.
    """

    __tablename__ = "activity"
    __table_args__ = (Index(None, "revision", "id"), Index(None, "task_id", "id"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    revision: Mapped[int] = mapped_column(BigInteger)
    at: Mapped[datetime] = mapped_column(DateTime)
    actor: Mapped[str] = mapped_column(String(100))
    project_key: Mapped[str] = mapped_column(String(10))
    task_id: Mapped[int | None] = mapped_column(Integer)
    task_number: Mapped[int | None] = mapped_column(Integer)
    task_version: Mapped[int | None] = mapped_column(Integer)
    action: Mapped[str] = mapped_column(String(30))
    field: Mapped[str | None] = mapped_column(String(30))
    old_value: Mapped[str | None] = mapped_column(Text)
    new_value: Mapped[str | None] = mapped_column(Text)


class Feed(Base):
    """One row: the last revision handed out. Taking the next one locks the row until commit."""

    __tablename__ = "feed"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    revision: Mapped[int] = mapped_column(BigInteger, default=0)


class WriteBudget(Base):
    """An actor's token bucket for --max-writes-per-minute (migration 0008; store/budget.py spends it):
    ``tokens`` left as of ``refilled_at`` (seconds since the epoch), shared by every replica."""

    __tablename__ = "write_budget"

    actor: Mapped[str] = mapped_column(String(100), primary_key=True)
    tokens: Mapped[float] = mapped_column(Float)
    refilled_at: Mapped[float] = mapped_column(Float)
