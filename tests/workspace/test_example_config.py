"""mcp.example.json works as a host would use it: every entry launched exactly as written."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.harness import REPO_ROOT

PLACEHOLDER = "/ABSOLUTE/PATH/TO/dockyard"
EXAMPLE = json.loads((REPO_ROOT / "mcp.example.json").read_text())["mcpServers"]
SERVER_FOLDERS = sorted(p.parent.parent.parent.name for p in REPO_ROOT.glob("servers/*/src/*/__main__.py"))


def substitute(value: str) -> str:
    return value.replace(PLACEHOLDER, str(REPO_ROOT))


def test_there_is_one_entry_per_server_and_each_uses_the_placeholder_path():
    assert sorted(EXAMPLE) == [f"dockyard-{name}" for name in SERVER_FOLDERS]
    for entry in EXAMPLE.values():
        assert entry["command"] == "uvx"
        assert any(PLACEHOLDER in arg for arg in entry["args"])


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(EXAMPLE))
async def test_each_entry_launches_as_written_and_lists_its_tools(name, tmp_path):
    entry = EXAMPLE[name]
    # uvx ships beside uv: beside the real binary when uv is reached through a link (.ci/run's).
    uvx = shutil.which("uvx") or str(Path(shutil.which("uv") or "uv").resolve().with_name("uvx"))
    # The user's environment as a host started from their session has it (uvx needs its proxy and CA
    # settings to reach the registry), minus this test run's virtual environment.
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH"}}
    env |= {"XDG_DATA_HOME": str(tmp_path / "data")}
    env |= {k: substitute(v) for k, v in entry.get("env", {}).items()}
    params = StdioServerParameters(command=uvx, args=[substitute(a) for a in entry["args"]], env=env)
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, read_timeout_seconds=300) as session,
    ):
        await session.initialize()
        tools = (await session.list_tools()).tools
    assert tools, f"{name} listed no tools"
