"""Is a SQLite file a tasks database at the newest revision? Answered without SQLAlchemy or Alembic.

Beside the migrations, because it is their question: the start-up (``opening.py``) asks it to decide
whether the store may open after ``initialize``, and the settings ask which URLs are plain SQLite paths.
The check is read-only, with the standard ``sqlite3`` module (``audit.py``).
"""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

from . import newest_revision
from .audit import read_sqlite_file, refusal

__all__ = ["ready_sqlite_file", "simple_sqlite_path"]

# sqlite:///path where SQLAlchemy neither decodes nor re-quotes anything: no percent-escape, query or
# character its rendering quotes (tests/tasks/test_opening.py holds the two parsers to the same answer).
_SIMPLE_SQLITE_URL = re.compile(r"sqlite:///([\w ./~+-]+)", re.ASCII)
_BUSY_TIMEOUT_S = 10.0  # as the store's engine (store/engine.py)


def simple_sqlite_path(url: str) -> str | None:
    """The file a plain ``sqlite:///path`` URL names, as SQLAlchemy would read it; None for any other URL."""
    match = _SIMPLE_SQLITE_URL.fullmatch(url)
    return match.group(1) if match else None


def ready_sqlite_file(path: str, *, project: str | None = None) -> bool:
    """Whether the SQLite file at ``path`` is a tasks database at the newest revision (holding ``project``,
    when given). Any doubt — no file, an error, another revision — answers False: the store's own open then
    migrates, or refuses with the reason."""
    newest = newest_revision()
    file = Path(path)
    if not newest or not file.is_file():
        return False
    # The store writes at its open (ANALYZE) and SQLite's WAL files go beside the database: a file or folder
    # this process cannot write is opened at start, where the failure is reported.
    if not (os.access(file, os.W_OK) and os.access(file.resolve().parent, os.W_OK)):
        return False
    try:
        # Read-only, changing nothing (migrations/audit.py); a file that must be refused goes to the
        # store's open, which refuses it with the reason.
        found = read_sqlite_file(file, project=project, timeout_s=_BUSY_TIMEOUT_S)
    except sqlite3.Error:
        return False
    if found is None or found.revision != newest or refusal(found, path) is not None:
        return False
    return project is None or found.has_project
