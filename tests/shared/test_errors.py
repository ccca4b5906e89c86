"""Failures reach the model as isError results it can act on — through a real client session."""

from __future__ import annotations

import mcp.types as mt
import pytest
from mcp.shared.exceptions import MCPError

from dockyard_shared import NotFound
from dockyard_shared.errors import as_problem, problem_from_os_error, scrub_paths
from tests.harness import open_session


async def test_a_problem_reaches_the_model_with_its_four_parts(toy, era):
    async with open_session(toy, era=era) as session:
        text = await session.call_error("word", {"name": "alpah"})
    assert text.splitlines() == [
        "Error (not_found): no word 'alpah'.",
        "Retry: will not help unless the call or the state changes.",
        "Next step: Did you mean 'alpha'?",
    ]


async def test_an_unexpected_exception_leaks_neither_its_text_nor_a_traceback(toy, era):
    async with open_session(toy, era=era) as session:
        text = await session.call_error("crash")
    assert text.startswith("Error (internal):")
    assert "secret" not in text and ".ssh" not in text and "Traceback" not in text


async def test_arguments_that_break_the_schema_are_an_invalid_argument_naming_the_field(toy, era):
    async with open_session(toy, era=era) as session:
        text = await session.call_error("add", {"a": "not a number", "b": 1})
    assert text.startswith("Error (invalid_argument):")
    assert "a: Input should be a valid integer" in text
    assert "errors.pydantic.dev" not in text


async def test_an_unknown_tool_is_still_reported_as_unknown(toy, era):
    async with open_session(toy, era=era) as session:
        outcome = await session.call("no_such_tool", {})
    assert outcome.is_error and "Unknown tool" in outcome.text


async def test_a_resource_problem_becomes_a_protocol_error_with_the_same_text(toy, era):
    async with open_session(toy, era=era) as session:
        assert await session.read_resource("toy://words/beta") == "the word beta"
        with pytest.raises(MCPError, match=r"Error \(not_found\): no word 'zeta'"):
            await session.read_resource("toy://words/zeta")


async def test_prompts_and_completions_work_through_the_session(toy, era):
    async with open_session(toy, era=era) as session:
        assert await session.get_prompt("greet", {"name": "Ann"}) == ["Say hello to Ann."]
        ref = mt.ResourceTemplateReference(type="ref/resource", uri="toy://words/{name}")
        assert await session.complete(ref, "name", "g") == ["gamma"]


def test_paths_outside_the_allowed_roots_are_scrubbed():
    text = "cannot open /home/alice/.venv/lib/x.py or /srv/data/db.sqlite (see /srv/data)"
    assert scrub_paths(text, ["/srv/data"]) == "cannot open <path> or /srv/data/db.sqlite (see /srv/data)"
    assert scrub_paths("C:\\Users\\bob\\secret.txt failed") == "<path> failed"


def test_as_problem_finds_a_problem_behind_wrappers():
    inner = NotFound("missing")
    try:
        try:
            raise inner
        except NotFound as error:
            raise RuntimeError("wrapped") from error
    except RuntimeError as outer:
        assert as_problem(outer) is inner
    assert as_problem(ValueError("boom")).category.value == "internal"
    assert as_problem(TimeoutError()).category.value == "limit_exceeded"


def test_operating_system_errors_become_problems_without_foreign_paths(tmp_path):
    missing = FileNotFoundError(2, "No such file or directory: '/home/alice/secret.db'")
    problem = problem_from_os_error(missing, what="cannot open the database")
    assert problem.category.value == "not_found" and "/home/alice" not in problem.for_model()
    denied = problem_from_os_error(PermissionError(13, "Permission denied"), what="cannot read")
    assert denied.category.value == "permission_denied"
    other = problem_from_os_error(OSError(28, "No space left on device"), what="cannot write")
    assert other.category.value == "conflict" and other.retryable


async def test_a_huge_argument_name_does_not_come_back_whole_in_the_validation_error(toy, era):
    async with open_session(toy, era=era) as session:
        text = await session.call_error("add", {"a": 1, "b": 2, "A" * 100_000: 3})
    assert text.startswith("Error (invalid_argument):")
    assert len(text) < 2_000 and "more characters]" in text
