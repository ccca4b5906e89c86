"""Alembic migrations of the tasks schema, shipped in the package and run at start-up (store/migrate.py).

Each revision only ever adds to what the previous built; a database is never dropped and recreated.
"""
