"""Every tool of every server, every toolset on, is taken by the model APIs' own schema converters.

What a framework does with a listed tool, done with the framework's own code:

* the OpenAI Agents SDK with ``convert_schemas_to_strict=True`` (``MCPUtil.to_function_tool``): a schema
  strict mode cannot express falls back to non-strict, so a tool whose schema is not strict fails here;
  and since strict mode makes every argument required, an optional argument without a default must take
  null after the conversion, or the model has no way left to leave it out;
* google-genai's ``types.Schema`` (the classic OpenAPI form, which refused type lists) and its JSON Schema
  route ``Schema.from_json_schema`` (what its MCP support uses), which must keep every argument's
  description.

Output schemas are used by no framework here for function calling; where one takes a JSON Schema for a
response (Gemini's ``response_json_schema``, through the same ``from_json_schema``), what is listed must
convert. Listed output schemas use type lists for faster validation (dockyard_shared.schema), which
google-genai's JSON route takes and the classic ``types.Schema`` does not: that form is for inputs only.
"""

from __future__ import annotations

import logging

import pytest
from agents.mcp import MCPServerStdio, MCPUtil
from google.genai import types
from jsonschema import Draft202012Validator

from tests.harness import open_session
from tests.workspace.test_context_budget import SERVERS, widest

# Only its conversion is used: the stand-in server is never started.
AGENTS_SERVER = MCPServerStdio(params={"command": "dockyard-never-started"})


async def listed(name, monkeypatch, tmp_path, era):
    async with open_session(widest(name, monkeypatch, tmp_path), era=era) as session:
        return await session.list_tools()


def agents_strict(tool) -> dict | None:
    """The schema the Agents SDK sends with ``strict: true``, or None if it fell back to non-strict."""
    converted = MCPUtil.to_function_tool(tool, AGENTS_SERVER, convert_schemas_to_strict=True)
    return converted.params_json_schema if converted.strict_json_schema else None


def left_out_optional(schema: dict) -> list[str]:
    """Arguments a caller may leave out that have no real default: leaving them out means "not given"."""
    required = set(schema.get("required", []))
    properties = schema.get("properties", {})
    return [arg for arg, prop in properties.items() if arg not in required and prop.get("default") is None]


def described(prop: dict) -> str | None:
    if "description" in prop:
        return prop["description"]
    typed = [branch for branch in prop.get("anyOf", []) if branch != {"type": "null"}]
    return typed[0].get("description") if len(typed) == 1 else None


@pytest.mark.parametrize("name", sorted(SERVERS))
async def test_every_input_schema_is_strict_for_openai_and_leaves_optional_arguments_nullable(
    name, monkeypatch, tmp_path, era
):
    refused, not_nullable = [], []
    for tool in await listed(name, monkeypatch, tmp_path, era):
        strict = agents_strict(tool)
        if strict is None:
            refused.append(tool.name)
            continue
        assert strict["required"] == list(strict["properties"]), tool.name
        for arg in left_out_optional(tool.input_schema):
            if not Draft202012Validator(strict["properties"][arg]).is_valid(None):
                not_nullable.append(f"{tool.name}.{arg}")
    assert not refused, f"strict mode refuses: {refused}"
    assert not not_nullable, f"under strict mode these can no longer be left out: {not_nullable}"


@pytest.mark.parametrize("name", sorted(SERVERS))
async def test_every_input_schema_is_a_gemini_schema_and_keeps_its_descriptions(
    name, monkeypatch, tmp_path, era
):
    logging.getLogger("google_genai").setLevel(logging.ERROR)
    refused, undescribed = {}, []
    for tool in await listed(name, monkeypatch, tmp_path, era):
        schema = tool.input_schema
        try:
            types.Schema.model_validate(schema)
            converted = types.Schema.from_json_schema(
                json_schema=types.JSONSchema(**schema), raise_error_on_unsupported_field=True
            )
        except Exception as error:  # AttributeError on a type list, ValidationError on a foreign keyword
            refused[tool.name] = f"{type(error).__name__}: {str(error)[:200]}"
            continue
        for arg, prop in schema.get("properties", {}).items():
            if described(prop) and not converted.properties[arg].description:
                undescribed.append(f"{tool.name}.{arg}")
    assert not refused, f"google-genai refuses: {refused}"
    assert not undescribed, f"google-genai's conversion loses these descriptions: {undescribed}"


@pytest.mark.parametrize("name", sorted(SERVERS))
async def test_every_listed_output_schema_converts_through_gemini_json_schema_route(
    name, monkeypatch, tmp_path, era
):
    refused = {}
    for tool in await listed(name, monkeypatch, tmp_path, era):
        if tool.output_schema is None:
            continue
        try:
            types.Schema.from_json_schema(json_schema=types.JSONSchema(**tool.output_schema))
        except Exception as error:
            refused[tool.name] = f"{type(error).__name__}: {str(error)[:200]}"
    assert not refused, refused


def test_the_checks_fail_on_the_forms_the_issue_found():
    """The old forms: ``"type": T`` alone (not nullable), a type list (Gemini), an open object (strict)."""
    import mcp.types as mt

    old = mt.Tool(
        name="old",
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "properties": {"path": {"type": "string", "default": None}},
        },
    )
    strict = agents_strict(old)
    assert strict is not None and left_out_optional(old.input_schema) == ["path"]
    assert not Draft202012Validator(strict["properties"]["path"]).is_valid(None)
    with pytest.raises(AttributeError, match="upper"):
        types.Schema.model_validate({"type": "object", "properties": {"p": {"type": ["object", "array"]}}})
    open_object = mt.Tool(name="o", input_schema={"type": "object", "properties": {"p": {"type": "object"}}})
    assert agents_strict(open_object) is None
