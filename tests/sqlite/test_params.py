"""params is a list of scalars (the one shape strict function calling and Gemini can express); numbered
placeholders reuse a value; the older forms (an object for :name, null) still work; a value that is not a
scalar, or a count that does not match, is a clear error. Through a client session, both eras."""

from __future__ import annotations

from tests.harness import open_session
from tests.sqlite.helpers import make_server


async def test_params_is_listed_as_a_list_of_scalars_with_an_empty_default(people, era):
    async with open_session(make_server(people, allow_write=True), era=era) as session:
        tools = {tool.name: tool.input_schema for tool in await session.list_tools()}
    for name in ("query", "explain_query", "execute"):
        params = tools[name]["properties"]["params"]
        assert params == {
            "type": "array",
            "items": {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "null"}]},
            "default": [],
        }, name
        assert "params" not in tools[name]["required"]


async def test_numbered_placeholders_reuse_a_value_and_every_form_binds_alike(people, era):
    sql = "SELECT id FROM people WHERE id = ?1 OR id = ?1 + 1 ORDER BY id"
    named = "SELECT id FROM people WHERE id = :id OR id = :id + 1 ORDER BY id"
    async with open_session(make_server(people), era=era) as session:
        numbered = (await session.call_ok("query", {"sql": sql, "params": [7]})).data["rows"]
        by_name = (await session.call_ok("query", {"sql": named, "params": {"id": 7}})).data["rows"]
        none = (await session.call_ok("query", {"sql": "SELECT 1", "params": None})).data["rows"]
        empty = (await session.call_ok("query", {"sql": "SELECT 1", "params": []})).data["rows"]
        null_bound = (
            await session.call_ok("query", {"sql": "SELECT ? IS NULL, ?", "params": [None, 2.5]})
        ).data
    assert numbered == by_name == [[7], [8]]
    assert none == empty == [[1]]
    assert null_bound["rows"] == [[1, 2.5]]


async def test_a_value_that_is_not_a_scalar_or_a_wrong_count_is_a_clear_error(people, era):
    async with open_session(make_server(people), era=era) as session:
        nested = await session.call_error("query", {"sql": "SELECT ?, ?", "params": [1, [1, 2]]})
        in_object = await session.call_error("query", {"sql": "SELECT :a", "params": {"a": {"b": 1}}})
        too_few = await session.call_error("query", {"sql": "SELECT ?, ?", "params": [1]})
    assert "params[1] is an array: each value must be a string, number or null" in nested
    assert "params['a'] is an object" in in_object
    assert "uses 2, and there are 1 supplied" in too_few and "one value for each ? in order" in too_few
