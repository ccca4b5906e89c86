"""A server's tools as plain function-calling definitions: OpenAI, Anthropic, Gemini (``dockyard tools``).

MCP lets a host discover and call tools at run time; a function-calling API takes the same definitions up
front, in its own dialect. This module lists a built server's tools through an in-memory MCP client (so
what is exported is exactly what the server lists, after every selection flag) and writes them as:

* ``openai``: ``{"type": "function", "function": {name, description, parameters, strict}}``, with
  ``strict: true`` and the schema in strict form (every property required, null where leaving it out was
  allowed, objects closed) wherever strict mode can express it, else the schema as listed;
* ``anthropic``: ``{name, description, input_schema}``, the schema as listed;
* ``gemini``: function declarations ``{name, description, parameters}`` in the OpenAPI subset Gemini's
  ``Schema`` takes (a nullable ``anyOf`` becomes ``nullable: true``; ``additionalProperties``, which the
  Gemini API refuses, is left out).

Why our own conversions rather than the SDKs': dockyard-shared does not depend on the model SDKs; the
tests (tests/workspace/test_export.py) check every server's output against the Agents SDK's strict
conversion and load it into the openai, anthropic and google-genai types.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .problems import Problem

if TYPE_CHECKING:
    import mcp.types as mt
    from fastmcp import FastMCP

    from .runner import ServerEntry

__all__ = [
    "FORMATS",
    "anthropic_tools",
    "exported",
    "gemini_declarations",
    "listed_tools",
    "openai_tools",
    "run_export",
]


class NotStrict(Exception):
    """The schema holds something OpenAI's strict mode cannot express (an open object, a reference)."""


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` as OpenAI's strict mode takes it: every object closed with all its properties required,
    ``"default": null`` dropped (an optional argument is already nullable: leaving it out becomes null).
    Raises :class:`NotStrict` where strict mode would change what the schema accepts."""
    converted = _strict(copy.deepcopy(schema))
    if "anyOf" in converted or converted.get("type") != "object":
        raise NotStrict("the root must be a plain object")
    return converted


def _strict(node: Any) -> Any:
    if not isinstance(node, dict):
        raise NotStrict(f"a schema must be an object, not {node!r}")
    if "$ref" in node or "$defs" in node:
        raise NotStrict("references are not followed here")
    kind = node.get("type")
    if kind is None and "properties" in node:
        kind = node["type"] = "object"
    if kind == "object" or (isinstance(kind, list) and "object" in kind):
        closed = node.get("additionalProperties", None) is False
        if not closed and ("additionalProperties" in node or not node.get("properties")):
            raise NotStrict("an object that takes undeclared properties")
        properties = node.get("properties", {})
        node["additionalProperties"] = False
        node["required"] = list(properties)
        node["properties"] = {name: _strict(value) for name, value in properties.items()}
    if isinstance(node.get("items"), dict):
        node["items"] = _strict(node["items"])
    if isinstance(node.get("anyOf"), list):
        node["anyOf"] = [_strict(branch) for branch in node["anyOf"]]
    if isinstance(node.get("oneOf"), list):  # strict mode has anyOf only; our branches never overlap
        node["anyOf"] = [*node.get("anyOf", []), *(_strict(branch) for branch in node.pop("oneOf"))]
    if "allOf" in node:
        raise NotStrict("allOf is not merged here")
    if "default" in node and node["default"] is None:
        del node["default"]
    return node


# The keywords Gemini's Schema (an OpenAPI 3.0 subset) has, as JSON Schema spells them.
_GEMINI_KEYWORDS = {
    "anyOf", "default", "description", "enum", "example", "format", "items", "maxItems", "maxLength",
    "maxProperties", "maximum", "minItems", "minLength", "minProperties", "minimum", "nullable", "pattern",
    "properties", "propertyOrdering", "required", "title", "type",
}  # fmt: skip


def gemini_schema(node: Any) -> Any:
    """``node`` in Gemini's OpenAPI subset: ``anyOf: [T, null]`` becomes ``T`` with ``nullable: true``,
    a null branch among several becomes ``{"nullable": true}``, and keywords Gemini's Schema lacks (such as
    ``additionalProperties``) are left out: what google-genai's ``Schema.from_json_schema`` makes of it."""
    if not isinstance(node, dict):
        return node
    branches = node.get("anyOf")
    if isinstance(branches, list) and {"type": "null"} in branches:
        typed = [branch for branch in branches if branch != {"type": "null"}]
        outer = {key: value for key, value in node.items() if key != "anyOf"}
        if len(typed) == 1:
            return gemini_schema({**outer, **typed[0], "nullable": True})
        # As google-genai's own conversion writes it: the null branch as a nullable one.
        nullable = [{"nullable": True} if branch == {"type": "null"} else branch for branch in branches]
        return gemini_schema({**outer, "anyOf": nullable})
    converted: dict[str, Any] = {}
    for key, value in node.items():
        if key not in _GEMINI_KEYWORDS:
            continue
        if key == "properties":
            value = {name: gemini_schema(item) for name, item in value.items()}
        elif key == "items":
            value = gemini_schema(value)
        elif key == "anyOf":
            value = [gemini_schema(item) for item in value]
        converted[key] = value
    return converted


def openai_tools(tools: Sequence[mt.Tool]) -> list[dict[str, Any]]:
    exported = []
    for tool in tools:
        try:
            parameters, strict = strict_schema(tool.input_schema), True
        except NotStrict:
            parameters, strict = tool.input_schema, False
        function = {"name": tool.name, "description": tool.description or "", "parameters": parameters}
        exported.append({"type": "function", "function": {**function, "strict": strict}})
    return exported


def anthropic_tools(tools: Sequence[mt.Tool]) -> list[dict[str, Any]]:
    return [
        {"name": tool.name, "description": tool.description or "", "input_schema": tool.input_schema}
        for tool in tools
    ]


def gemini_declarations(tools: Sequence[mt.Tool]) -> list[dict[str, Any]]:
    return [
        {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": gemini_schema(tool.input_schema),
        }
        for tool in tools
    ]


FORMATS: dict[str, Callable[[Sequence[mt.Tool]], list[dict[str, Any]]]] = {
    "openai": openai_tools,
    "anthropic": anthropic_tools,
    "gemini": gemini_declarations,
}


async def listed_tools(server: FastMCP) -> list[mt.Tool]:
    """What ``server`` lists to a client (every middleware applied), through an in-memory session."""
    from fastmcp import Client

    async with Client(server) as client:
        return await client.list_tools()


async def exported(server: FastMCP, format: str) -> list[dict[str, Any]]:
    """``server``'s listed tools as ``format`` (a key of :data:`FORMATS`) defines them."""
    return FORMATS[format](await listed_tools(server))


def run_export(entry: ServerEntry, argv: Sequence[str]) -> int:
    """``dockyard tools NAME [--format F] [server and selection flags]``: print the JSON array."""
    parser = entry.parser(with_runner=False)
    parser.prog = f"dockyard tools {entry.name}"
    parser.description = f"Print {entry.name}'s tools as a function-calling API's definitions (a JSON array)."
    parser.add_argument(
        "--format",
        choices=list(FORMATS),
        default="openai",
        help="openai: chat completions tools (strict where the schema allows); anthropic: Messages API "
        "tools; gemini: function declarations",
    )
    args = parser.parse_args(list(argv))
    try:
        server = entry.build(args)
    except Problem as problem:
        print(f"dockyard: {problem.what}", file=sys.stderr)
        if problem.next_step:
            print(f"  {problem.next_step}", file=sys.stderr)
        return 2
    import anyio

    print(json.dumps(anyio.run(exported, server, args.format), indent=2, ensure_ascii=False))
    return 0
