"""Workstreams, checklists (acceptance criteria and a plan) and the link back to an imported issue.

Revision ID: 0007
Revises: 0006

* ``tasks.workstream``: the one board a task sits on inside its project (labels stay the free tags), with
  an index on (project_id, workstream, id) for list_tasks and next_task's filter.
* ``tasks.source_url``: where an imported task came from (a GitHub issue's html_url), unique: a second
  import of the same issue finds the task, wherever it was moved, and updates it.
* ``task_checklist``: a task's acceptance criteria and plan steps, in order, each ticked with who and
  when. Deleted with its task.

Only additions: an older database keeps every row, its tasks on no workstream with empty checklists.
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("tasks", sa.Column("workstream", sa.String(40), nullable=True))
    op.add_column("tasks", sa.Column("source_url", sa.String(500), nullable=True))
    op.create_index("ix_tasks_project_id_workstream_id", "tasks", ["project_id", "workstream", "id"])
    op.create_index("ix_tasks_source_url", "tasks", ["source_url"], unique=True)
    op.create_table(
        "task_checklist",
        sa.Column("task_id", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("text", sa.String(300), nullable=False),
        sa.Column("done_at", sa.DateTime, nullable=True),
        sa.Column("done_by", sa.String(100), nullable=True),
        sa.PrimaryKeyConstraint("task_id", "kind", "position", name="pk_task_checklist"),
        sa.ForeignKeyConstraint(
            ["task_id"], ["tasks.id"], name="fk_task_checklist_task_id_tasks", ondelete="CASCADE"
        ),
        sa.CheckConstraint("kind IN ('criteria', 'plan')", name="ck_task_checklist_kind"),
    )


def downgrade() -> None:
    raise NotImplementedError("dockyard-tasks never drops a database; restore a backup instead.")
