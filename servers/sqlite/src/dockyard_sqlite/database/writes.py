"""Writes: what a statement would destroy (judged by a trial run), and the guarded real run.

A statement is destructive when it drops an object or leaves a table that had rows empty — whatever its
WHERE clause says (``WHERE 1``, ``WHERE id > 0``) and wherever the deletion happens (a trigger, an
``ON DELETE CASCADE``). The trial runs for real inside a transaction that is always rolled back; the
real run of a statement nobody confirmed is checked again the same way, since another writer may have
changed the data in between.
"""

from __future__ import annotations

import sqlite3

from dockyard_shared import Conflict, InvalidArgument

from ..models import ExecuteResult
from ..safety import DESTRUCTIVE_ACTIONS
from ..settings import Limits
from .connection import GuardedConnection, Params, bind, quote_identifier
from .pages import read_page

__all__ = ["MAX_RETURNED_ROWS", "destructive_effect", "execute"]

# RETURNING rows shown in a reply; the statement's every change is made and counted either way.
MAX_RETURNED_ROWS = 100

_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"})
_READS = (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION)

Table = tuple[str, str]  # (schema, name)


def destructive_effect(connection: GuardedConnection, sql: str, params: Params) -> str | None:
    """What ``sql`` would destroy — a dropped object, or every row of a table — or None.

    The statement is compiled first (EXPLAIN: the authorizer sees every action, triggers and foreign-key
    cascades included). A DROP is destructive whatever it drops. A statement that deletes from any table
    is then run inside a transaction that is always rolled back (on the caller's writer connection).
    """
    targets = _deleted_tables(connection, sql, params)
    actions = list(connection.auth_log.actions)
    # Statements compiled without any authorizer call (VACUUM) go on to run, and SQLite refuses them
    # then; only a statement that provably just reads is sent to query instead.
    if actions and all(action in _READS for action, _ in actions):
        raise InvalidArgument(
            "execute is for statements that change the database.", next_step="Use query to read."
        )
    for action, target in actions:
        if action in DESTRUCTIVE_ACTIONS and action != sqlite3.SQLITE_DELETE:
            return f"it drops {target}"
    if not targets:
        return None
    emptied = _trial_run(connection, sql, params, targets)
    return f"it deletes every row of {' and '.join(emptied)}" if emptied else None


def execute(
    connection: GuardedConnection,
    sql: str,
    params: Params,
    *,
    alias: str,
    limits: Limits,
    refuse_emptying: bool,
) -> ExecuteResult:
    """Run one write statement on the writer ``connection`` and commit it.

    ``refuse_emptying`` is for a statement nobody confirmed as destructive: :func:`destructive_effect`
    found it would empty no table, but another writer may have changed the data since. A statement that
    deletes from a table then runs in a transaction holding the write lock, and is rolled back (by
    raising inside the caller's checkout) if it left a table that had rows empty.
    """
    guarded = _begin_guard(connection, sql, params) if refuse_emptying else None
    before = connection.total_changes
    cursor = connection.execute(sql, bind(params))
    returned, stopped_by = None, None
    last_row_id = cursor.lastrowid
    if cursor.description is not None:  # RETURNING: its rows are counted once it finishes
        returned, _, stopped_by = read_page(
            cursor, MAX_RETURNED_ROWS, max_chars=limits.max_chars, max_cell_chars=limits.max_cell_chars
        )
        cursor.close()
        affected = connection.execute("SELECT changes()").fetchone()[0]
    else:
        affected = cursor.rowcount if cursor.rowcount >= 0 else connection.total_changes - before
    if guarded is not None:
        emptied = _emptied(connection, guarded)
        if emptied:
            raise Conflict(
                f"The data changed after this statement was checked: it would now delete every row "
                f"of {' and '.join(emptied)}, which nobody confirmed. Nothing was changed.",
                next_step="Call execute again: the user will be asked to confirm the deletion.",
                retryable=True,
            )
        with connection.auth_log.transaction_control():
            connection.execute("COMMIT")
    return ExecuteResult(
        database=alias,
        rows_affected=affected,
        last_row_id=last_row_id or None,
        returned_rows=returned,
        note=_returning_note(stopped_by, returned),
    )


def _returning_note(stopped_by: str | None, returned: list | None) -> str | None:
    if stopped_by == "too_wide":
        return "The change was made; its RETURNING rows are too wide for one reply. Read them with query."
    if stopped_by == "max_chars":
        return f"The change was made; only the first {len(returned or [])} RETURNING rows fit one reply."
    return None


def _deleted_tables(connection: GuardedConnection, sql: str, params: Params) -> list[Table]:
    """Compile ``sql`` (so the authorizer logs its every action) and return the tables it deletes from."""
    connection.execute(f"EXPLAIN {sql}", bind(params)).fetchall()
    deleted = dict.fromkeys(connection.auth_log.deleted)
    return [(schema, table) for schema, table in deleted if table.lower() not in _SCHEMA_TABLES]


def _trial_run(connection: GuardedConnection, sql: str, params: Params, targets: list[Table]) -> list[str]:
    """Run ``sql`` in a transaction that is rolled back: the tables among ``targets`` it empties."""
    log = connection.auth_log
    with log.transaction_control():
        connection.execute("BEGIN IMMEDIATE")  # the write lock now: no other writer slips in between
    try:
        occupied = _occupied(connection, targets)
        if not occupied:
            return []  # nothing to lose: skip running it
        cursor = connection.execute(sql, bind(params))
        cursor.close()  # with RETURNING, every change is made by the first step already
        return _emptied(connection, occupied)
    finally:
        # An interrupted write has rolled the transaction back already.
        if connection.in_transaction:
            with log.transaction_control():
                connection.execute("ROLLBACK")


def _begin_guard(connection: GuardedConnection, sql: str, params: Params) -> list[Table] | None:
    """For a statement that deletes from tables: open a transaction holding the write lock and return
    the tables that hold rows now (perhaps none); None, with no transaction, otherwise."""
    targets = _deleted_tables(connection, sql, params)
    if not targets:
        return None
    with connection.auth_log.transaction_control():
        connection.execute("BEGIN IMMEDIATE")
    return _occupied(connection, targets)


def _occupied(connection: GuardedConnection, targets: list[Table]) -> list[Table]:
    """The tables among ``targets`` (views and the like left out) that hold rows."""
    return [(s, t) for s, t in targets if _is_table(connection, s, t) and _has_rows(connection, s, t)]


def _is_table(connection: GuardedConnection, schema: str, table: str) -> bool:
    catalog = "sqlite_temp_master" if schema == "temp" else f"{quote_identifier(schema)}.sqlite_master"
    row = connection.execute(f"SELECT type FROM {catalog} WHERE name = ?", (table,)).fetchone()
    return row is not None and row[0] == "table"


def _emptied(connection: sqlite3.Connection, occupied: list[Table]) -> list[str]:
    """The tables among ``occupied`` (which had rows) that have none now, as a model would name them."""
    return [t if s == "main" else f"{s}.{t}" for s, t in occupied if not _has_rows(connection, s, t)]


def _has_rows(connection: sqlite3.Connection, schema: str, table: str) -> bool:
    target = f"{quote_identifier(schema)}.{quote_identifier(table)}"
    return bool(connection.execute(f"SELECT EXISTS (SELECT 1 FROM {target})").fetchone()[0])
