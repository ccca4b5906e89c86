"""The `dockyard` command: list, config and serve, as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest

from dockyard_shared.cli import discover_servers, host_config, workspace_root
from dockyard_shared.runner import AUTH_TOKEN_ENV
from dockyard_shared.toolsets import exposure_from
from tests.harness import ERAS, REPO_ROOT, Launch, free_port, http_server, open_session

INSTALLED = discover_servers()


def dockyard(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    command = Launch("dockyard", args).command()
    # Never the caller's token: a test that expects a refusal must not be served by accident.
    env = {key: value for key, value in os.environ.items() if key != AUTH_TOKEN_ENV}
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        env={**env, "FASTMCP_CHECK_FOR_UPDATES": "off"},
    )


def test_the_workspace_root_is_this_checkout():
    assert workspace_root() == REPO_ROOT


def test_every_server_folder_is_installed_and_discovered():
    folders = {p.parent.parent.parent.name for p in REPO_ROOT.glob("servers/*/src/*/__main__.py")}
    assert folders == set(INSTALLED)


def test_list_shows_each_installed_server_with_its_command_and_summary():
    result = dockyard("list")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    if not INSTALLED:
        assert lines == ["No Dockyard server is installed."]
        return
    # One line per server, in name order: NAME, its console script, then its one-line summary; under it,
    # one indented line per toolset.
    server_lines = [line for line in lines if not line.startswith(" ")]
    assert len(server_lines) == len(INSTALLED), result.stdout
    for line, (name, entry) in zip(server_lines, INSTALLED.items(), strict=True):
        listed_name, script, summary = line.split(maxsplit=2)
        assert (listed_name, script) == (name, f"dockyard-{name}")
        assert entry.summary.strip() and summary == entry.summary.strip()
        below = lines[lines.index(line) + 1 : lines.index(line) + 1 + len(entry.toolsets)]
        for toolset, listed in zip(entry.toolsets, below, strict=True):
            assert listed.startswith(f"    toolset {toolset.name} (") and toolset.summary in listed


def test_config_writes_the_selection_flags_into_each_chosen_servers_arguments():
    result = dockyard(
        "config",
        "cursor",
        "--form",
        "uvx",
        "--server",
        "sqlite",
        "--read-only",
        "--exclude-tools",
        "explain_query",
    )
    assert result.returncode == 0, result.stderr
    servers = json.loads(result.stdout)["mcpServers"]
    assert list(servers) == ["dockyard-sqlite"]
    assert servers["dockyard-sqlite"]["args"][-3:] == ["--exclude-tools", "explain_query", "--read-only"]


def test_config_refuses_an_unknown_server_or_a_toolset_the_server_does_not_have():
    result = dockyard("config", "cursor", "--server", "sqlit")
    assert result.returncode == 2 and "no server named 'sqlit'" in result.stderr
    from tests.shared.toy_server import entry as toy

    with pytest.raises(Exception, match="Unknown toolset 'wrte'"):
        host_config(
            "cursor",
            {"toy": toy},
            REPO_ROOT,
            exposure=exposure_from(toy.parser().parse_args(["--toolsets", "wrte"])),
        )


@pytest.mark.parametrize("host", ["claude-desktop", "cursor", "vscode"])
def test_config_prints_a_config_with_absolute_paths_to_this_checkout(host):
    # The uvx form; the default (installed) form is tested in test_install.py.
    result = dockyard("config", host, "--form", "uvx")
    assert result.returncode == 0, result.stderr
    config = json.loads(result.stdout)
    entries = config["servers" if host == "vscode" else "mcpServers"]
    assert set(entries) == {f"dockyard-{name}" for name in INSTALLED}
    for name, item in entries.items():
        assert item["command"] == "uvx"
        assert item["args"][:2] == ["--compile-bytecode", "--from"]  # compiled once, not at every start
        source = Path(item["args"][2])
        assert source.is_absolute() and source == REPO_ROOT / "servers" / name.removeprefix("dockyard-")
        assert item["args"][3] == name
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
        health = httpx.get(server.url("/health")).json()
        assert (health["status"], health["servers"]) == ("ok", sorted(INSTALLED))
        assert set(health["checks"]) == set(INSTALLED)  # each server's dependencies, all up
        for name in INSTALLED:
            for era in ERAS:
                async with open_session(server.url(f"/{name}/mcp"), era=era) as session:
                    tools = await session.list_tools()
                    assert tools, f"{name} lists no tools"
                    assert all(tool.name for tool in tools)
                    if name == "tasks":  # a working tracker: the sample project, on a demo file of its own
                        projects = (await session.call_ok("list_projects")).data["projects"]
                        assert [p["key"] for p in projects] == ["TASK"]
    assert (tmp_path / "dockyard" / "tasks" / "demo.db").exists()
    assert not (tmp_path / "dockyard" / "tasks" / "tasks.db").exists()


@pytest.mark.parametrize("target", ["all", *list(INSTALLED)[:1]])
def test_serving_beyond_loopback_without_a_token_refuses_to_start(target):
    if not INSTALLED:
        pytest.skip("no Dockyard server is installed yet")
    # A free port, so that if the refusal ever regressed nothing else would be hit; the timeout ends
    # such a server rather than leaving it listening on every interface.
    port = str(free_port())
    result = dockyard("serve", target, "--transport", "http", "--host", "0.0.0.0", "--port", port, timeout=30)
    assert result.returncode == 2, result.stderr
    assert "Refusing to serve on 0.0.0.0" in result.stderr
    assert AUTH_TOKEN_ENV in result.stderr
    assert "Traceback" not in result.stderr


def _no_argument_read_only_tools(tools) -> list[str]:
    return [
        tool.name
        for tool in tools
        if tool.annotations is not None
        and tool.annotations.read_only_hint
        and tool.annotations.open_world_hint is False
        and not tool.input_schema.get("required")
    ]


@pytest.mark.slow
@pytest.mark.skipif(not INSTALLED, reason="no Dockyard server is installed yet")
@pytest.mark.parametrize("name", list(INSTALLED))
async def test_serve_name_over_http_answers_mcp_calls_on_loopback(name, log_dir, tmp_path):
    launch = Launch("dockyard", ("serve", name), env={"XDG_DATA_HOME": str(tmp_path)}, cwd=str(REPO_ROOT))
    with http_server(launch, log_dir=log_dir) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        health = httpx.get(server.url("/health")).json()
        assert (health["status"], health["servers"], list(health["checks"])) == ("ok", [name], [name])
        assert f"serving {name} on {server.url()}" in server.log()
        for era in ERAS:
            # As hosts do, the client shares its workspace as an MCP root (git serves it; others ignore it).
            async with open_session(server.url(), era=era, roots=[REPO_ROOT.as_uri()]) as session:
                tools = await session.list_tools()
                cheap = _no_argument_read_only_tools(tools)
                if not cheap:  # name-origin's default tool asks nationalize.io: read a local resource instead
                    resources = await session.list_resources()
                    assert resources, f"{name} has neither a local no-argument tool nor a resource"
                    assert await session.read_resource(str(resources[0].uri)), f"{name} over HTTP ({era})"
                    continue
                outcome = await session.call(cheap[0])
                assert not outcome.is_error, f"{name}.{cheap[0]} over HTTP ({era}): {outcome.text}"
