"""The `dockyard` command: list, config and serve, as a user runs them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest

from dockyard_shared.cli import discover_servers, host_config, workspace_root
from tests.harness import ERAS, REPO_ROOT, Launch, http_server, open_session

INSTALLED = discover_servers()


def dockyard(*args: str) -> subprocess.CompletedProcess[str]:
    command = Launch("dockyard", args).command()
    return subprocess.run(
        command, capture_output=True, text=True, timeout=120, cwd=REPO_ROOT, stdin=subprocess.DEVNULL
    )


def test_the_workspace_root_is_this_checkout():
    assert workspace_root() == REPO_ROOT


def test_every_server_folder_is_installed_and_discovered():
    folders = {p.parent.parent.parent.name for p in REPO_ROOT.glob("servers/*/src/*/__main__.py")}
    assert folders == set(INSTALLED)


def test_list_names_every_installed_server():
    result = dockyard("list")
    assert result.returncode == 0, result.stderr
    for name in INSTALLED:
        assert f"dockyard-{name}" in result.stdout


@pytest.mark.parametrize("host", ["claude-desktop", "cursor", "vscode"])
def test_config_prints_a_config_with_absolute_paths_to_this_checkout(host):
    result = dockyard("config", host)
    assert result.returncode == 0, result.stderr
    config = json.loads(result.stdout)
    entries = config["servers" if host == "vscode" else "mcpServers"]
    assert set(entries) == {f"dockyard-{name}" for name in INSTALLED}
    for name, item in entries.items():
        assert item["command"] == "uvx"
        source = Path(item["args"][1])
        assert source.is_absolute() and source == REPO_ROOT / "servers" / name.removeprefix("dockyard-")
        assert item["args"][2] == name
        if host == "vscode":
            assert item["type"] == "stdio"


def test_the_run_form_points_uv_at_the_checkout():
    config = host_config("cursor", INSTALLED, REPO_ROOT, form="run")
    for name, item in config["mcpServers"].items():
        assert item["command"] == "uv"
        assert item["args"][:4] == ["run", "--directory", str(REPO_ROOT), name]


def test_serving_an_unknown_server_fails_with_the_list_of_installed_ones():
    result = dockyard("serve", "nope")
    assert result.returncode == 2
    assert "no server named 'nope'" in result.stderr


def test_serve_all_refuses_stdio():
    if not INSTALLED:
        pytest.skip("no Dockyard server is installed yet")
    result = dockyard("serve", "all", "--transport", "stdio")
    assert result.returncode == 2 and "only over HTTP" in result.stderr


@pytest.mark.slow
@pytest.mark.skipif(not INSTALLED, reason="no Dockyard server is installed yet")
async def test_serve_all_serves_every_server_at_its_own_path(log_dir, tmp_path):
    launch = Launch("dockyard", ("serve", "all"), env={"XDG_DATA_HOME": str(tmp_path)}, cwd=str(REPO_ROOT))
    with http_server(launch, log_dir=log_dir) as server:
        assert httpx.get(server.url("/health")).json() == {"status": "ok", "servers": sorted(INSTALLED)}
        for name in INSTALLED:
            for era in ERAS:
                async with open_session(server.url(f"/{name}/mcp"), era=era) as session:
                    tools = await session.list_tools()
                    assert tools, f"{name} lists no tools"
                    assert all(tool.name for tool in tools)
