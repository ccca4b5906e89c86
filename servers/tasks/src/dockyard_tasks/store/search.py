"""list_tasks' text filter: tasks whose title or description contains the text, case-insensitively.

What matches is always decided by the same check: ``title ILIKE '%text%' OR description ILIKE '%text%'``
with ``%``, ``_`` and ``\\`` taken literally (on SQLite, ILIKE folds ASCII letters only). Migration 0006
adds an index that finds the candidates, so a search that matches little no longer reads every row
(7.7 → 49 → 442 ms at 10k / 100k / 1M tasks before):

* SQLite: ``task_search``, an FTS5 table with the ``trigram`` tokenizer, queried with the text as one
  phrase. Its matches are every row holding the text as a substring under Unicode case folding, which
  includes every row the ILIKE check keeps; the check then runs on those rows only. When the page is in
  id order (sort=created, the default), it is read in the FTS5 table's own rowid order (rowid is the
  task's id), so a common text stops after the page's rows instead of collecting every match.
* PostgreSQL: GIN ``pg_trgm`` indexes on both columns serve the same ILIKE directly; the planner picks
  them. A database where pg_trgm could not be created has no such index and reads every row.

A text shorter than three characters has no trigram to look up: it is checked on every row, as before.
"""

from __future__ import annotations

import weakref
from typing import Any

from sqlalchemy import Connection, Engine, Select, column, literal_column, or_, table, text

from .schema import SEARCH_TABLE, Task

__all__ = ["MIN_INDEXED", "containing"]

MIN_INDEXED = 3  # characters: a trigram index finds nothing shorter
_search = table(SEARCH_TABLE, column("rowid"))
_MATCH = literal_column(SEARCH_TABLE).op("MATCH")
_present: weakref.WeakKeyDictionary[Engine, bool] = weakref.WeakKeyDictionary()


def _pattern(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _phrase(value: str) -> str:
    """The text as one FTS5 phrase: inside double quotes everything is literal but a doubled quote."""
    return '"' + value.replace('"', '""') + '"'


def _indexed(bind: Connection) -> bool:
    """Whether this SQLite database has the FTS5 table (asked once per engine)."""
    if bind.dialect.name != "sqlite":
        return False
    present = _present.get(bind.engine)
    if present is None:
        found = bind.execute(
            text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name"), {"name": SEARCH_TABLE}
        )
        present = _present[bind.engine] = found.first() is not None
    return present


def containing(
    connection: Connection, statement: Select, columns: list[Any], value: str
) -> tuple[Select, list[Any]]:
    """``statement`` narrowed to the tasks containing ``value``, and the keyset columns to order and page
    it by (``columns``, whose last is the task id; on SQLite's index, that id read from the index)."""
    bind = connection if isinstance(connection, Connection) else connection.connection()
    if bind.dialect.name == "postgresql":
        # psycopg prepares a statement run five times, and PostgreSQL then may keep one generic plan for
        # it: not knowing the pattern (nor the LIMIT), it walked the primary key checking every row
        # (418 ms at 100,000 tasks for a text matching nothing) where the trigram indexes answer in
        # 0.3 ms. This transaction's statements are planned for their values instead (~1 ms each).
        bind.exec_driver_sql("SET LOCAL plan_cache_mode = force_custom_plan")
    pattern = _pattern(value)
    statement = statement.where(
        or_(Task.title.ilike(pattern, escape="\\"), Task.description.ilike(pattern, escape="\\"))
    )
    if len(value) < MIN_INDEXED or not _indexed(bind):
        return statement, columns
    statement = statement.join(_search, _search.c.rowid == Task.id).where(_MATCH(_phrase(value)))
    return statement, [*columns[:-1], _search.c.rowid]
