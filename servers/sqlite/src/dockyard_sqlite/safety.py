"""What a statement may do, decided by SQLite itself.

Every connection gets an authorizer (:func:`authorizer`): SQLite calls it for each action while it
compiles a statement, so the check sees what the statement *does* — not what its text looks like — and
no spelling, comment or nesting gets past it. Read-only connections are also opened with ``mode=ro``
and have the attached-database limit set to zero, so even an action we let through cannot write the
file or reach another one (``VACUUM INTO`` needs an attachment).

No application function is registered on a connection (see :mod:`.workers.child`): SQLite answers
"no such function" for ``regexp``, and the authorizer refuses it besides (:data:`UNAVAILABLE_FUNCTIONS`),
so a Python regular expression can never run inside a statement. In write mode the TEMP schema is
refused: a TEMP trigger or view made in one call would live on in the worker's connection, invisible,
and rewrite the writes of later calls.

The log (:class:`AuthorizerLog`) also records which tables a statement deletes from or updates and
which it alters, including what triggers and foreign-key cascades do, so a trial run can tell whether
it empties a table, changes all its rows or drops a column.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = [
    "CHANGED_ROWS_TABLE",
    "DESTRUCTIVE_ACTIONS",
    "READ_PRAGMAS",
    "UNAVAILABLE_FUNCTIONS",
    "AuthorizerLog",
    "authorizer",
]

# Pragmas that only read. The ones in _PRAGMAS_WITH_ARGUMENT take a table/index name (or a check
# limit) as their argument; for every other one an argument means "set", which is refused.
READ_PRAGMAS = frozenset(
    {
        "application_id",
        "collation_list",
        "compile_options",
        "data_version",
        "encoding",
        "foreign_key_check",
        "foreign_key_list",
        "foreign_keys",
        "freelist_count",
        "function_list",
        "index_info",
        "index_list",
        "index_xinfo",
        "integrity_check",
        "module_list",
        "page_count",
        "page_size",
        "pragma_list",
        "quick_check",
        "read_uncommitted",  # the connection's own setting; client libraries read it on connect
        "schema_version",
        "table_info",
        "table_list",
        "table_xinfo",
        "user_version",
    }
)
_PRAGMAS_WITH_ARGUMENT = frozenset(
    {
        "foreign_key_check",
        "foreign_key_list",
        "index_info",
        "index_list",
        "index_xinfo",
        "integrity_check",
        "quick_check",
        "table_info",
        "table_list",
        "table_xinfo",
    }
)

# Functions that reach outside the database or change how it is interpreted.
_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})
# Functions this server never provides, with what to use instead. SQLite has no regexp of its own;
# a Python one would run outside every time limit ('aaaa…!' REGEXP '^(a+)+$' backtracks for hours).
UNAVAILABLE_FUNCTIONS = {
    "regexp": "Use LIKE ('%text%', case-insensitive for ASCII), GLOB ('*[0-9]*', case-sensitive, with "
    "character classes), instr() or substr() instead.",
}

_READ_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE})
_WRITE_ACTIONS = frozenset(
    {
        sqlite3.SQLITE_INSERT,
        sqlite3.SQLITE_UPDATE,
        sqlite3.SQLITE_DELETE,
        sqlite3.SQLITE_CREATE_INDEX,
        sqlite3.SQLITE_CREATE_TABLE,
        sqlite3.SQLITE_CREATE_TRIGGER,
        sqlite3.SQLITE_CREATE_VIEW,
        sqlite3.SQLITE_DROP_INDEX,
        sqlite3.SQLITE_DROP_TABLE,
        sqlite3.SQLITE_DROP_TRIGGER,
        sqlite3.SQLITE_DROP_VIEW,
        sqlite3.SQLITE_ALTER_TABLE,
        sqlite3.SQLITE_REINDEX,
        sqlite3.SQLITE_ANALYZE,
    }
)
DESTRUCTIVE_ACTIONS = frozenset(
    {
        sqlite3.SQLITE_DROP_TABLE,
        sqlite3.SQLITE_DROP_TEMP_TABLE,
        sqlite3.SQLITE_DROP_VIEW,
        sqlite3.SQLITE_DROP_TEMP_VIEW,
        sqlite3.SQLITE_DROP_INDEX,
        sqlite3.SQLITE_DROP_TEMP_INDEX,
        sqlite3.SQLITE_DROP_TRIGGER,
        sqlite3.SQLITE_DROP_TEMP_TRIGGER,
        sqlite3.SQLITE_DELETE,
    }
)
_SCHEMA_TABLES = ("sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema")
# The one TEMP write a model's statement may do: a row into the table in which the server's own TEMP
# triggers (made as own statements, outside any model's reach) record the rows an UPDATE changes.
CHANGED_ROWS_TABLE = "_dockyard_changed"
_OWN_TEMP_INSERT = (sqlite3.SQLITE_INSERT, CHANGED_ROWS_TABLE)


@dataclass
class AuthorizerLog:
    """What the last statement tried: the actions seen and the first one refused, in words."""

    actions: list[tuple[int, str | None]] = field(default_factory=list)
    refused: str | None = None
    refused_bookkeeping: bool = False
    # (schema, table) of every DELETE the statement may do, its triggers and cascades included.
    deleted: list[tuple[str, str]] = field(default_factory=list)
    # (schema, table) of every UPDATE it may do (the catalog's own bookkeeping left out).
    updated: list[tuple[str, str]] = field(default_factory=list)
    # (schema, table) of every ALTER TABLE.
    altered: list[tuple[str, str]] = field(default_factory=list)
    # Set only while the server runs a statement of its own (BEGIN/ROLLBACK of a trial run, the
    # triggers that count its changes, a pragma): the authorizer lets it through and logs nothing.
    own: bool = False

    def reset(self) -> None:
        self.actions.clear()
        self.refused = None
        self.refused_bookkeeping = False
        self.deleted.clear()
        self.updated.clear()
        self.altered.clear()
        self.own = False

    @contextmanager
    def own_statement(self) -> Iterator[None]:
        """Let the server's own statement through, unlogged; never wrap model-written SQL in this."""
        self.own = True
        try:
            yield
        finally:
            self.own = False


