"""Parameter types the tools share, written lean (see :func:`dockyard_shared.schema.optional`)."""

from __future__ import annotations

from typing import Annotated

from dockyard_shared.schema import optional

__all__ = ["Paths", "RepoPath"]

# What repo_path and paths are is said once, in the server's instructions (server.py).
RepoPath = Annotated[str | None, optional("string")]
Paths = Annotated[list[str] | None, optional("array", items={"type": "string"})]
