"""Indexes that keep next_task and the text filter flat as the tracker grows.

Revision ID: 0006
Revises: 0005

Why (bench/tasks/scale.py): next_task sorted every todo task of the assignee by priority and due date
on each call (median ×2.1 from 10,000 to 100,000 tasks, ×5.5 to 1,000,000), and a text filter that
matched nothing read every title and description (7.7 → 49 → 442 ms at 10k / 100k / 1M).

* ``ix_tasks_next`` and ``ix_tasks_next_project``: an assignee's tasks in a status, in next_task's order
  (priority, due date with none last, id), so next_task reads its few candidates in order and stops.
  The due date is the expression the query orders by, COALESCE(due_date, '9999-12-31'), word for word:
  SQLite matches an index on an expression only to the same expression.
* SQLite: ``task_search``, an FTS5 index of titles and descriptions with the ``trigram`` tokenizer
  (substrings of three or more characters, case folded), external content (the text stays in ``tasks``
  only), kept by three triggers in the transaction of each change, whoever makes it.
* PostgreSQL: GIN trigram indexes (``pg_trgm``) on title and description, which serve ``ILIKE '%q%'``
  as it is. The extension is created where it can be (an existing one is used wherever it lives;
  else in ``public``, else in the serving schema). A database that cannot have it keeps working:
  the text filter then reads every row as before (store/search.py says so).

The triggers come before the FTS5 backfill, as in 0004.
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# The order of next_task (store/next.py uses the same text).
DUE_LAST = "COALESCE(due_date, '9999-12-31')"

INDEXED = "(rowid, title, description) VALUES (NEW.id, NEW.title, NEW.description)"
UNINDEXED = "(task_search, rowid, title, description) VALUES ('delete', OLD.id, OLD.title, OLD.description)"
SQLITE = [
    "CREATE VIRTUAL TABLE task_search USING fts5("
    "title, description, content='tasks', content_rowid='id', tokenize='trigram')",
    f"CREATE TRIGGER task_search_insert AFTER INSERT ON tasks BEGIN INSERT INTO task_search {INDEXED}; END",
    f"CREATE TRIGGER task_search_delete AFTER DELETE ON tasks BEGIN INSERT INTO task_search {UNINDEXED}; END",
    "CREATE TRIGGER task_search_update AFTER UPDATE OF title, description ON tasks "
    "WHEN OLD.title IS NOT NEW.title OR OLD.description IS NOT NEW.description "
    f"BEGIN INSERT INTO task_search {UNINDEXED}; INSERT INTO task_search {INDEXED}; END",
    "INSERT INTO task_search (task_search) VALUES ('rebuild')",
]
TRIGRAM_INDEXES = ("ix_tasks_title_trgm", "title"), ("ix_tasks_description_trgm", "description")


def upgrade() -> None:
    op.create_index("ix_tasks_next", "tasks", ["assignee", "status", "priority", sa.text(DUE_LAST), "id"])
    op.create_index(
        "ix_tasks_next_project",
        "tasks",
        ["project_id", "assignee", "status", "priority", sa.text(DUE_LAST), "id"],
    )
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        _postgres_trigram_indexes(bind)
    else:
        for statement in SQLITE:
            op.execute(statement)


def _postgres_trigram_indexes(bind: sa.Connection) -> None:
    schema = _trigram_schema(bind)
    if schema is None:
        return  # no pg_trgm here: the text filter reads every row, as before 0006
    ops = f'"{schema}".gin_trgm_ops'
    for name, column in TRIGRAM_INDEXES:
        op.execute(f"CREATE INDEX {name} ON tasks USING gin ({column} {ops})")


def _trigram_schema(bind: sa.Connection) -> str | None:
    """Where pg_trgm lives, creating it if it can; None if this database cannot have it.

    Not in the serving schema when ``public`` will do: dropping a schema drops the extension in it, and
    with it every trigram index of every other schema of the database."""
    for create in (
        "CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public",
        "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    ):
        found = bind.execute(
            sa.text("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_trgm'")
        )
        schema = found.scalar()
        if schema is not None:
            return schema.strip('"')
        try:
            with (
                bind.begin_nested()
            ):  # a refusal (no contrib package, no privilege) must not end the migration
                bind.execute(sa.text(create))
        except sa.exc.DBAPIError:
            continue
    found = bind.execute(
        sa.text("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_trgm'")
    )
    schema = found.scalar()
    return schema.strip('"') if schema is not None else None


def downgrade() -> None:
    raise NotImplementedError("dockyard-tasks never drops a database; restore a backup instead.")
