"""Bring a database to this version's schema at start-up, in place, or refuse clearly.

* no tables yet → the migrations build the schema;
* an older revision of ours → the missing migrations run, keeping every row;
* our current revision → nothing to do;
* a revision we do not know (a newer dockyard-tasks wrote it), or tables that are not ours → refused,
  untouched, with a message saying what to do.

Replicas starting together on one PostgreSQL database take an advisory lock, SQLite processes the
write lock (``BEGIN IMMEDIATE``), so exactly one of them migrates and the others find it done.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Engine, inspect, text
from sqlalchemy.exc import DBAPIError

from dockyard_shared import Conflict

from ..migrations import MIGRATIONS, newest_revision
from .engine import WRITE, is_postgres, shown_url

if TYPE_CHECKING:  # Alembic is imported only when there is something to migrate (see migrate)
    from alembic.config import Config

__all__ = ["head_revision", "migrate", "migrate_to", "newest_revision"]

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


def migrate(engine: Engine) -> None:
    """Bring the database to the newest revision. A database already there, as at almost every start,
    is recognised with one query, without importing Alembic (the costliest import of a start)."""
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
    known = {rev.revision for rev in script.walk_revisions()}
    with engine.connect().execution_options(**{WRITE: True}) as connection, connection.begin():
        if is_postgres(engine):
            # A migration may rewrite large tables, and replicas wait here for the one migrating: the
            # per-statement limits of serving (engine.py) do not apply to it.
            connection.execute(text("SET LOCAL statement_timeout = 0"))
            connection.execute(text("SET LOCAL lock_timeout = 0"))
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
        current = MigrationContext.configure(connection).get_current_revision()
        where = shown_url(str(engine.url))
        if current is None:
            tables = set(inspect(connection).get_table_names()) - {"alembic_version"}
            if tables:
                raise Conflict(
                    f"The database {where} already holds tables that are not a dockyard-tasks schema "
                    f"({', '.join(sorted(tables)[:5])}); it was left untouched.",
                    next_step="Point --database-url at an empty database or at a dockyard-tasks one.",
                )
        elif current not in known:
            raise Conflict(
                f"The database {where} is at schema revision {current!r}, which this dockyard-tasks does "
                f"not know (it knows up to {script.get_current_head()}): a newer dockyard-tasks wrote it. "
                "It was left untouched.",
                next_step="Upgrade dockyard-tasks, or point --database-url at another database.",
            )
        if current == (script.get_current_head() if target == "head" else target):
            return
        config.attributes["connection"] = connection
        command.upgrade(config, target)
