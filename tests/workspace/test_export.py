"""`dockyard tools NAME --format openai|anthropic|gemini`: each server's listed tools as a function-calling
API defines them, loaded into that API's own SDK types; and the arguments a strict-mode model sends (every
argument, null for the ones it leaves out) mean what leaving them out means, through the protocol."""

from __future__ import annotations

import copy
import json
import logging
import subprocess

import pytest
from agents.strict_schema import ensure_strict_json_schema
from anthropic.types import ToolParam
from google.genai import types
from openai.types.chat import ChatCompletionFunctionTool, ChatCompletionFunctionToolParam
from pydantic import TypeAdapter

from dockyard_shared.cli import main
from dockyard_shared.export import gemini_schema, strict_schema
from tests.harness import VENV_BIN, open_session
from tests.workspace.test_context_budget import SERVERS, widest


@pytest.fixture
def environment(monkeypatch, tmp_path):
    """What `widest` sets: a dummy GitHub token (so the github toolset is listed) and private data."""
    monkeypatch.setenv("GITHUB_TOKEN", "export-test")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))


def export(capsys, name: str, format: str, *flags: str) -> list[dict]:
    assert main(["tools", name, "--format", format, *flags]) == 0
    return json.loads(capsys.readouterr().out)


async def listed(name, monkeypatch, tmp_path):
    async with open_session(widest(name, monkeypatch, tmp_path)) as session:
        return {tool.name: tool for tool in await session.list_tools()}


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_openai_export_is_strict_for_every_tool_and_loads_into_the_openai_types(
    name, environment, capsys, monkeypatch, tmp_path
):
    exported = export(capsys, name, "openai", "--toolsets", "all")
    tools = TypeAdapter(list[ChatCompletionFunctionTool]).validate_python(exported)
    TypeAdapter(list[ChatCompletionFunctionToolParam]).validate_python(exported)
    import anyio

    listing = anyio.run(listed, name, monkeypatch, tmp_path)
    assert [tool.function.name for tool in tools] == list(listing)
    for item in exported:
        function = item["function"]
        assert function["strict"] is True, function["name"]
        # The same schema the OpenAI Agents SDK's own strict conversion makes of the listed one.
        expected = ensure_strict_json_schema(copy.deepcopy(listing[function["name"]].input_schema))
        assert function["parameters"] == expected, function["name"]
        assert function["description"] == listing[function["name"]].description


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_anthropic_export_is_the_listing_and_loads_into_the_anthropic_types(
    name, environment, capsys, monkeypatch, tmp_path
):
    exported = export(capsys, name, "anthropic", "--toolsets", "all")
    TypeAdapter(list[ToolParam]).validate_python(exported)
    import anyio

    listing = anyio.run(listed, name, monkeypatch, tmp_path)
    assert {item["name"]: item["input_schema"] for item in exported} == {
        tool.name: tool.input_schema for tool in listing.values()
    }


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_gemini_export_loads_into_google_genai_and_matches_its_own_conversion(
    name, environment, capsys, monkeypatch, tmp_path
):
    logging.getLogger("google_genai").setLevel(logging.ERROR)
    exported = export(capsys, name, "gemini", "--toolsets", "all")
    tool = types.Tool(function_declarations=exported)  # the classic form: parameters as types.Schema
    import anyio

    listing = anyio.run(listed, name, monkeypatch, tmp_path)
    assert [d.name for d in tool.function_declarations] == list(listing)
    for declaration in tool.function_declarations:
        # google-genai's own JSON Schema conversion (its MCP support) gives the same schema.
        theirs = types.Schema.from_json_schema(
            json_schema=types.JSONSchema(**listing[declaration.name].input_schema)
        )
        ours = declaration.parameters
        assert ours.model_dump(exclude_none=True) == theirs.model_dump(exclude_none=True), declaration.name


def names(exported: list[dict]) -> set[str]:
    return {item.get("name") or item["function"]["name"] for item in exported}


def test_the_selection_and_server_flags_are_honoured(environment, capsys):
    default = names(export(capsys, "sqlite", "openai"))
    assert "execute" not in default and "query" in default
    assert "execute" in names(export(capsys, "sqlite", "anthropic", "--allow-write"))
    assert names(export(capsys, "sqlite", "gemini", "--tools", "execute")) == default | {"execute"}
    assert names(export(capsys, "sqlite", "openai", "--exclude-tools", "query")) == default - {"query"}
    read_only = names(export(capsys, "git", "anthropic", "--toolsets", "all", "--read-only"))
    assert "git_status" in read_only and not read_only & {"git_commit", "git_push", "git_add"}


def test_mistakes_are_refused_with_what_to_do(environment, capsys):
    assert main(["tools", "nosuch"]) == 2
    assert "no server named 'nosuch'" in capsys.readouterr().err
    assert main(["tools", "sqlite", "--toolsets", "reed"]) == 2
    err = capsys.readouterr().err
    assert "Unknown toolset 'reed'" in err and "Valid toolsets" in err
    with pytest.raises(SystemExit):
        main(["tools", "sqlite", "--format", "mistral"])
    assert "invalid choice" in capsys.readouterr().err


@pytest.mark.slow
def test_the_console_script_prints_only_the_json_array(tmp_path):
    done = subprocess.run(
        [str(VENV_BIN / "dockyard"), "tools", "name-origin", "--format", "anthropic"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": str(VENV_BIN), "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path)},
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert [tool["name"] for tool in json.loads(done.stdout)] == ["batch_predict"]


def test_a_schema_strict_mode_cannot_express_is_exported_as_listed_and_not_strict():
    from dockyard_shared.export import NotStrict

    with pytest.raises(NotStrict):
        strict_schema({"type": "object", "properties": {"document": {"type": "object"}}})
    with pytest.raises(NotStrict):
        strict_schema(
            {"type": "object", "properties": {"d": {"type": "object", "additionalProperties": True}}}
        )
    assert (
        strict_schema({"type": "object", "properties": {}, "additionalProperties": False})["required"] == []
    )
    assert gemini_schema({"anyOf": [{"type": "string", "description": "D."}, {"type": "null"}]}) == {
        "type": "string",
        "description": "D.",
        "nullable": True,
    }
