"""Parameter types the tools share, written lean (see :func:`dockyard_shared.schema.optional`)."""

from __future__ import annotations

from typing import Annotated

from dockyard_shared.schema import optional

__all__ = ["Paths", "RepoPath"]

RepoPath = Annotated[str | None, optional("string", "Path, absolute or under a root; omit if one is served.")]
Paths = Annotated[
    list[str] | None, optional("array", "Files or folders, relative to the top.", items={"type": "string"})
]
