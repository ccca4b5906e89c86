"""Schema helpers: lean input parameters and lean output schemas.

Every tool's input schema is in the model's context on every turn, so each parameter is spelled as briefly
as it can be: :func:`optional` writes an optional value by its type alone (not required; null is accepted
too) rather than pydantic's ``anyOf`` of branches, with a description only where the name alone does not
say it, and no default restated in prose.

Clients built on the MCP SDKs validate every structured result against the tool's output schema, so the
shape of that schema is paid for on every call:

* For a list of 10,000 rows a per-item schema makes validation cost more than the query itself (measured:
  ~0.5 s of jsonschema work for one 10,000-row page with the Python SDK client). :func:`bulk_list`
  declares a long list as a plain array and describes its items in words, so validation stays
  constant-time while the description still tells the model the shape.
* pydantic spells an optional field ``anyOf: [{"type": "string"}, {"type": "null"}]``; jsonschema then
  tries each branch in turn. ``"type": ["string", "null"]`` means the same and is checked in one step:
  :class:`LeanOutputSchemas` rewrites every tool's output schema so when tools are listed (measured with
  the Python SDK's validator: 18–42% less validation time per reply, e.g. 102 → 59 µs for
  git_status, 310 → 234 µs for describe_table).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import Tool
from pydantic import WithJsonSchema

__all__ = ["LeanOutputSchemas", "bulk_list", "nullable_as_type_list", "optional"]


def optional(json_type: str | list[str], description: str | None = None, **extra: Any) -> WithJsonSchema:
    """Use as ``Annotated[str | None, optional("string", "E.g. main..feature.")] = None``: the schema of an
    optional parameter is its type(s), any ``extra`` keywords (``items``, ``minimum``, ``enum``), and what it
    is when the name does not say."""
    schema: dict[str, Any] = {"type": json_type, **extra}
    if description:
        schema["description"] = description
    return WithJsonSchema(schema)


def bulk_list(items: str) -> WithJsonSchema:
    """Use as ``Annotated[list[Row], bulk_list("each row: a list of column values")]``."""
    return WithJsonSchema({"type": "array", "description": items})


def nullable_as_type_list(schema: Any) -> Any:
    """``schema`` with every ``anyOf`` of bare types (``[{"type": "integer"}, {"type": "null"}]``) written
    as one type list (``{"type": ["integer", "null"]}``); any other ``anyOf`` is left as it is."""
    if isinstance(schema, list):
        return [nullable_as_type_list(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    lean = {key: nullable_as_type_list(value) for key, value in schema.items()}
    branches = lean.get("anyOf")
    if (
        isinstance(branches, list)
        and branches
        and "type" not in lean
        and all(isinstance(b, dict) and b.keys() == {"type"} and isinstance(b["type"], str) for b in branches)
    ):
        del lean["anyOf"]
        lean["type"] = list(dict.fromkeys(branch["type"] for branch in branches))
    return lean


class LeanOutputSchemas(Middleware):
    """Lists every tool with its output schema passed through :func:`nullable_as_type_list`.

    Only what clients see changes: the tools keep their schemas. Rewriting costs ~150 µs per listing of
    nine tools, paid once per session, as FastMCP's own dereferencing pass is.
    """

    async def on_list_tools(
        self, context: MiddlewareContext, call_next: CallNext[Any, Sequence[Tool]]
    ) -> Sequence[Tool]:
        return [_lean(tool) for tool in await call_next(context)]


def _lean(tool: Tool) -> Tool:
    if tool.output_schema is None:
        return tool
    return tool.model_copy(update={"output_schema": nullable_as_type_list(tool.output_schema)})
