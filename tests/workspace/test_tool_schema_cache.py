"""Every server's tools are the same whether FastMCP built their schemas or the tool-schema cache held them
(dockyard_shared.tool_schemas), and a server's second start builds none."""

from __future__ import annotations

import inspect
import re

import pytest
from fastmcp.tools.function_tool import FunctionTool

from dockyard_shared.tool_schemas import OFF_SWITCH
from tests.harness import open_session
from tests.workspace.test_context_budget import SERVERS, widest


def comparable(tool) -> dict:
    """Everything a tool holds; its function by what FastMCP reads of it (name, signature as transformed)."""
    fields = tool.model_dump(exclude={"fn"})
    signature = re.sub(r" at 0x[0-9a-f]+", "", str(inspect.signature(tool.fn)))  # CurrentContext() defaults
    fields["fn"] = (tool.fn.__module__, tool.fn.__qualname__, signature)
    fields["return_type"] = repr(tool.return_type)  # what results are serialized by (not dumped)
    return fields


@pytest.fixture
def builds(monkeypatch):
    """How many tools FastMCP's own from_function built (observed, not changed)."""
    counted = {"n": 0}
    original = FunctionTool.from_function.__func__

    def counting(cls, *args, **kwargs):
        counted["n"] += 1
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(FunctionTool, "from_function", classmethod(counting))
    return counted


@pytest.mark.parametrize("name", sorted(SERVERS))
async def test_tools_from_the_cache_are_the_tools_fastmcp_builds(name, monkeypatch, tmp_path, builds, era):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(OFF_SWITCH, "off")
    built = widest(name, monkeypatch, tmp_path)  # by FastMCP's own server.tool, as without the cache
    assert not (tmp_path / "cache").exists(), "the switch off, nothing is written"
    monkeypatch.delenv(OFF_SWITCH)
    first = widest(name, monkeypatch, tmp_path)  # writes the cache
    written = list((tmp_path / "cache" / "dockyard" / "tool-schemas").glob(f"dockyard-{name}-*.json"))
    assert len(written) == 1
    builds["n"] = 0
    cached = widest(name, monkeypatch, tmp_path)
    assert builds["n"] == 0, "a second start found every tool in the cache"

    expected = {tool.name: comparable(tool) for tool in await built.list_tools(run_middleware=False)}
    for server in (first, cached):
        assert {
            tool.name: comparable(tool) for tool in await server.list_tools(run_middleware=False)
        } == expected
    async with open_session(built, era=era) as session:
        listed_built = await session.list_tools()
    async with open_session(cached, era=era) as session:
        listed_cached = await session.list_tools()
    assert [t.model_dump() for t in listed_cached] == [t.model_dump() for t in listed_built]