def _describe(action: int, arg1: str | None, arg2: str | None) -> str:
    if action == sqlite3.SQLITE_PRAGMA:
        return f"PRAGMA {arg1}{'=' + arg2 if arg2 else ''}"
    if action == sqlite3.SQLITE_ATTACH:
        return "ATTACH or VACUUM INTO (reaching another database file)"
    if action == sqlite3.SQLITE_DETACH:
        return "DETACH"
    if action == sqlite3.SQLITE_FUNCTION:
        return f"the function {arg2}()"
    if action in (sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_SAVEPOINT):
        return "transaction control (BEGIN/COMMIT/SAVEPOINT)"
    if action in (sqlite3.SQLITE_CREATE_VTABLE, sqlite3.SQLITE_DROP_VTABLE):
        return "creating or dropping a virtual table"
    names = {
        sqlite3.SQLITE_INSERT: "INSERT",
        sqlite3.SQLITE_UPDATE: "UPDATE",
        sqlite3.SQLITE_DELETE: "DELETE",
        sqlite3.SQLITE_ALTER_TABLE: "ALTER TABLE",
        sqlite3.SQLITE_REINDEX: "REINDEX",
        sqlite3.SQLITE_ANALYZE: "ANALYZE",
    }
    if action not in names:
        for name, value in vars(sqlite3).items():
            if value == action and name.startswith(("SQLITE_CREATE_", "SQLITE_DROP_")):
                names[action] = name.removeprefix("SQLITE_").replace("_", " ")
    what = names.get(action, f"action {action}")
    return f"{what}{' on ' + arg1 if arg1 else ''}"


def authorizer(*, writable: bool, log: AuthorizerLog) -> Callable[..., int]:
    """An authorizer for a read-only (``writable=False``) or a write-mode connection."""

    def check(
        action: int, arg1: str | None, arg2: str | None, database: str | None, trigger: str | None
    ) -> int:
        if log.own:
            return sqlite3.SQLITE_OK
        log.actions.append((action, arg1 if action != sqlite3.SQLITE_FUNCTION else arg2))
        if action == sqlite3.SQLITE_DELETE and arg1:
            log.deleted.append((database or "main", arg1))
        elif action == sqlite3.SQLITE_UPDATE and arg1 and arg1.lower() not in _SCHEMA_TABLES:
            log.updated.append((database or "main", arg1))
        elif action == sqlite3.SQLITE_ALTER_TABLE and arg2:
            log.altered.append((arg1 or "main", arg2))
        allowed = _allowed(action, arg1, arg2, writable) and not _temp_object(action, arg1, database)
        # SQLite reports the catalog bookkeeping of a DROP or CREATE before the DROP or CREATE
        # itself; the model should read about the statement it wrote.
        bookkeeping = arg1 in ("sqlite_master", "sqlite_schema", "sqlite_temp_master")
        if not allowed and (log.refused is None or (log.refused_bookkeeping and not bookkeeping)):
            log.refused = (
                "changing the schema (CREATE, DROP or ALTER)"
                if bookkeeping
                else _describe(action, arg1, arg2)
            )
            log.refused_bookkeeping = bookkeeping
        return sqlite3.SQLITE_OK if allowed else sqlite3.SQLITE_DENY

    return check


def _temp_object(action: int, arg1: str | None, database: str | None) -> bool:
    """Whether the action makes or changes a TEMP object, by keyword (CREATE TEMP TABLE) or by schema
    (CREATE TABLE temp.t). Not SQLite's own bookkeeping of the TEMP schema (ALTER TABLE rewrites the
    TEMP triggers on the table it alters), nor the rows the server's counting triggers record."""
    if database != "temp" or action not in _WRITE_ACTIONS:
        return False
    return (arg1 or "").lower() not in _SCHEMA_TABLES and (action, arg1) != _OWN_TEMP_INSERT


def _allowed(action: int, arg1: str | None, arg2: str | None, writable: bool) -> bool:
    if action in _READ_ACTIONS:
        return True
    if action == sqlite3.SQLITE_FUNCTION:
        name = (arg2 or "").lower()
        return name not in _DENIED_FUNCTIONS and name not in UNAVAILABLE_FUNCTIONS
    if action == sqlite3.SQLITE_PRAGMA:
        name = (arg1 or "").lower()
        if name not in READ_PRAGMAS:
            return False
        return arg2 is None or name in _PRAGMAS_WITH_ARGUMENT
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return False
    if action == sqlite3.SQLITE_UPDATE and arg1 in ("sqlite_master", "sqlite_schema") and not writable:
        # SQLite reports this while it sets up a pragma table-valued function such as
        # pragma_table_info('t'); nothing is written (the file is open mode=ro, and writable_schema
        # is a pragma no connection may set).
        return True
    if action in (sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_SAVEPOINT):
        # Each call is its own transaction; one left open would hold locks across calls.
        return False
    if action in (sqlite3.SQLITE_CREATE_VTABLE, sqlite3.SQLITE_DROP_VTABLE):
        # Virtual table modules can be extensions with their own file access; not worth the risk.
        return False
    return writable and action in _WRITE_ACTIONS
