"""What the sqlite tests import: building a server in process, and a file's digest."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from dockyard_shared.toolsets import Exposure
from dockyard_sqlite.server import create_server
from dockyard_sqlite.settings import WRITE, Limits, Settings, parse_database_spec

__all__ = ["file_digest", "make_server", "rows"]


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rows(path: Path, sql: str) -> list[tuple]:
    """What ``sql`` reads from the file now, on a connection of the test's own."""
    connection = sqlite3.connect(path)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


def make_server(
    *paths: Path,
    allow_write: bool = False,
    trust_model_confirmation: bool = False,
    exposure: Exposure | None = None,
    **limits,
):
    """A server over ``paths`` as the command line would build it: ``allow_write`` is --allow-write,
    ``trust_model_confirmation`` --trust-model-confirmation; ``exposure`` sets the selection flags."""
    chosen = exposure or Exposure(trust_model_confirmation=trust_model_confirmation)
    if allow_write:
        chosen = chosen.enabling(WRITE.name)
    specs = tuple(parse_database_spec(str(p)) for p in paths)
    return create_server(Settings(databases=specs, exposure=chosen, limits=Limits(**limits)))
