"""Bring a database to this version's schema at start-up, in place, or refuse clearly.

* no tables yet → the migrations build the schema;
* an older revision of ours → the missing migrations run, keeping every row;
* our current revision → nothing to do;
* a revision we do not know (a newer dockyard-tasks wrote it), tables that are not ours, or triggers,
  views or rules the migrations did not create → refused, untouched, with a message saying what to do.

A SQLite file is judged read-only before the store's engine first connects (the engine's connections
switch a file to WAL), PostgreSQL before anything is migrated: ``migrations/audit.py``.

Replicas starting together on one PostgreSQL database take an advisory lock, SQLite processes the
write lock (``BEGIN IMMEDIATE``), so exactly one of them migrates and the others find it done.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from dockyard_shared import UpstreamUnavailable

from ..migrations import MIGRATIONS, newest_revision
from ..migrations.audit import POSTGRES_OBJECTS, Found, read_sqlite_file, refusal, unexpected_objects
from .engine import WRITE, is_postgres, normalise_url, shown_url

if TYPE_CHECKING:  # Alembic is imported only when there is something to migrate (see migrate)
    from alembic.config import Config

__all__ = ["check_sqlite_file", "head_revision", "migrate", "migrate_to", "newest_revision"]


class _RoutineAtDebug(logging.Filter):
    """Alembic's routine INFO lines (its plugins, its context) said at every start are DEBUG here; an actual
    upgrade ("Running upgrade 0005 -> 0006") stays INFO: the operator should see that once."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or record.getMessage().startswith("Running upgrade"):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger().isEnabledFor(logging.DEBUG)


# On the loggers that write them: a logger's filter does not apply to its children's records.
for _name in ("alembic.runtime.plugins", "alembic.runtime.migration"):
    logging.getLogger(_name).addFilter(_RoutineAtDebug())

# Any fixed number: the advisory lock that serialises migrations across replicas.
_MIGRATION_LOCK = 0x646F636B7461736B  # "docktask"


def _config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_config()).get_current_head() or ""


def check_sqlite_file(url: str) -> None:
    """Refuse the SQLite file ``url`` names if it may not be served, before anything opens it for writing
    (nothing is created or changed beside it); a new or missing file passes."""
    url = normalise_url(url)
    if not url.startswith("sqlite"):
        return
    where = shown_url(url)
    try:
        found = read_sqlite_file(Path(make_url(url).database or ""))  # as SQLite opens it
    except sqlite3.Error as error:
        raise UpstreamUnavailable(
            f"Cannot open the task database {where}: {error}. It was left untouched.",
            next_step="Check --database-url names a dockyard-tasks SQLite file (or a new one).",
            retryable=False,
        ) from None
    problem = refusal(found, where)
    if problem is not None:
        raise problem


def _found_in_postgres(connection: Connection) -> Found:
    tables = set(inspect(connection).get_table_names())
    revision = None
    if "alembic_version" in tables:
        versions = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
        revision = versions[0] if len(versions) == 1 else ", ".join(versions)
    rows = [tuple(row) for row in connection.execute(text(POSTGRES_OBJECTS))]
    return Found(revision, frozenset(tables - {"alembic_version"}), unexpected_objects("postgresql", rows))


def migrate(engine: Engine) -> None:
    """Bring the database to the newest revision. A database already there, as at almost every start,
    is recognised with one query, without importing Alembic (the costliest import of a start).
    PostgreSQL is first judged as a SQLite file is (check_sqlite_file), read-only."""
    if is_postgres(engine):
        with engine.connect() as connection:
            problem = refusal(_found_in_postgres(connection), shown_url(str(engine.url)))
        if problem is not None:
            raise problem
    if not _at_newest_revision(engine):
        migrate_to(engine, "head")


def _at_newest_revision(engine: Engine) -> bool:
    newest = newest_revision()
    try:
        with engine.connect() as connection:
            current = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    except DBAPIError:  # no such table yet: a new database, migrated (and checked) the full way
        return False
    return bool(newest) and current == [newest]


def migrate_to(engine: Engine, target: str) -> None:
    """Upgrade to ``target`` ("head", or an older revision: the migration tests build old databases)."""
    from alembic import command
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    config = _config()
    script = ScriptDirectory.from_config(config)
    with engine.connect().execution_options(**{WRITE: True}) as connection, connection.begin():
        if is_postgres(engine):
            # A migration may rewrite large tables, and replicas wait here for the one migrating: the
            # per-statement limits of serving (engine.py) do not apply to it.
            connection.execute(text("SET LOCAL statement_timeout = 0"))
            connection.execute(text("SET LOCAL lock_timeout = 0"))
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
        current = MigrationContext.configure(connection).get_current_revision()
        # Judged again under the lock: another process may have written since the check at open.
        tables = frozenset(inspect(connection).get_table_names()) - {"alembic_version"}
        problem = refusal(Found(current, tables), shown_url(str(engine.url)))
        if problem is not None:
            raise problem
        if current == (script.get_current_head() if target == "head" else target):
            return
        config.attributes["connection"] = connection
        command.upgrade(config, target)
