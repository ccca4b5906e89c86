"""Alembic migrations of the tasks schema, shipped in the package and run at start-up (store/migrate.py).

Each revision only ever adds to what the previous built; a database is never dropped and recreated.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

__all__ = ["MIGRATIONS", "known_revisions", "newest_revision"]

MIGRATIONS = Path(__file__).resolve().parent


@cache
def _revisions() -> tuple[frozenset[str], frozenset[str]]:
    """Every revision the migration files name, and those some file names as its parent."""
    revisions, parents = set(), set()
    for script in (MIGRATIONS / "versions").glob("*.py"):
        source = script.read_text(encoding="utf-8")
        revisions.update(re.findall(r"^revision\s*=\s*[\"']([^\"']+)[\"']", source, re.MULTILINE))
        parents.update(re.findall(r"^down_revision\s*=\s*[\"']([^\"']+)[\"']", source, re.MULTILINE))
    return frozenset(revisions), frozenset(parents)


def known_revisions() -> frozenset[str]:
    """The revisions this version can upgrade from (or is at), read from the files as newest_revision."""
    return _revisions()[0]


@cache
def newest_revision() -> str:
    """The head revision read from the migration files' ``revision`` and ``down_revision`` lines, without
    importing Alembic or SQLAlchemy (tests/tasks/test_migrations.py checks it against Alembic's head)."""
    revisions, parents = _revisions()
    heads = revisions - parents
    return next(iter(heads)) if len(heads) == 1 else ""
