"""Input parameters are listed lean; output schemas in the form clients validate fastest, and results still
validate against them."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import BaseModel, ValidationError, validate_call

from dockyard_shared.schema import nullable_as_type_list, optional, without_null_defaults
from dockyard_shared.server import new_server
from tests.harness import open_session


def test_an_any_of_bare_types_becomes_one_type_list_at_any_depth():
    schema = {
        "type": "object",
        "properties": {
            "count": {"anyOf": [{"type": "integer"}, {"type": "null"}], "description": "rows"},
            "items": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
        },
    }
    assert nullable_as_type_list(schema) == {
        "type": "object",
        "properties": {
            "count": {"type": ["integer", "null"], "description": "rows"},
            "items": {"type": "array", "items": {"type": ["string", "null"]}},
        },
    }


def test_an_any_of_with_constraints_or_references_is_left_as_it_is():
    for branches in (
        [{"type": "integer", "minimum": 1, "default": None}, {"type": "null"}],
        [{"$ref": "#/$defs/Plan"}, {"type": "null"}],
        [{"type": ["integer", "string"]}, {"type": "null"}],
    ):
        schema = {"anyOf": branches}
        assert nullable_as_type_list(schema) == schema


class Reply(BaseModel):
    name: str
    size: int | None
    parent: str | None = None


async def test_listed_output_schemas_use_type_lists_and_results_still_validate(era):
    server = new_server("lean", instructions="test", distribution="dockyard-shared")

    @server.tool
    def describe(name: str) -> Reply:
        """Describe a thing.

        Use when: testing.
        Not for: anything else.
        Returns: the thing.
        Limits: none.
        """
        return Reply(name=name, size=None if name == "empty" else len(name))

    async with open_session(server, era=era) as session:
        (tool,) = await session.list_tools()
        # The client checks each result against the listed schema: a null size must still be accepted.
        for name in ("empty", "full"):
            assert (await session.call_ok("describe", {"name": name})).data["name"] == name
        listed_again = (await session.list_tools())[0]
    properties = tool.output_schema["properties"]
    assert properties["size"] == {"type": ["integer", "null"]}
    assert properties["parent"] == {"type": ["string", "null"]}
    assert "anyOf" not in str(tool.output_schema)
    assert listed_again.output_schema == tool.output_schema


async def test_an_optional_parameter_is_listed_as_its_type_or_null_and_null_is_leaving_it_out(era):
    server = new_server("lean-inputs", instructions="")

    @server.tool
    def grep(
        pattern: str,
        revision: Annotated[str | None, optional("string", "Instead of the working tree.")] = None,
        limit: Annotated[int | None, optional("integer", minimum=1)] = None,
    ) -> str:
        return f"{pattern} {revision} {limit}"

    async with open_session(server, era=era) as session:
        (tool,) = await session.list_tools()
        # The description sits in the typed branch (google-genai keeps only that branch); no "default": null.
        assert tool.input_schema["properties"]["revision"] == {
            "anyOf": [{"type": "string", "description": "Instead of the working tree."}, {"type": "null"}]
        }
        assert tool.input_schema["properties"]["limit"] == {
            "anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]
        }
        assert tool.input_schema["required"] == ["pattern"]
        left_out = (await session.call_ok("grep", {"pattern": "x"})).text
        given_null = (await session.call_ok("grep", {"pattern": "x", "revision": None, "limit": None})).text
        assert left_out == given_null == "x None None"
        assert (await session.call_ok("grep", {"pattern": "x", "limit": 3})).text == "x None 3"


def test_optional_takes_one_type_not_a_type_list():
    with pytest.raises(TypeError, match="type lists"):
        optional(["object", "array"])


def test_a_null_default_is_dropped_and_a_real_default_kept():
    schema = {
        "properties": {
            "default": {"type": "string", "default": None},
            "skip": {"type": "integer", "default": 0},
            "path": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        }
    }
    assert without_null_defaults(schema) == {
        "properties": {
            "default": {"type": "string"},
            "skip": {"type": "integer", "default": 0},
            "path": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        }
    }


def test_optional_changes_only_the_schema_not_validation():
    @validate_call
    def take(value: Annotated[int | None, optional("integer")] = None) -> int | None:
        return value

    assert take(None) is None and take(4) == 4
    with pytest.raises(ValidationError):
        take("four")
