"""Parameter types the tools of both toolsets share: the signature is the schema."""

from typing import Annotated, Any

from pydantic import Field

__all__ = ["DatabaseName", "Params", "Sql"]

DatabaseName = Annotated[
    str | None,
    Field(description="Alias of the database to use; optional when the server serves exactly one."),
]
Sql = Annotated[str, Field(description="Exactly one SQL statement. Put values in params, not in the text.")]
Params = Annotated[
    dict[str, Any] | list[Any] | None,
    Field(description="Values bound to placeholders: a list for ?, an object for :name."),
]
