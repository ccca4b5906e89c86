"""Parameter types the tools share: the signature is the schema, written lean.

Every tool's input schema is in the model's context on every turn, so each parameter is spelled as
briefly as it can be: an optional value by its type alone (not required; null is accepted too) rather
than pydantic's ``anyOf`` of branches, and a description only where the name alone does not say it.
"""

from typing import Annotated, Any

from pydantic import Field, WithJsonSchema

__all__ = ["DatabaseName", "Params", "Sql", "optional"]


def optional(json_type: str | list[str], description: str | None = None) -> WithJsonSchema:
    """The schema of an optional parameter: its type(s), and what it is when the name does not say."""
    schema: dict[str, Any] = {"type": json_type}
    if description:
        schema["description"] = description
    return WithJsonSchema(schema)


DatabaseName = Annotated[str | None, optional("string", "Alias; needed when several are served.")]
Sql = Annotated[str, Field(description="One statement; values go in params.")]
Params = Annotated[
    dict[str, Any] | list[Any] | None,
    optional(["object", "array"], "Values: a list for ?, an object for :name."),
]
