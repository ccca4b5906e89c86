"""Parameter types the tools share: the signature is the schema, written lean.

Every tool's input schema is in the model's context on every turn, so each parameter is spelled as briefly
as it can be: an optional value by its type alone (not required; null is accepted too) rather than
pydantic's ``anyOf`` of branches, no default restated in prose, and a description only where the name
alone does not say it.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import WithJsonSchema

__all__ = ["Paths", "RepoPath", "optional"]


def optional(json_type: str, description: str | None = None, **extra: Any) -> WithJsonSchema:
    """The schema of an optional parameter: its type, and what it is when the name does not say."""
    schema: dict[str, Any] = {"type": json_type, **extra}
    if description:
        schema["description"] = description
    return WithJsonSchema(schema)


RepoPath = Annotated[str | None, optional("string", "Path, absolute or under a root; omit if one is served.")]
Paths = Annotated[
    list[str] | None, optional("array", "Files or folders, relative to the top.", items={"type": "string"})
]
