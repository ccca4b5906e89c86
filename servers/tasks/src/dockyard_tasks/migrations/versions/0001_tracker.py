"""The tracker: projects, tasks, labels, dependencies, comments and the activity history.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

STATUS_CHECK = "status IN ('todo', 'in_progress', 'blocked', 'done', 'cancelled')"


def upgrade() -> None:
    op.create_table(
        "projects",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("key", sa.String(10), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("next_number", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("created_by", sa.String(100), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_projects"),
        sa.UniqueConstraint("key", name="uq_projects_key"),
    )
    op.create_table(
        "tasks",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("project_id", sa.Integer, nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("title", sa.String(300), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("priority", sa.SmallInteger, nullable=False),
        sa.Column("assignee", sa.String(100), nullable=True),
        sa.Column("due_date", sa.Date, nullable=True),
        sa.Column("parent_id", sa.Integer, nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
        sa.Column("created_by", sa.String(100), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_tasks"),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], name="fk_tasks_project_id_projects"),
        sa.ForeignKeyConstraint(
            ["parent_id"], ["tasks.id"], name="fk_tasks_parent_id_tasks", ondelete="SET NULL"
        ),
        sa.UniqueConstraint("project_id", "number", name="uq_tasks_project_id_number"),
        sa.CheckConstraint(STATUS_CHECK, name="ck_tasks_status"),
        sa.CheckConstraint("priority BETWEEN 0 AND 3", name="ck_tasks_priority"),
    )
    op.create_index("ix_tasks_project_id_status_id", "tasks", ["project_id", "status", "id"])
    op.create_index("ix_tasks_status_priority_id", "tasks", ["status", "priority", "id"])
    op.create_index("ix_tasks_assignee_status_id", "tasks", ["assignee", "status", "id"])
    op.create_index("ix_tasks_due_date_id", "tasks", ["due_date", "id"])
    op.create_index("ix_tasks_parent_id", "tasks", ["parent_id"])
    op.create_index("ix_tasks_updated_at_id", "tasks", ["updated_at", "id"])
    op.create_table(
        "task_labels",
        sa.Column("task_id", sa.Integer, nullable=False),
        sa.Column("label", sa.String(40), nullable=False),
        sa.PrimaryKeyConstraint("task_id", "label", name="pk_task_labels"),
        sa.ForeignKeyConstraint(
            ["task_id"], ["tasks.id"], name="fk_task_labels_task_id_tasks", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_task_labels_label_task_id", "task_labels", ["label", "task_id"])
    op.create_table(
        "task_dependencies",
        sa.Column("task_id", sa.Integer, nullable=False),
        sa.Column("blocker_id", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("task_id", "blocker_id", name="pk_task_dependencies"),
        sa.ForeignKeyConstraint(
            ["task_id"], ["tasks.id"], name="fk_task_dependencies_task_id_tasks", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["blocker_id"], ["tasks.id"], name="fk_task_dependencies_blocker_id_tasks", ondelete="CASCADE"
        ),
        sa.CheckConstraint("task_id <> blocker_id", name="ck_task_dependencies_not_self"),
    )
    op.create_index("ix_task_dependencies_blocker_id", "task_dependencies", ["blocker_id"])
    op.create_table(
        "comments",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("task_id", sa.Integer, nullable=False),
        sa.Column("author", sa.String(100), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_comments"),
        sa.ForeignKeyConstraint(
            ["task_id"], ["tasks.id"], name="fk_comments_task_id_tasks", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_comments_task_id_id", "comments", ["task_id", "id"])
    op.create_table(
        "activity",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("at", sa.DateTime, nullable=False),
        sa.Column("actor", sa.String(100), nullable=False),
        sa.Column("project_key", sa.String(10), nullable=False),
        sa.Column("task_id", sa.Integer, nullable=True),
        sa.Column("task_number", sa.Integer, nullable=True),
        sa.Column("task_version", sa.Integer, nullable=True),
        sa.Column("action", sa.String(30), nullable=False),
        sa.Column("field", sa.String(30), nullable=True),
        sa.Column("old_value", sa.Text, nullable=True),
        sa.Column("new_value", sa.Text, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_activity"),
    )
    op.create_index("ix_activity_task_id_id", "activity", ["task_id", "id"])


def downgrade() -> None:
    raise NotImplementedError("dockyard-tasks never drops a database; restore a backup instead.")
