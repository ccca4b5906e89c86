"""The board's read (:mod:`dockyard_tasks.board`): in one read transaction, so the columns, their counts and
the cards' blockers all show the same moment.

Open columns list the backlog's order (priority, then the oldest); done and cancelled the newest first (by
id, so the (project_id, status, id) index serves them without sorting a project's whole history). Counts
come from ``task_counts`` (kept by triggers); blockers for every card shown in two statements.
"""

from __future__ import annotations

from sqlalchemy import Connection, and_, func, select

from ..board import BLOCKERS_SHOWN, Board, BoardCard, BoardColumn, moves
from ..rules import OPEN, PRIORITIES, STATUSES, format_task_id
from .feed import current_revision
from .queries import project_id_of, project_info
from .rows import UNREADABLE, as_date, raw
from .schema import Dependency, Project, Task, TaskCount

__all__ = ["read_board"]


def _column_statement(project_id: int, status: str, limit: int):
    order = (Task.priority, Task.id) if status in OPEN else (Task.id.desc(),)
    return (
        select(
            Task.id,
            Task.number,
            Task.title,
            Task.priority,
            Task.assignee,
            raw(Task.due_date),
            Task.version,
        )
        .where(Task.project_id == project_id, Task.status == status)
        .order_by(*order)
        .limit(limit)
    )


def _card(key: str, row) -> BoardCard:
    due = as_date(row.due_date)
    return BoardCard(
        id=format_task_id(key, row.number),
        title=row.title,
        priority=PRIORITIES[row.priority],
        assignee=row.assignee,
        due=due.isoformat() if due else None,
        version=row.version,
    )


def _open_blockers(connection: Connection, task_ids: list[int]) -> dict[int, tuple[list[str], int]]:
    """Per task id: its first BLOCKERS_SHOWN open blockers (ids) and how many open ones it has."""
    if not task_ids:
        return {}
    waits = and_(Dependency.task_id.in_(task_ids), Task.status.in_(OPEN))
    totals = dict(
        connection.execute(
            select(Dependency.task_id, func.count())
            .join(Task, Task.id == Dependency.blocker_id)
            .where(waits)
            .group_by(Dependency.task_id)
        ).all()
    )
    if not totals:
        return {}
    ranked = (
        select(
            Dependency.task_id,
            Project.key,
            Task.number,
            func.row_number().over(partition_by=Dependency.task_id, order_by=Task.id).label("n"),
        )
        .join(Task, Task.id == Dependency.blocker_id)
        .join(Project, Project.id == Task.project_id)
        .where(waits)
        .subquery()
    )
    shown: dict[int, list[str]] = {}
    for task_id, key, number in connection.execute(
        select(ranked.c.task_id, ranked.c.key, ranked.c.number)
        .where(ranked.c.n <= BLOCKERS_SHOWN)
        .order_by(ranked.c.task_id, ranked.c.n)
    ):
        shown.setdefault(task_id, []).append(format_task_id(key, number))
    return {task_id: (shown.get(task_id, []), total) for task_id, total in totals.items()}


def read_board(connection: Connection, key: str, *, per_column: int) -> Board:
    project = project_info(connection, key)  # NotFound (with close matches) for an unknown key
    project_id = project_id_of(connection, key)
    counts = dict(
        connection.execute(
            select(TaskCount.status, func.sum(TaskCount.tasks))
            .where(TaskCount.project_id == project_id)
            .group_by(TaskCount.status)
        ).all()
    )
    columns: list[BoardColumn] = []
    cards_by_id: dict[int, BoardCard] = {}
    unreadable = 0
    for status in STATUSES:
        cards = []
        for row in connection.execute(_column_statement(project_id, status, per_column)):
            try:
                card = _card(key, row)
            except UNREADABLE:  # a stored value this server cannot read leaves its card out, not the board
                unreadable += 1
                continue
            cards_by_id[row.id] = card
            cards.append(card)
        total = int(counts.get(status) or 0)
        columns.append(BoardColumn(status=status, total=total, tasks=cards, more=max(0, total - len(cards))))
    for task_id, (ids, total) in _open_blockers(connection, list(cards_by_id)).items():
        cards_by_id[task_id].open_blockers = ids
        cards_by_id[task_id].open_blockers_total = total
    notes = []
    if any(column.more for column in columns):
        notes.append(
            f"Columns show their first {per_column} tasks; list_tasks project={key} status=STATUS lists the rest."
        )
    if unreadable:
        notes.append(
            f"{unreadable} task(s) with unreadable stored values are left out (get_task names them)."
        )
    return Board(
        project=key,
        name=project.name,
        columns=columns,
        moves=moves(),
        revision=current_revision(connection),
        note=" ".join(notes) or None,
    )
