"""What a database holds, and whether dockyard-tasks may serve it — read without changing a byte of it.

Why: a database this version must refuse (a newer release's revision, tables that are not ours) was
switched to WAL before it was looked at, and left with ``-wal`` and ``-shm`` files beside it. And a
database at the newest revision could hide code of its own: a trigger planted in the file ran inside
every write (one rewrote all tasks on a comment), a view or a rule could answer in place of a table.

So a SQLite file is read here with the standard ``sqlite3`` module, read-only — ``immutable=1`` when no
other process has it open (no ``-wal``/``-shm`` beside it: a read-only open of a WAL database would create
them), ``mode=ro`` otherwise — and refused before the store's engine ever connects. PostgreSQL is read
with the same verdicts (store/migrate.py) before anything is migrated.

Triggers are compared with those the migrations create, by name and by a digest of their definition
(whitespace aside), so one replaced under a known name is caught too; any view or rule is unknown.
tests/tasks/test_database_audit.py checks the digests against freshly migrated databases.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from dockyard_shared import Conflict

from . import known_revisions, newest_revision

__all__ = [
    "POSTGRES_OBJECTS",
    "SQLITE_OBJECTS",
    "Found",
    "digest",
    "read_sqlite_file",
    "refusal",
    "unexpected_objects",
]

# (kind, name, definition) of the code a database may run or answer with, in the serving schema.
SQLITE_OBJECTS = "SELECT type, name, sql FROM sqlite_master WHERE type IN ('trigger', 'view')"
POSTGRES_OBJECTS = """
SELECT 'trigger', t.tgname,
    replace(pg_get_triggerdef(t.oid), quote_ident(n.nspname) || '.', '') || ' ' || p.prosrc
FROM pg_trigger t
JOIN pg_class c ON c.oid = t.tgrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_proc p ON p.oid = t.tgfoid
WHERE NOT t.tgisinternal AND n.nspname = current_schema()
UNION ALL SELECT 'view', viewname, definition FROM pg_views WHERE schemaname = current_schema()
UNION ALL SELECT 'materialized view', matviewname, definition FROM pg_matviews
    WHERE schemaname = current_schema()
UNION ALL SELECT 'rule', rulename, definition FROM pg_rules WHERE schemaname = current_schema()
"""

# The triggers migrations 0004, 0005 and 0006 (SQLite's text search index) create: name → digest of the definition (on PostgreSQL with the
# schema's name taken out, and the body of the function it runs).
KNOWN_TRIGGERS: dict[str, dict[str, str]] = {
    "sqlite": {
        "task_counts_insert": "800deeec877d933a",
        "task_counts_delete": "6ff76ba5a3a154ef",
        "task_counts_update": "fb1b936b28666a62",
        "task_due_counts_insert": "51a28e6c4f281ae0",
        "task_due_counts_delete": "d11456dc544210a1",
        "task_due_counts_update": "158c9015f1030f64",
        "task_search_insert": "71c7f5382f2be4da",
        "task_search_delete": "0d02f9edc6336f38",
        "task_search_update": "ce3dcde27e18da07",
    },
    "postgresql": {
        "task_counts_insert_delete": "f121c14b3c69e2e3",
        "task_counts_update": "600c30ecb7314acd",
        "task_due_counts_insert_delete": "2e5be1bb0f4d525f",
        "task_due_counts_update": "e1c4926f2f5636b8",
    },
}

_SHOWN = 5  # unknown objects named in a refusal


def digest(definition: str | None) -> str:
    return hashlib.sha256(" ".join((definition or "").split()).encode()).hexdigest()[:16]


def unexpected_objects(dialect: str, rows: Iterable[tuple[str, str, str | None]]) -> list[str]:
    """The triggers, views and rules among ``rows`` the migrations did not create, as 'kind name'."""
    known = KNOWN_TRIGGERS[dialect]
    return sorted(
        f"{kind} {name}"
        for kind, name, definition in rows
        if kind != "trigger" or known.get(name) != digest(definition)
    )


@dataclass(frozen=True)
class Found:
    """What a database holds: its revision (None without ``alembic_version``), its other tables, the
    code it holds that is not ours, and whether it holds the project asked about."""

    revision: str | None
    tables: frozenset[str] = frozenset()
    unexpected: list[str] = field(default_factory=list)
    has_project: bool = False


def read_sqlite_file(path: Path, *, project: str | None = None, timeout_s: float = 10.0) -> Found | None:
    """What the SQLite file at ``path`` holds; None when there is no database yet (no file, or an empty
    one). Raises ``sqlite3.DatabaseError`` for a file that is not a database."""
    if not path.is_file() or path.stat().st_size == 0:
        return None
    live = Path(f"{path}-wal").exists() and Path(f"{path}-shm").exists()
    uri = f"{path.resolve().as_uri()}?{'mode=ro' if live else 'immutable=1'}"
    connection = sqlite3.connect(uri, uri=True, timeout=timeout_s)
    try:
        tables = {
            row[0]
            for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not row[0].startswith("sqlite_")
        }
        revision = None
        if "alembic_version" in tables:
            versions = [row[0] for row in connection.execute("SELECT version_num FROM alembic_version")]
            revision = versions[0] if len(versions) == 1 else ", ".join(versions)
        unexpected = unexpected_objects("sqlite", connection.execute(SQLITE_OBJECTS))
        has_project = False
        if project is not None and "projects" in tables:
            row = connection.execute("SELECT 1 FROM projects WHERE key = ?", (project,)).fetchone()
            has_project = row is not None
        return Found(revision, frozenset(tables - {"alembic_version"}), unexpected, has_project)
    finally:
        connection.close()


def refusal(found: Found | None, where: str) -> Conflict | None:
    """Why dockyard-tasks must not serve (nor migrate) the database ``found`` describes; None if it may."""
    if found is None:
        return None
    if found.revision is None:
        if found.tables:
            return Conflict(
                f"The database {where} already holds tables that are not a dockyard-tasks schema "
                f"({', '.join(sorted(found.tables)[:_SHOWN])}); it was left untouched.",
                next_step="Point --database-url at an empty database or at a dockyard-tasks one.",
            )
        return None
    if found.revision not in known_revisions():
        return Conflict(
            f"The database {where} is at schema revision {found.revision!r}, which this dockyard-tasks does "
            f"not know (it knows up to {newest_revision()}): a newer dockyard-tasks wrote it. "
            "It was left untouched.",
            next_step="Upgrade dockyard-tasks, or point --database-url at another database.",
        )
    if found.unexpected:
        more = len(found.unexpected) - _SHOWN
        shown = ", ".join(found.unexpected[:_SHOWN]) + (f" and {more} more" if more > 0 else "")
        return Conflict(
            f"The database {where} holds code dockyard-tasks did not create ({shown}): a trigger runs "
            "inside every change and a view or rule can answer for a table, so it is not served. "
            "It was left untouched.",
            next_step="Have the operator remove them (sqlite3 or psql: DROP TRIGGER / DROP VIEW / DROP RULE) "
            "or restore the database from a backup, then start again.",
        )
    return None
