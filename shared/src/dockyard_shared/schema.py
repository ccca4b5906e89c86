"""Schema helpers: lean input parameters and lean output schemas.

Every tool's input schema is in the model's context on every turn, so each parameter is spelled as briefly
as it can be, with a description only where the name alone does not say it, and no default restated in
prose. An optional argument whose absence means "not given" is written by :func:`optional` as its type or
null, in the one form every model API we checked takes (tests/workspace/test_model_apis.py):

* ``"type": T`` alone (what this helper wrote before) forbids null, and OpenAI's strict mode makes every
  argument required: the model was left no way to say "not given".
* ``"type": [T, "null"]`` (26 characters for a string) is refused by google-genai's ``types.Schema``
  (``'list' object has no attribute 'upper'``).
* ``"type": T, "nullable": true`` is OpenAPI, not JSON Schema: strict mode ignores it and google-genai's
  ``JSONSchema`` refuses it.
* ``anyOf: [{T}, {"type": "null"}]`` (45 characters) passes all of them. Its description goes inside the
  ``T`` branch, at no extra length: google-genai's JSON Schema conversion (what its MCP support uses)
  unwraps a nullable ``anyOf`` to that branch and drops what stood beside the ``anyOf``.

Clients built on the MCP SDKs validate every structured result against the tool's output schema, so the
shape of that schema is paid for on every call:

* For a list of 10,000 rows a per-item schema makes validation cost more than the query itself (measured:
  ~0.5 s of jsonschema work for one 10,000-row page with the Python SDK client). :func:`bulk_list`
  declares a long list as a plain array and describes its items in words, so validation stays
  constant-time while the description still tells the model the shape.
* pydantic spells an optional field ``anyOf: [{"type": "string"}, {"type": "null"}]``; jsonschema then
  tries each branch in turn. ``"type": ["string", "null"]`` means the same and is checked in one step:
  :class:`ListedSchemas` rewrites every tool's output schema so when tools are listed (measured with
  the Python SDK's validator: 18–42% less validation time per reply, e.g. 102 → 59 µs for
  git_status, 310 → 234 µs for describe_table). Output schemas go to the client's validator, not to a
  model API's converter (google-genai's JSON Schema route takes type lists anyway): inputs keep ``anyOf``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import Tool
from pydantic import WithJsonSchema

__all__ = [
    "ListedSchemas",
    "bulk_list",
    "inline_local_refs",
    "nullable_as_type_list",
    "optional",
    "without_null_defaults",
]


def optional(json_type: str, description: str | None = None, **extra: Any) -> WithJsonSchema:
    """Use as ``Annotated[str | None, optional("string", "E.g. main..feature.")] = None``: the schema of an
    optional parameter is its type, any ``extra`` keywords (``items``, ``minimum``, ``enum``) and what it is
    when the name does not say, or null; null means the same as leaving it out (the parameter's default)."""
    if not isinstance(json_type, str):
        raise TypeError(
            f"optional() takes one JSON type, not {json_type!r}: type lists are refused by Gemini"
        )
    given: dict[str, Any] = {"type": json_type, **extra}
    if description:
        given["description"] = description
    return WithJsonSchema({"anyOf": [given, {"type": "null"}]})


def bulk_list(items: str) -> WithJsonSchema:
    """Use as ``Annotated[list[Row], bulk_list("each row: a list of column values")]``."""
    return WithJsonSchema({"type": "array", "description": items})


def without_null_defaults(schema: Any) -> Any:
    """``schema`` without ``"default": null``: an argument that is not required may be left out, and its
    ``anyOf`` already says null is taken; restating it costs 15 characters an argument on every turn (and
    OpenAI's strict conversion drops it anyway). A real default (``0``, ``""``, ``"HEAD"``) stays."""
    if isinstance(schema, list):
        return [without_null_defaults(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: without_null_defaults(value)
        for key, value in schema.items()
        if not (key == "default" and value is None)
    }


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


class _CannotInline(Exception):
    pass


def inline_local_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each ``{"$ref": "#/$defs/Name", ...}`` replaced by that definition (its sibling
    keywords, such as a description, kept on top) and the root's ``$defs`` dropped: what FastMCP's
    ``dereference_refs`` makes of a pydantic schema, for clients that do not follow ``$ref``.

    Why our own: FastMCP's uses jsonref, which imports requests (for remote references a listing never
    follows), ~30 ms of the first ``tools/list``. Anything this does not cover — a cycle, a reference
    other than ``#/$defs/…``, a ``discriminator`` — goes to FastMCP's, so the listing is what FastMCP
    would list either way (tests/workspace/test_listed_schemas.py compares both on every Dockyard tool).
    """
    if "$defs" not in schema and not _has_ref(schema):
        return schema
    definitions = schema.get("$defs", {})

    def inline(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [inline(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        if "discriminator" in node:
            raise _CannotInline
        ref = node.get("$ref")
        if ref is None:
            return {key: inline(value, seen) for key, value in node.items()}
        name = ref.removeprefix("#/$defs/") if isinstance(ref, str) else None
        if name is None or name == ref or "/" in name or name not in definitions or name in seen:
            raise _CannotInline
        target = inline(definitions[name], seen | {name})
        siblings = {key: value for key, value in node.items() if key not in ("$ref", "$defs")}
        if any(isinstance(value, dict | list) for value in siblings.values()):
            raise _CannotInline  # FastMCP keeps such siblings as written; not worth mirroring
        return {**target, **siblings} if siblings else target

    try:
        return {key: inline(value, frozenset()) for key, value in schema.items() if key != "$defs"}
    except (_CannotInline, RecursionError):
        from fastmcp.utilities.json_schema import dereference_refs

        return dereference_refs(schema)


def _has_ref(node: Any) -> bool:
    if isinstance(node, dict):
        return "$ref" in node or any(_has_ref(value) for value in node.values())
    if isinstance(node, list):
        return any(_has_ref(item) for item in node)
    return False


class ListedSchemas(Middleware):
    """What clients see of each schema when tools and resource templates are listed: output schemas
    passed through :func:`nullable_as_type_list`, then every schema through :func:`without_null_defaults`
    and :func:`inline_local_refs`.

    Replaces FastMCP's own dereferencing pass (``new_server`` turns it off). Only what clients see
    changes: the components keep their schemas. Each schema is rewritten once per process and
    remembered (a listing then costs a dictionary lookup per schema).
    """

    # FastMCP lists the same schema objects each time, so this holds one entry per schema; the bound only
    # matters if a listing ever brought new ones each time (then they are rewritten afresh, not hoarded).
    REMEMBERED = 1_000

    def __init__(self) -> None:
        self._listed: dict[tuple[int, bool], tuple[Any, Any]] = {}

    def _shown(self, schema: dict[str, Any], *, output: bool) -> dict[str, Any]:
        key = (id(schema), output)
        known = self._listed.get(key)
        if known is not None and known[0] is schema:
            return known[1]
        shown = inline_local_refs(without_null_defaults(nullable_as_type_list(schema) if output else schema))
        if len(self._listed) >= self.REMEMBERED:
            self._listed.clear()
        self._listed[key] = (schema, shown)  # the schema is kept too, so its id is not reused
        return shown

    async def on_list_tools(
        self, context: MiddlewareContext, call_next: CallNext[Any, Sequence[Tool]]
    ) -> Sequence[Tool]:
        return [self._tool(tool) for tool in await call_next(context)]

    async def on_list_resource_templates(
        self, context: MiddlewareContext, call_next: CallNext[Any, Sequence[Any]]
    ) -> Sequence[Any]:
        listed = []
        for template in await call_next(context):
            parameters = self._shown(template.parameters, output=False)
            listed.append(
                template
                if parameters is template.parameters
                else template.model_copy(update={"parameters": parameters})
            )
        return listed

    def _tool(self, tool: Tool) -> Tool:
        updates: dict[str, Any] = {}
        parameters = self._shown(tool.parameters, output=False)
        if parameters is not tool.parameters:
            updates["parameters"] = parameters
        if tool.output_schema is not None:
            updates["output_schema"] = self._shown(tool.output_schema, output=True)
        return tool.model_copy(update=updates) if updates else tool
