"""Every server fits a host's context budget: what it lists is paid on every turn, what it returns at once.

One popular host cuts a tool description at 2,048 characters and refuses a result over 25,000 tokens
(about 100,000 characters at 4 characters a token). Descriptions keep their Use when / Not for / Returns /
Limits sections and stay dense: description plus input schema (compact JSON, as it travels) at most 800
characters per tool on average, with every toolset on. Results are bounded by each server's limits; the
fuzz tests (tests/interop) check every reply against the same 100,000-character ceiling.
"""

from __future__ import annotations

import json

import pytest

from dockyard_shared.cli import discover_servers
from tests.harness import open_session
from tests.interop.fuzzing import MAX_REPLY_CHARS

HOST_DESCRIPTION_LIMIT = 2_048
MEAN_TOOL_CHARS = 800
SERVERS = discover_servers()


def widest(name: str, monkeypatch, tmp_path):
    """The server with every toolset on (a dummy GitHub token lists the github toolset; it is never sent)."""
    monkeypatch.setenv("GITHUB_TOKEN", "context-budget-test")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    entry = SERVERS[name]
    return entry.build(entry.parser(with_runner=False).parse_args(["--toolsets", "all"]))


# Arguments that carry a whole document the model copies from another tool's reply: their schema is the
# document's data shape, spelled out so strict function calling (OpenAI) and Gemini can express it, not
# prose a denser wording could shorten. The mean counts them by their description; the shape has a ceiling
# of its own.
DOCUMENTS = {("tasks", "import_project"): "document"}
DOCUMENT_SCHEMA_CHARS = 4_000


def compact(schema) -> str:
    return json.dumps(schema, separators=(",", ":"))


def tool_chars(tool, server: str = "") -> int:
    schema = tool.input_schema
    document = DOCUMENTS.get((server, tool.name))
    if document:
        shape = schema["properties"][document]
        assert len(compact(shape)) <= DOCUMENT_SCHEMA_CHARS, f"{tool.name}.{document}: {len(compact(shape))}"
        described = {"description": shape.get("description", "")}
        schema = {**schema, "properties": {**schema["properties"], document: described}}
    return len(tool.description or "") + len(compact(schema))


@pytest.mark.parametrize("name", sorted(SERVERS))
async def test_no_description_is_cut_by_a_host_and_the_mean_tool_is_dense(name, monkeypatch, tmp_path):
    async with open_session(widest(name, monkeypatch, tmp_path)) as session:
        tools = await session.list_tools()
    too_long = {
        t.name: len(t.description or "") for t in tools if len(t.description or "") > HOST_DESCRIPTION_LIMIT
    }
    assert not too_long, f"descriptions over {HOST_DESCRIPTION_LIMIT:,} characters: {too_long}"
    sizes = {t.name: tool_chars(t, name) for t in tools}
    mean = sum(sizes.values()) / len(sizes)
    assert mean <= MEAN_TOOL_CHARS, (
        f"{name}: {mean:.0f} characters per tool on average; largest: "
        + ", ".join(f"{tool} {size}" for tool, size in sorted(sizes.items(), key=lambda item: -item[1])[:5])
    )


def test_the_reply_ceiling_the_fuzz_tests_check_is_the_hosts_25000_tokens():
    assert MAX_REPLY_CHARS == 25_000 * 4
