"""Each actor's budget of writes (--max-writes-per-minute), shared by every replica on the database.

Revision ID: 0008
Revises: 0007

* ``write_budget``: one row per actor, a token bucket: ``tokens`` left (at most N) as of ``refilled_at``
  (seconds since the epoch, the writing process's clock); refilled at N a minute. Read and written under
  the row's lock (PostgreSQL) or the database's write lock (SQLite), so replicas never both spend the
  last token.

Only an addition: an older database keeps every row; budgets start full.
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "write_budget",
        sa.Column("actor", sa.String(100), nullable=False),
        sa.Column("tokens", sa.Float, nullable=False),
        sa.Column("refilled_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("actor", name="pk_write_budget"),
    )


def downgrade() -> None:
    raise NotImplementedError("dockyard-tasks never drops a database; restore a backup instead.")
