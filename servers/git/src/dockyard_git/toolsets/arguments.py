"""Arguments several tools share, so they read the same everywhere."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

__all__ = ["Paths", "RepoPath"]

RepoPath = Annotated[
    str | None,
    Field(
        description="The repository: its path (absolute, or relative to a root). Optional when one repository is served."
    ),
]
Paths = Annotated[
    list[str] | None, Field(description="Limit to these files or folders (relative to the repository top).")
]
