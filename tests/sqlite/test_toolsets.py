"""dockyard-sqlite's toolsets (read; write, off by default) under the common selection flags, built from the
command line as `dockyard-sqlite` builds them: a tool left out does not exist, and writer connections are
opened only where execute is served."""

from __future__ import annotations

import pytest

from dockyard_shared import InvalidArgument
from dockyard_shared.toolsets import toolset_lines
from dockyard_sqlite.__main__ import entry
from tests.harness import open_session
from tests.sqlite.helpers import file_digest

READ_TOOLS = {"list_tables", "describe_table", "query", "explain_query"}
# The other read-only toolsets, on by default too: search and across.
DEFAULT_TOOLS = READ_TOOLS | {"search_schema", "query_across"}
ALL_TOOLS = DEFAULT_TOOLS | {"execute", "export_csv", "import_csv"}


def from_command_line(db, *argv: str):
    return entry.build(entry.parser(with_runner=False).parse_args(["--db", str(db), *argv]))


async def served(server, era) -> set[str]:
    async with open_session(server, era=era) as session:
        return await session.tool_names()


def test_the_toolsets_are_declared_for_dockyard_list():
    assert [t.name for t in entry.toolsets] == ["read", "write", "search", "across", "export", "import"]
    read, write, search, across, export, imports = toolset_lines(entry.toolsets)
    assert read.startswith("read (read-only): list_tables, describe_table, query, explain_query")
    assert write.startswith("write (writes, off by default): execute")
    assert search.startswith("search (read-only): search_schema")
    assert across.startswith("across (read-only): query_across")
    assert export.startswith("export (writes, off by default): export_csv")
    assert imports.startswith("import (writes, off by default): import_csv")


async def test_by_default_only_the_read_only_toolsets_are_served(people, era):
    async with open_session(from_command_line(people), era=era) as session:
        assert await session.tool_names() == DEFAULT_TOOLS
        assert "--allow-write" in await session.call_error("execute", {"sql": "DELETE FROM pets"})


async def test_allow_write_and_toolsets_write_both_serve_execute(people, era):
    assert await served(from_command_line(people, "--allow-write"), era) == DEFAULT_TOOLS | {"execute"}
    assert await served(from_command_line(people, "--toolsets", "all"), era) == ALL_TOOLS
    async with open_session(from_command_line(people, "--toolsets", "write"), era=era) as session:
        assert await session.tool_names() == {"execute"}
        await session.call_ok("execute", {"sql": "INSERT INTO pets(kind) VALUES ('owl')"})


async def test_read_only_wins_over_allow_write_and_keeps_the_file_closed_to_writes(people, era):
    before = file_digest(people)
    server = from_command_line(people, "--allow-write", "--tools", "execute", "--read-only")
    async with open_session(server, era=era) as session:
        assert await session.tool_names() == DEFAULT_TOOLS
        assert "--read-only" in await session.call_error("execute", {"sql": "DELETE FROM pets"})
        refused = await session.call_error("query", {"sql": "DELETE FROM pets"})
    assert "not allowed on this read-only connection" in refused and file_digest(people) == before


async def test_exclude_tools_removes_a_tool_and_tools_adds_one(people, era):
    server = from_command_line(people, "--exclude-tools", "explain_query", "--tools", "execute")
    async with open_session(server, era=era) as session:
        assert await session.tool_names() == DEFAULT_TOOLS - {"explain_query"} | {"execute"}
        assert "--exclude-tools" in await session.call_error("explain_query", {"sql": "SELECT 1"})


@pytest.mark.parametrize(
    ("flags", "valid"),
    [
        (("--toolsets", "writes"), "Valid toolsets: across, export, import, read, search, write"),
        (
            ("--tools", "run_sql"),
            "Valid tools: describe_table, execute, explain_query, export_csv, import_csv, list_tables, query, "
            "query_across, search_schema",
        ),
    ],
)
def test_an_unknown_toolset_or_tool_stops_start_up_with_the_valid_names(people, flags, valid):
    with pytest.raises(InvalidArgument) as refused:
        from_command_line(people, *flags)
    assert valid in refused.value.next_step


async def test_export_dir_serves_export_csv_and_read_only_drops_it(people, tmp_path, era):
    assert "export_csv" in await served(from_command_line(people, "--export-dir", str(tmp_path)), era)
    server = from_command_line(people, "--export-dir", str(tmp_path), "--read-only")
    assert await served(server, era) == DEFAULT_TOOLS


async def test_allow_write_with_import_dir_serves_import_csv_and_opens_writers(people, tmp_path, era):
    (tmp_path / "a.csv").write_text("x\n1\n")
    server = from_command_line(
        people, "--allow-write", "--import-dir", str(tmp_path), "--exclude-tools", "execute"
    )
    async with open_session(server, era=era) as session:
        assert await session.tool_names() == DEFAULT_TOOLS | {"import_csv"}
        await session.call_ok("import_csv", {"file": "a.csv", "table": "a"})
