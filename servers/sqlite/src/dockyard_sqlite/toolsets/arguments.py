"""Parameter types the tools share, written lean (see :func:`dockyard_shared.schema.optional`)."""

from typing import Annotated

from pydantic import Field, WithJsonSchema

from dockyard_shared.schema import optional

__all__ = ["DatabaseName", "Params", "Sql"]

DatabaseName = Annotated[str | None, optional("string", "Alias; needed when several are served.")]
Sql = Annotated[str, Field(description="One statement; values go in params.")]

# One value bound to a placeholder; booleans are taken too (SQLite stores them as 1 and 0).
Scalar = str | int | float | bool | None
# params is a list, default empty (no values): one shape every model API can express (OpenAI's strict mode
# cannot express an open object, Gemini's types.Schema no type list), and SQLite's numbered placeholders
# (?1, ?2) let one value serve several places, which is what named ones were for. No description: Sql's
# says what it is for, and the listing is paid on every turn. The forms this argument also had, an object
# for :name placeholders and null, are still accepted; they are no longer advertised.
Params = Annotated[
    list[Scalar] | dict[str, Scalar] | None,
    WithJsonSchema(
        {
            "type": "array",
            "items": {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "null"}]},
        }
    ),
]
