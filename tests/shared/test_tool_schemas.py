"""The tool-schema cache (dockyard_shared.tool_schemas): an entry is found only by the code that built it,
and a cache that cannot be used never stops a server.

The tools live in a package written under ``tmp_path``, so a test can edit its source as a developer would.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import textwrap

import pytest
from fastmcp.tools.function_tool import FunctionTool

from dockyard_shared.annotations import READ_ONLY
from dockyard_shared.server import new_server
from dockyard_shared.tool_schemas import OFF_SWITCH, ToolSchemas
from tests.harness import open_session

TOOLS = """
    from __future__ import annotations

    import os
    from typing import Annotated

    from pydantic import BaseModel, Field

    LIMIT = int(os.environ.get("CACHEDTOOLS_LIMIT", "10"))  # a setting, read when the module is imported


    class Result(BaseModel):
        total: int
        {extra}


    def add(a: int, b: Annotated[int, Field(le=LIMIT)] = 1) -> Result:
        return Result(total=a + b)


    def negate(a: int) -> Result:
        return Result(total=-a)
"""


@pytest.fixture
def package(tmp_path, monkeypatch):
    """``write(extra=...)`` (re)writes ``cachedtools.tools`` and returns the freshly imported module; with
    ``edit=False`` the module is imported again as it is."""
    root = tmp_path / "src"
    (root / "cachedtools").mkdir(parents=True)
    (root / "cachedtools" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(root))
    edits = iter(range(1, 1000))

    def write(extra: str = "", edit: bool = True):
        source = root / "cachedtools" / "tools.py"
        if edit:
            source.write_text(textwrap.dedent(TOOLS.format(extra=extra)))
            # As an editor's save would: a new modification time, even within the clock's resolution.
            stamp = 1_700_000_000 + next(edits)
            os.utime(source, (stamp, stamp))
        for name in [n for n in sys.modules if n.startswith("cachedtools")]:
            del sys.modules[name]
        return importlib.import_module("cachedtools.tools")

    yield write
    for name in [n for n in sys.modules if n.startswith("cachedtools")]:
        del sys.modules[name]


def made(folder, fn, **options):
    schemas = ToolSchemas("dockyard-test", folder)
    tool = schemas.tool(fn, {"annotations": READ_ONLY, **options})
    schemas.save()
    return tool


def built_by_fastmcp(fn, **options):
    return FunctionTool.from_function(fn, task=False, annotations=READ_ONLY, **options)


def files(folder):
    return sorted(folder.glob("dockyard-test-*.json")) if folder.exists() else []


def test_a_tool_is_made_from_the_cache_as_fastmcp_makes_it(package, tmp_path):
    tools = package()
    first = made(tmp_path / "cache", tools.add)
    (written,) = files(tmp_path / "cache")
    assert "add" in written.read_text()
    again = made(tmp_path / "cache", tools.add)
    expected = built_by_fastmcp(tools.add)
    for tool in (first, again):
        assert tool.model_dump(exclude={"fn"}) == expected.model_dump(exclude={"fn"})
        assert tool.return_type is tools.Result
    assert again.output_schema["properties"] == {"total": {"type": "integer"}}


def test_an_edited_model_is_not_answered_from_the_cache(package, tmp_path):
    made(tmp_path / "cache", package().add)
    edited = package(extra="note: str = ''")
    tool = made(tmp_path / "cache", edited.add)
    assert set(tool.output_schema["properties"]) == {"total", "note"}
    assert tool.output_schema == built_by_fastmcp(edited.add).output_schema


def entries(folder) -> int:
    (written,) = files(folder)
    return len(json.loads(written.read_text())["tools"])


def test_entries_built_from_sources_since_edited_are_dropped_and_the_others_kept(package, tmp_path):
    folder = tmp_path / "cache"
    tools = package()
    made(folder, tools.add)
    made(folder, tools.negate)  # another start serving another tool (another --toolsets): both kept
    assert entries(folder) == 2
    made(folder, package(extra="note: str = ''").add)  # the package edited since
    assert entries(folder) == 1, "a developer's edits do not pile up in the file"


def test_a_constraint_from_a_setting_is_part_of_the_key(package, tmp_path, monkeypatch):
    """The same source and signature text, a different limit read at import: a different schema."""
    assert made(tmp_path / "cache", package().add).parameters["properties"]["b"]["maximum"] == 10
    monkeypatch.setenv("CACHEDTOOLS_LIMIT", "99")
    tool = made(tmp_path / "cache", package(edit=False).add)
    assert tool.parameters["properties"]["b"]["maximum"] == 99
    monkeypatch.delenv("CACHEDTOOLS_LIMIT")
    assert made(tmp_path / "cache", package(edit=False).add).parameters["properties"]["b"]["maximum"] == 10


def test_registration_options_are_part_of_the_key(package, tmp_path):
    tools = package()
    made(tmp_path / "cache", tools.add, description="first words")
    tool = made(tmp_path / "cache", tools.add, description="second words", name="plus")
    assert (tool.name, tool.description) == ("plus", "second words")


def test_an_unreadable_cache_is_rebuilt(package, tmp_path):
    tools = package()
    made(tmp_path / "cache", tools.add)
    (written,) = files(tmp_path / "cache")
    written.write_text('{"format": 1, "tools": {"', encoding="utf-8")
    tool = made(tmp_path / "cache", tools.add)
    assert tool.parameters == built_by_fastmcp(tools.add).parameters
    assert json.loads(written.read_text())["tools"], "rewritten whole"


def test_an_entry_of_the_wrong_shape_is_rebuilt(package, tmp_path):
    tools = package()
    made(tmp_path / "cache", tools.add)
    (written,) = files(tmp_path / "cache")
    stored = json.loads(written.read_text())
    for entry in stored["tools"].values():
        entry["parameters"] = "not a schema"
        del entry["description"]
    written.write_text(json.dumps(stored))
    tool = made(tmp_path / "cache", tools.add)
    assert tool.parameters == built_by_fastmcp(tools.add).parameters


def unresolvable(a: NoSuchType) -> int:  # noqa: F821 - a hint that does not resolve, on purpose
    return 0


def test_a_tool_the_cache_does_not_serve_is_left_to_fastmcp(package, tmp_path):
    """Options it does not mirror, or hints that do not resolve: the registrar then calls server.tool."""
    schemas = ToolSchemas("dockyard-test", tmp_path / "cache")
    assert schemas.tool(package().add, {"version": "2"}) is None
    assert schemas.tool(unresolvable, {}) is None
    schemas.save()
    assert files(tmp_path / "cache") == []


def test_a_cache_folder_that_cannot_be_written_only_costs_the_build(package, tmp_path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would be")
    tool = made(blocked / "tool-schemas", package().add)
    assert tool.parameters == built_by_fastmcp(package().add).parameters


def test_the_off_switch_leaves_registration_to_fastmcp(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv(OFF_SWITCH, "off")
    assert ToolSchemas.for_server("dockyard-test") is None
    monkeypatch.setenv(OFF_SWITCH, "on")
    assert ToolSchemas.for_server("dockyard-test") is not None


def test_each_environment_keeps_its_own_file_and_an_upgrade_replaces_it(package, tmp_path, monkeypatch):
    tools = package()
    folder = tmp_path / "cache"
    made(folder, tools.add)
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "another-venv"))
    made(folder, tools.add)
    assert len(files(folder)) == 2, "two environments (a uvx one and a checkout) do not evict each other"
    mine = max(files(folder), key=lambda path: path.stat().st_mtime_ns)
    environment = mine.name.split("-")[2]
    left_by_an_upgrade = folder / f"dockyard-test-{environment}-0123456789abcdef.json"
    left_by_an_upgrade.write_text(mine.read_text())
    made(folder, package(extra="more: int = 0").add)  # a new entry: the file is written again
    assert not left_by_an_upgrade.exists()
    assert len(files(folder)) == 2


async def test_a_cached_tool_is_called_through_the_protocol(package, tmp_path, era):
    tools = package()
    made(tmp_path / "cache", tools.add)
    server = new_server("dockyard-test", instructions="test")
    server.add_tool(made(tmp_path / "cache", tools.add))
    async with open_session(server, era=era) as session:
        (listed,) = await session.list_tools()
        assert listed.input_schema["properties"]["b"]["maximum"] == 10
        result = await session.call_ok("add", {"a": 2, "b": 3})
        refused = await session.call_error("add", {"a": 2, "b": 11})
    assert result.structured == {"total": 5}
    assert "less than or equal to 10" in refused
