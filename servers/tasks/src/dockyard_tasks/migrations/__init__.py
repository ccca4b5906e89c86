"""Alembic migrations of the tasks schema, shipped in the package and run at start-up (store/migrate.py).

Each revision only ever adds to what the previous built; a database is never dropped and recreated.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

__all__ = ["MIGRATIONS", "newest_revision"]

MIGRATIONS = Path(__file__).resolve().parent


@cache
def newest_revision() -> str:
    """The head revision read from the migration files' ``revision`` and ``down_revision`` lines, without
    importing Alembic or SQLAlchemy (tests/tasks/test_migrations.py checks it against Alembic's head)."""
    revisions, parents = set(), set()
    for script in (MIGRATIONS / "versions").glob("*.py"):
        source = script.read_text(encoding="utf-8")
        revisions.update(re.findall(r"^revision\s*=\s*[\"']([^\"']+)[\"']", source, re.MULTILINE))
        parents.update(re.findall(r"^down_revision\s*=\s*[\"']([^\"']+)[\"']", source, re.MULTILINE))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else ""
