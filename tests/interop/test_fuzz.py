"""Fuzz every read-only tool of every server from its own input schema, plus hostile strings.

Arguments are drawn by Hypothesis from a strategy built from the tool's ``inputSchema``; strings are mixed
with hostile values (huge, control characters, lone surrogates, path and SQL metacharacters, option-like
text). Whatever comes in, the server answers with a result or an error result written for the model —
never a protocol failure, a traceback or a hang — and still answers afterwards.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.errors import NonInteractiveExampleWarning

from dockyard_shared.cli import discover_servers
from tests.harness import ERAS, open_session
from tests.shared.toy_server import entry as toy_entry

HOSTILE = [
    "",
    " ",
    "A" * 100_000,
    "\x00",
    "\x1b[31m",
    "\r\n",
    "\ud800",
    "😀" * 500,
    "../../../../etc/passwd",
    "/etc/shadow",
    "--output=/tmp/dockyard-fuzz",
    "-rf",
    "$(touch /tmp/dockyard-fuzz)",
    "`id`",
    "'; DROP TABLE customers; --",
    '" OR 1=1 --',
    "%s%n%x",
    ":(top)",
    "HEAD@{-1}",
    "..",
    "~",
    "*",
    "[",
    "\\",
    "NULL",
    "1e309",
    "\u202e",
]
EXAMPLES_PER_TOOL = 30
MARKER = Path("/tmp/dockyard-fuzz")


def strategy(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy:
    if "$ref" in schema:
        return strategy(defs[schema["$ref"].split("/")[-1]], defs)
    if "anyOf" in schema or "oneOf" in schema:
        return st.one_of([strategy(s, defs) for s in schema.get("anyOf", schema.get("oneOf"))])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([strategy({**schema, "type": k}, defs) for k in kind])
    if kind == "string":
        return st.one_of(st.text(max_size=40), st.sampled_from(HOSTILE))
    if kind == "integer":
        low = schema.get("minimum", schema.get("exclusiveMinimum", -(10**12)))
        return st.one_of(st.integers(min_value=low, max_value=low + 50), st.integers(-(10**12), 10**12))
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(strategy(schema.get("items", {"type": "string"}), defs), max_size=3)
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        required = set(schema.get("required", []))
        return st.fixed_dictionaries(
            {k: strategy(v, defs) for k, v in properties.items() if k in required},
            optional={k: strategy(v, defs) for k, v in properties.items() if k not in required},
        )
    return st.one_of(st.none(), st.integers(), st.text(max_size=10))


def servers() -> dict[str, Any]:
    entries = {"toy": toy_entry, **discover_servers()}
    return entries


@pytest.mark.timeout(600)
@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("name", sorted(servers()))
async def test_fuzzed_arguments_always_get_a_valid_answer(name, era, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    MARKER.unlink(missing_ok=True)
    server = servers()[name].default_server()
    async with open_session(server, era=era, timeout=60) as session:
        tools = [
            t for t in await session.list_tools() if t.annotations is None or t.annotations.read_only_hint
        ]
        for tool in tools:
            schema = tool.input_schema
            arguments_strategy = strategy(schema, schema.get("$defs", {}))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", NonInteractiveExampleWarning)
                examples = [arguments_strategy.example() for _ in range(EXAMPLES_PER_TOOL)]
            for arguments in examples:
                outcome = await session.call(tool.name, arguments)
                if outcome.is_error:
                    assert outcome.text.startswith(("Error (", "Unknown tool")), (
                        tool.name,
                        arguments,
                        outcome.text[:300],
                    )
                    assert "Traceback" not in outcome.text
                else:
                    json.dumps(outcome.structured)  # a real, serialisable result
            assert await session.ping()
    assert not MARKER.exists()
