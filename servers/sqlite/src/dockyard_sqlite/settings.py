"""Configuration of the SQLite server: which databases, what may be done to them, and the limits."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from dockyard_shared import InvalidArgument
from dockyard_shared.paths import user_data_dir

__all__ = ["DatabaseSpec", "Limits", "Settings", "default_demo_path", "parse_database_spec"]

_ALIAS = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$")


@dataclass(frozen=True)
class Limits:
    default_rows: int = 100  # rows per page when the model does not say
    max_rows: int = 10_000  # hard ceiling on rows per page (--max-rows)
    max_chars: int = 400_000  # JSON characters of rows per page: a reply stays well under 1 MiB
    max_cell_chars: int = 10_000  # one text value longer than this is cut (and says how to read the rest)
    timeout_ms: int = 5_000  # per statement (--timeout-ms)
    busy_timeout_ms: int = 1_000  # how long to wait for another process's lock
    sample_rows: int = 3


@dataclass(frozen=True)
class DatabaseSpec:
    alias: str
    path: Path


@dataclass(frozen=True)
class Settings:
    databases: tuple[DatabaseSpec, ...]
    allow_write: bool = False
    create: bool = False
    limits: Limits = field(default_factory=Limits)


def parse_database_spec(value: str) -> DatabaseSpec:
    """``ALIAS=PATH`` or ``PATH`` (the alias is then the file's stem)."""
    alias, separator, rest = value.partition("=")
    if separator and _ALIAS.match(alias) and rest:
        path = rest
    else:
        alias, path = "", value
    resolved = Path(os.path.expanduser(path)).resolve()
    if not alias:
        alias = re.sub(r"[^A-Za-z0-9_\-]", "_", resolved.stem) or "db"
        if not alias[0].isalpha() and alias[0] != "_":
            alias = "db_" + alias
    return DatabaseSpec(alias=alias, path=resolved)


def check_unique_aliases(specs: list[DatabaseSpec]) -> None:
    seen: dict[str, Path] = {}
    for spec in specs:
        if spec.alias in seen:
            raise InvalidArgument(
                f"Two databases would both be called {spec.alias!r} ({seen[spec.alias]} and {spec.path}).",
                next_step="Name them: --db first=PATH --db second=PATH.",
            )
        seen[spec.alias] = spec.path


def default_demo_path() -> Path:
    """Where the generated sample database lives: the user data directory."""
    return user_data_dir("sqlite") / "demo.db"
