"""The change feed: a revision number per committed change, for changes_since and cross-replica updates.

Revision ID: 0002
Revises: 0001

History written before this revision keeps its order: each existing activity row becomes its own
revision (its id), and the feed continues after the last one.
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "feed",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("revision", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_feed"),
    )
    op.add_column("activity", sa.Column("revision", sa.BigInteger, nullable=True))
    op.execute("UPDATE activity SET revision = id")
    with op.batch_alter_table("activity") as batch:
        batch.alter_column("revision", existing_type=sa.BigInteger, nullable=False)
    op.create_index("ix_activity_revision_id", "activity", ["revision", "id"])
    op.execute("INSERT INTO feed (id, revision) SELECT 1, COALESCE(MAX(id), 0) FROM activity")


def downgrade() -> None:
    raise NotImplementedError("dockyard-tasks never drops a database; restore a backup instead.")
