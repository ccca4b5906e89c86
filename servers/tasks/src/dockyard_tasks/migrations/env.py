"""Alembic's environment: always run on the connection store/migrate.py hands over, inside its lock."""

from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, transactional_ddl=True, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
