"""Parameter types the tools share, written lean (see :func:`dockyard_shared.schema.optional`)."""

from typing import Annotated, Any

from pydantic import Field

from dockyard_shared.schema import optional

__all__ = ["DatabaseName", "Params", "Sql"]

DatabaseName = Annotated[str | None, optional("string", "Alias; needed when several are served.")]
Sql = Annotated[str, Field(description="One statement; values go in params.")]
Params = Annotated[
    dict[str, Any] | list[Any] | None,
    optional(["object", "array"], "Values: a list for ?, an object for :name."),
]
