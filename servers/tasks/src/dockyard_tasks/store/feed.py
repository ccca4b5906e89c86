"""The change feed: every recorded change after a cursor, in commit order (``changes_since``).

A cursor is ``REVISION`` (after that revision: a summary's ``revision`` works) or ``REVISION.ENTRY``
(after that history entry). It is a plain position, not signed: it grants nothing, and a client may
carry it from one replica to another.
"""

from __future__ import annotations

from sqlalchemy import Connection, literal, select, tuple_

from dockyard_shared import InvalidArgument, bound_items

from ..models import ChangeEntry, ChangePage
from .history import change_entry
from .queries import find_project
from .schema import Activity, Feed

__all__ = ["changes_since", "current_revision", "parse_feed_cursor"]


def parse_feed_cursor(cursor: str | None) -> tuple[int, int]:
    """``"1532"`` (after that revision) or ``"1532.88412"`` (after that entry); empty: from the start."""
    if not cursor:
        return 0, 0
    revision, _, entry = cursor.strip().partition(".")
    try:
        parsed = int(revision), int(entry or 2**62)
    except ValueError:
        raise InvalidArgument(
            f"{cursor[:40]!r} is not a changes_since cursor.",
            next_step="Pass next_cursor from the previous changes_since reply, a summary's revision, or nothing.",
        ) from None
    if parsed[0] < 0 or parsed[1] < 0:
        raise InvalidArgument("A changes_since cursor is never negative.")
    if parsed[0] >= 2**63 or parsed[1] > 2**62:  # past any revision a database can hold
        raise InvalidArgument(
            f"{cursor[:40]!r} is past every change: a revision is below 2^63.",
            next_step="Pass next_cursor from the previous changes_since reply, a summary's revision, or nothing.",
        )
    return parsed


def changes_since(
    connection: Connection, cursor: str | None, *, project: str | None, limit: int, max_chars: int
) -> ChangePage:
    revision, entry = parse_feed_cursor(cursor)
    statement = select(Activity.__table__).where(
        tuple_(Activity.revision, Activity.id) > tuple_(literal(revision), literal(entry))
    )
    if project is not None:
        statement = statement.where(Activity.project_key == find_project(connection, project).key)
    rows = connection.execute(statement.order_by(Activity.revision, Activity.id).limit(limit + 1)).all()
    bounded = bound_items(
        (change_entry(row) for row in rows[:limit]),
        max_items=limit,
        max_chars=max_chars,
        size_of=lambda c: len(c.model_dump_json(exclude_none=True)),
    )
    changes: list[ChangeEntry] = bounded.items
    has_more = len(rows) > len(changes)
    if changes:
        last = rows[len(changes) - 1]
        next_cursor = f"{last.revision}.{last.id}"
    elif cursor:
        next_cursor = cursor.strip()
    else:
        next_cursor = "0"
    note = "More changes follow: call changes_since again with next_cursor." if has_more else None
    return ChangePage(
        changes=changes, count=len(changes), has_more=has_more, next_cursor=next_cursor, note=note
    )


_REVISION = select(Feed.revision).where(Feed.id == 1)


def current_revision(connection: Connection) -> int:
    return connection.scalar(_REVISION) or 0
