"""Writes: what a statement would destroy (judged by a trial run), and the guarded real run.

A statement is destructive when it drops an object (a table, view, index or trigger), drops a column
(``ALTER TABLE … DROP COLUMN``), leaves a table that had rows empty, or changes every row of a table —
whatever its WHERE clause says (``WHERE 1``, ``WHERE id > 0``) and wherever the change happens (a
trigger, an ``ON DELETE CASCADE``). Drops are seen when the statement is compiled; the rest by a trial
run for real inside a transaction that is always rolled back, with TEMP triggers of the server's own
counting the rows each UPDATE changes. The real run of a statement nobody confirmed is checked again the
same way, since another writer may have changed the data in between. How much one call may grow the
file is capped by the worker (``max_page_count``, see :mod:`..workers.child`).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from dockyard_shared import Conflict, InvalidArgument

from ..models import ExecuteResult
from ..safety import CHANGED_ROWS_TABLE, DESTRUCTIVE_ACTIONS
from ..settings import Limits
from ..workers.connection import RemoteConnection
from .connection import Params, bind, quote_identifier, quote_literal

__all__ = ["MAX_RETURNED_ROWS", "destructive_effect", "execute"]

# RETURNING rows shown in a reply; the statement's every change is made and counted either way.
MAX_RETURNED_ROWS = 100

_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"})
_READS = (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION)
# The server's own TEMP objects of a checked run (TEMP objects of the model's are refused).
_CHANGED = CHANGED_ROWS_TABLE

Table = tuple[str, str]  # (schema, name)


def destructive_effect(connection: RemoteConnection, sql: str, params: Params) -> str | None:
    """What ``sql`` would destroy, in words ("it drops t", "it changes every row of t"), or None.

    The statement is compiled first (EXPLAIN: the authorizer sees every action, triggers and foreign-key
    cascades included). A DROP is destructive whatever it drops. A statement that deletes, updates or
    alters a table is then run inside a transaction that is always rolled back.
    """
    targets = _targets(connection, sql, params)
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
    if targets.empty:
        return None
    effects = _trial_run(connection, sql, params, targets)
    return " and ".join(effects) or None


def execute(
    connection: RemoteConnection,
    sql: str,
    params: Params,
    *,
    alias: str,
    limits: Limits,
    refuse_emptying: bool,
) -> ExecuteResult:
    """Run one write statement on the writer ``connection`` and commit it.

    ``refuse_emptying`` is for a statement nobody confirmed as destructive: :func:`destructive_effect`
    found it destroys nothing, but another writer may have changed the data since. A statement that
    deletes, updates or alters a table then runs in a transaction holding the write lock, watched as
    the trial run was, and is rolled back (by raising inside the caller's checkout) if it turned out
    destructive after all.
    """
    watch = _begin_watch(connection, sql, params) if refuse_emptying else None
    before = connection.total_changes
    cursor = connection.execute(sql, bind(params))
    returned, stopped_by = None, None
    last_row_id = cursor.lastrowid
    if cursor.description is not None:  # RETURNING: its rows are counted once it finishes
        returned, _, stopped_by = cursor.read_page(
            MAX_RETURNED_ROWS, max_chars=limits.max_chars, max_cell_chars=limits.max_cell_chars
        )
        cursor.close()
        affected = connection.execute("SELECT changes()").fetchone()[0]
    else:
        affected = cursor.rowcount if cursor.rowcount >= 0 else connection.total_changes - before
    if watch is not None:
        effects = watch.effects(connection)
        if effects:
            raise Conflict(
                f"The data changed after this statement was checked: {' and '.join(effects)}, which "
                "nobody confirmed. Nothing was changed.",
                next_step="Call execute again: the user will be asked to confirm.",
                retryable=True,
            )
        with connection.auth_log.own_statement():
            watch.stop(connection)
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


@dataclass
class _Targets:
    """The tables a statement may delete from, update or alter (from the authorizer's log)."""

    deleted: list[Table]
    updated: list[Table]
    altered: list[Table]

    @property
    def empty(self) -> bool:
        return not (self.deleted or self.updated or self.altered)


def _targets(connection: RemoteConnection, sql: str, params: Params) -> _Targets:
    """Compile ``sql`` (so the authorizer logs its every action) and return the tables it touches."""
    connection.execute(f"EXPLAIN {sql}", bind(params)).fetchall()
    log = connection.auth_log

    def tables(found: list[Table]) -> list[Table]:
        return [t for t in dict.fromkeys(found) if t[1].lower() not in _SCHEMA_TABLES]

    return _Targets(tables(log.deleted), tables(log.updated), tables(log.altered))


@dataclass
class _Watch:
    """The state a checked run is compared with: which tables had rows, which columns each altered
    table had, and TEMP triggers recording every row an UPDATE changes (rolled back with the trial,
    dropped before the real run commits)."""

    occupied: list[Table] = field(default_factory=list)
    updated: list[tuple[Table, int]] = field(default_factory=list)  # (table, rows before)
    columns: dict[Table, list[str]] = field(default_factory=dict)
    triggers: list[str] = field(default_factory=list)

    @property
    def idle(self) -> bool:
        return not (self.occupied or self.updated or self.columns)

    @classmethod
    def start(cls, connection: RemoteConnection, targets: _Targets) -> _Watch:
        watch = cls()
        watch.occupied = [
            t for t in targets.deleted if _is_table(connection, *t) and _has_rows(connection, *t)
        ]
        for table in targets.updated:
            if _is_table(connection, *table) and _has_rows(connection, *table):
                watch.updated.append((table, _count(connection, *table)))
        for table in targets.altered:
            if _is_table(connection, *table):
                watch.columns[table] = _columns(connection, *table)
        if watch.updated:
            with connection.auth_log.own_statement():
                connection.execute(
                    f"CREATE TEMP TABLE IF NOT EXISTS {_CHANGED} (tbl TEXT, id, PRIMARY KEY (tbl, id)) WITHOUT ROWID"
                )
                for number, ((schema, name), _) in enumerate(watch.updated):
                    trigger = f"{_CHANGED}_{number}"
                    key = _row_key(connection, schema, name)
                    connection.execute(
                        f"CREATE TEMP TRIGGER {trigger} AFTER UPDATE ON {quote_identifier(schema)}."
                        f"{quote_identifier(name)} BEGIN INSERT OR IGNORE INTO {_CHANGED} "
                        f"VALUES ({quote_literal(f'{schema}.{name}')}, {key}); END"
                    )
                    watch.triggers.append(trigger)
        return watch

    def effects(self, connection: RemoteConnection) -> list[str]:
        """What the statement run since :meth:`start` destroyed, in words."""
        found = []
        emptied = [t for t in self.occupied if not _has_rows(connection, *t)]
        if emptied:
            found.append(f"it deletes every row of {' and '.join(_named(t) for t in emptied)}")
        changed = []
        for table, _ in self.updated:
            rows = _count(connection, *table)
            with connection.auth_log.own_statement():
                touched = connection.execute(
                    f"SELECT count(*) FROM {_CHANGED} WHERE tbl = ?", (f"{table[0]}.{table[1]}",)
                ).fetchone()[0]
            if rows and touched >= rows:
                changed.append(_named(table))
        if changed:
            found.append(f"it changes every row of {' and '.join(changed)}")
        for table, before in self.columns.items():
            after = _columns(connection, *table)
            dropped = [c for c in before if c not in after]
            if len(after) < len(before) and dropped:
                found.append(f"it drops column {', '.join(dropped)} of {_named(table)}")
        return found

    def stop(self, connection: RemoteConnection) -> None:
        """Drop the counting triggers (inside the transaction, before it commits)."""
        for trigger in self.triggers:
            connection.execute(f"DROP TRIGGER temp.{trigger}")
        if self.triggers:
            connection.execute(f"DROP TABLE temp.{_CHANGED}")


def _trial_run(connection: RemoteConnection, sql: str, params: Params, targets: _Targets) -> list[str]:
    """Run ``sql`` in a transaction that is rolled back: what it destroyed, in words."""
    log = connection.auth_log
    with log.own_statement():
        connection.execute("BEGIN IMMEDIATE")  # the write lock now: no other writer slips in between
    try:
        watch = _Watch.start(connection, targets)
        if watch.idle:
            return []  # nothing to lose: skip running it
        cursor = connection.execute(sql, bind(params))
        cursor.close()  # with RETURNING, every change is made by the first step already
        return watch.effects(connection)
    finally:
        # An interrupted write has rolled the transaction back already; the rollback takes the
        # counting triggers with it.
        if connection.in_transaction:
            with log.own_statement():
                connection.execute("ROLLBACK")


def _begin_watch(connection: RemoteConnection, sql: str, params: Params) -> _Watch | None:
    """For a statement that deletes, updates or alters tables: open a transaction holding the write
    lock and start watching them; None, with no transaction, otherwise."""
    targets = _targets(connection, sql, params)
    if targets.empty:
        return None
    with connection.auth_log.own_statement():
        connection.execute("BEGIN IMMEDIATE")
    return _Watch.start(connection, targets)


def _is_table(connection: RemoteConnection, schema: str, table: str) -> bool:
    catalog = "sqlite_temp_master" if schema == "temp" else f"{quote_identifier(schema)}.sqlite_master"
    row = connection.execute(f"SELECT type FROM {catalog} WHERE name = ?", (table,)).fetchone()
    return row is not None and row[0] == "table"


def _named(table: Table) -> str:
    """A table as a model would name it."""
    schema, name = table
    return name if schema == "main" else f"{schema}.{name}"


def _has_rows(connection: RemoteConnection, schema: str, table: str) -> bool:
    target = f"{quote_identifier(schema)}.{quote_identifier(table)}"
    return bool(connection.execute(f"SELECT EXISTS (SELECT 1 FROM {target})").fetchone()[0])


def _count(connection: RemoteConnection, schema: str, table: str) -> int:
    target = f"{quote_identifier(schema)}.{quote_identifier(table)}"
    return connection.execute(f"SELECT count(*) FROM {target}").fetchone()[0]


def _columns(connection: RemoteConnection, schema: str, table: str) -> list[str]:
    return [
        name for (name,) in connection.execute("SELECT name FROM pragma_table_xinfo(?, ?)", (table, schema))
    ]


def _row_key(connection: RemoteConnection, schema: str, table: str) -> str:
    """What identifies an updated row in a trigger: its rowid, or its primary key (WITHOUT ROWID)."""
    without_rowid = connection.execute(
        "SELECT wr FROM pragma_table_list WHERE schema = ? AND name = ?", (schema, table)
    ).fetchone()
    if not (without_rowid and without_rowid[0]):
        return "OLD.rowid"
    keys = [
        name
        for (name,) in connection.execute(
            "SELECT name FROM pragma_table_info(?, ?) WHERE pk > 0 ORDER BY pk",
            (table, schema),
        )
    ]
    return "json_array(" + ", ".join(f"OLD.{quote_identifier(k)}" for k in keys) + ")"
