"""Third-party clients list and call every server's tools over stdio: the TypeScript SDK and the MCP Inspector CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness import REPO_ROOT
from tests.interop.conftest import launch_for

pytestmark = pytest.mark.slow

NODE_DIR = Path(__file__).with_name("node")
CALLS = {
    "toy": ("add", {"a": 2, "b": 3}),
    "sqlite": ("list_tables", {}),
    "git": ("git_repositories", {}),
    "name-origin": ("batch_predict", {"names": ["michael"]}),
    "tasks": ("list_projects", {}),
}
INSPECTOR = [
    "npx",
    "-y",
    "-p",
    "node@22",
    "-p",
    "@modelcontextprotocol/inspector@2.12.0",
    "--",
    "mcp-inspector",
    "--cli",
]


@pytest.fixture
def call(server_name):
    return CALLS.get(server_name, ("list_tables", {}))


def test_the_typescript_sdk_client_lists_and_calls_tools(server_name, call, data_dir):
    if not (NODE_DIR / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir() or not shutil.which("node"):
        pytest.skip("the TypeScript SDK is not installed: run tests/interop/prepare.sh (needs node and npm)")
    tool, arguments = call
    launch = launch_for(server_name, data_dir)
    result = subprocess.run(
        ["node", str(NODE_DIR / "client.mjs"), tool, json.dumps(arguments), "--", *launch.command()],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        env=launch.environment(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    output = json.loads(result.stdout)
    assert tool in output["tools"] and not output["result"].get("isError")


def inspector_env(launch) -> list[str]:
    """``-e NAME=VALUE`` for what the server must see: the Inspector starts it with only a default
    environment (PATH, HOME…), so without these it would write into the user's own data and cache folders."""
    names = {*launch.env, "XDG_CACHE_HOME", "XDG_DATA_HOME", "FASTMCP_CHECK_FOR_UPDATES"}
    environment = launch.environment()
    return [
        item
        for name in sorted(names)
        if name in environment
        for item in ("-e", f"{name}={environment[name]}")
    ]


def test_the_inspector_cli_lists_and_calls_tools(server_name, call, data_dir):
    if not shutil.which("npx"):
        pytest.skip("npx is not installed: the MCP Inspector CLI runs through npx")
    tool, arguments = call
    launch = launch_for(server_name, data_dir)
    inspector = [*INSPECTOR, *inspector_env(launch)]
    listed = subprocess.run(
        [*inspector, *launch.command(), "--method", "tools/list"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
        env=launch.environment(),
    )
    assert listed.returncode == 0, listed.stdout[-2000:] + listed.stderr[-2000:]
    assert tool in {t["name"] for t in json.loads(listed.stdout)["tools"]}
    tool_args = [
        item for key, value in arguments.items() for item in ("--tool-arg", f"{key}={json.dumps(value)}")
    ]
    called = subprocess.run(
        [*inspector, *launch.command(), "--method", "tools/call", "--tool-name", tool, *tool_args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
        env=launch.environment(),
    )
    assert called.returncode == 0, called.stdout[-2000:] + called.stderr[-2000:]
    assert not json.loads(called.stdout).get("isError")
