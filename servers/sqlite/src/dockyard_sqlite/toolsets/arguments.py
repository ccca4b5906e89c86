"""Parameter types the tools share, written lean (see :func:`dockyard_shared.schema.optional`)."""

from typing import Annotated, Any

from pydantic import Field, PlainValidator, WithJsonSchema

from dockyard_shared.problems import InvalidArgument
from dockyard_shared.schema import optional

__all__ = ["DatabaseName", "Params", "Sql"]

DatabaseName = Annotated[str | None, optional("string", "Alias; needed when several are served.")]
Sql = Annotated[str, Field(description="One statement; values go in params.")]

# One value bound to a placeholder; booleans are taken too (SQLite stores them as 1 and 0).
Scalar = str | int | float | bool | None
_SCALARS = (str, int, float, bool, type(None))


def _checked(params: Any) -> list[Scalar] | dict[str, Scalar] | None:
    """``params`` if it is a list (or an object) of scalars; otherwise an error naming the value."""
    if params is None:
        return None
    if isinstance(params, list | tuple):
        values = dict(enumerate(params))
    elif isinstance(params, dict):
        values = params
    else:
        raise InvalidArgument(
            f"params is {type(params).__name__}, not a list.",
            next_step="Pass params as a list with one value for each ? in order.",
        )
    for where, value in values.items():
        if not isinstance(value, _SCALARS):
            at = where if isinstance(where, int) else repr(str(where)[:40])
            kind = "an array" if isinstance(value, list | tuple) else "an object"
            raise InvalidArgument(
                f"params[{at}] is {kind}: each value must be a string, number or null.",
                next_step="Pass one value for each ?; to store JSON, pass it as a string (json(?) in SQL).",
            )
    return params if isinstance(params, dict) else list(params)


# params is a list, default empty (no values): one shape every model API can express (OpenAI's strict mode
# cannot express an open object, Gemini's types.Schema no type list), and SQLite's numbered placeholders
# (?1, ?2) let one value serve several places, which is what named ones were for. No description: Sql's
# says what it is for, and the listing is paid on every turn. The forms this argument also had, an object
# for :name placeholders and null, are still accepted; they are no longer advertised.
Params = Annotated[
    list[Scalar] | dict[str, Scalar] | None,
    PlainValidator(_checked),
    WithJsonSchema(
        {
            "type": "array",
            "items": {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "null"}]},
        }
    ),
]
