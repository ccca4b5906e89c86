"""Output schemas are listed in the form clients validate fastest, and results still validate against them."""

from __future__ import annotations

from pydantic import BaseModel

from dockyard_shared.schema import nullable_as_type_list
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
        [{"type": "integer", "minimum": 1}, {"type": "null"}],
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
    assert properties["parent"]["type"] == ["string", "null"]
    assert "anyOf" not in str(tool.output_schema)
    assert listed_again.output_schema == tool.output_schema
