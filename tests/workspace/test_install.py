"""`dockyard install` and the config it enables: servers a host starts by absolute path, with no network.

"No network" is real where the machine allows it: the server runs in a network namespace of its own
(`unshare -rn`: no interface but a loopback that is down). Elsewhere it runs with uv told to stay offline
and every proxy variable pointing at a closed port, so any attempt to fetch fails rather than succeeds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from dockyard_shared.cli import discover_servers
from tests.harness import ERAS, REPO_ROOT, Launch, open_session

INSTALLED = discover_servers()
DEAD_PROXY = "http://127.0.0.1:9"


def _can_unshare() -> bool:
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    return subprocess.run([unshare, "-rn", "true"], capture_output=True, check=False).returncode == 0


UNSHARE = _can_unshare()


def tool_env(tmp: Path) -> dict[str, str]:
    """uv's tool folders under the test's tmp folder, never the user's."""
    return {"UV_TOOL_DIR": str(tmp / "tools"), "UV_TOOL_BIN_DIR": str(tmp / "bin")}


def dockyard(*args: str, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    command = Launch("dockyard", args).command()
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "FASTMCP_CHECK_FOR_UPDATES": "off", **env},
    )


def offline_launch(command: str, args: list[str], data: Path) -> Launch:
    """``command args`` as a host would start it, with no network to reach."""
    env = {
        "UV_OFFLINE": "1",
        "UV_NO_CONFIG": "1",
        "XDG_DATA_HOME": str(data),
        **{
            name: DEAD_PROXY
            for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy")
        },
        "NO_PROXY": "",
        "no_proxy": "",
    }
    if UNSHARE:
        return Launch(shutil.which("unshare") or "unshare", ("-rn", command, *args), env=env, cwd=str(data))
    return Launch(command, tuple(args), env=env, cwd=str(data))


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """Every server installed once (module-wide: ~10 s each) into a tmp tool folder; its bin folder."""
    tmp = tmp_path_factory.mktemp("uv-tools")
    result = dockyard("install", env=tool_env(tmp))
    assert result.returncode == 0, result.stderr
    paths = [Path(line) for line in result.stdout.splitlines()]
    assert paths == [tmp / "bin" / f"dockyard-{name}" for name in INSTALLED]
    return tmp


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_the_config_written_after_install_starts_every_server_with_no_network(installed, tmp_path):
    repo = tmp_path / "repos" / "project"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    result = dockyard(
        "config", "claude-desktop", "--root", str(repo), "--db", "app=app.db", env=tool_env(installed)
    )
    assert result.returncode == 0, result.stderr
    entries = json.loads(result.stdout)["mcpServers"]
    assert sorted(entries) == [f"dockyard-{name}" for name in INSTALLED]
    for name, entry in entries.items():
        command = Path(entry["command"])
        # An absolute executable, never a bare `uvx` a GUI host's short PATH would not find.
        assert command.is_absolute() and command == installed / "bin" / name and command.exists()
    assert entries["dockyard-git"]["args"] == ["--root", str(repo)]
    assert entries["dockyard-sqlite"]["args"] == ["--db", f"app={REPO_ROOT / 'app.db'}"]

    (tmp_path / "app.db").touch()
    for name, entry in entries.items():
        args = entry["args"]
        if name == "dockyard-sqlite":  # the same config, with a database that exists in this test
            args = ["--db", f"app={tmp_path / 'app.db'}"]
        for era in ERAS:
            launch = offline_launch(entry["command"], args, tmp_path)
            async with open_session(launch, era=era, timeout=120) as session:
                tools = await session.tool_names()
            assert tools, f"{name} ({era}) listed no tools"
            if name == "dockyard-git":
                assert "git_status" in tools


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_install_again_is_offline_from_uvs_cache_and_picks_up_the_checkout(installed):
    # Once installed, everything a server needs is in uv's cache: a second install needs no index.
    result = dockyard("install", "--server", "sqlite", "--offline", env=tool_env(installed))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(installed / "bin" / "dockyard-sqlite")]
    receipt = (installed / "tools" / "dockyard-sqlite" / "uv-receipt.toml").read_text()
    assert str(REPO_ROOT / "servers" / "sqlite") in receipt  # built from this checkout, not an index


def test_config_before_install_says_to_install_first(tmp_path):
    result = dockyard("config", "cursor", "--server", "git", env=tool_env(tmp_path))
    assert result.returncode == 2
    assert f"not installed in {(tmp_path / 'bin').resolve()}: dockyard-git" in result.stderr
    assert "dockyard install --server git" in result.stderr and "--form uvx" in result.stderr
    assert "Traceback" not in result.stderr


def test_root_and_db_go_only_to_the_server_that_has_the_flag_with_absolute_paths(tmp_path):
    result = dockyard(
        "config", "cursor", "--form", "uvx", "--root", "repos", "--db", "a.db", "--db", "sales=data/s.db",
        env=tool_env(tmp_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    entries = json.loads(result.stdout)["mcpServers"]
    assert entries["dockyard-git"]["args"][-2:] == ["--root", str(REPO_ROOT / "repos")]
    assert entries["dockyard-sqlite"]["args"][-4:] == [
        "--db",
        str(REPO_ROOT / "a.db"),
        "--db",
        f"sales={REPO_ROOT / 'data' / 's.db'}",
    ]
    assert "--demo" not in entries["dockyard-sqlite"]["args"]  # the given database replaces the sample
    for other in set(entries) - {"dockyard-git", "dockyard-sqlite"}:
        assert "--root" not in entries[other]["args"] and "--db" not in entries[other]["args"]


def test_the_uvx_form_with_offline_asks_uvx_not_to_reach_the_index(tmp_path):
    result = dockyard(
        "config", "vscode", "--form", "uvx", "--offline", "--server", "tasks", env=tool_env(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    entry = json.loads(result.stdout)["servers"]["dockyard-tasks"]
    assert entry["command"] == "uvx" and entry["args"][:3] == ["--offline", "--compile-bytecode", "--from"]
    refused = dockyard("config", "vscode", "--offline", env=tool_env(tmp_path))  # the installed form
    assert refused.returncode == 2 and "--offline is for --form uvx" in refused.stderr


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_the_uvx_offline_form_starts_with_no_network_after_one_online_run(tmp_path):
    uvx = shutil.which("uvx") or str(Path(shutil.which("uv") or "uv").resolve().with_name("uvx"))
    result = dockyard("config", "cursor", "--form", "uvx", "--offline", "--server", "sqlite", env={})
    entry = json.loads(result.stdout)["mcpServers"]["dockyard-sqlite"]
    online = [arg for arg in entry["args"] if arg != "--offline"]
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH"}}
    warm = subprocess.run(
        [uvx, *online, "--help"], capture_output=True, text=True, env=env, timeout=540, check=False
    )  # the one online run
    assert warm.returncode == 0, warm.stderr
    async with open_session(offline_launch(uvx, entry["args"], tmp_path), timeout=120) as session:
        assert "list_tables" in await session.tool_names()


def test_an_install_that_cannot_reach_what_it_needs_says_why_and_what_to_do(tmp_path):
    # Offline with an empty cache: nothing to install from. uv's own reason, and the way out, no traceback.
    env = {**tool_env(tmp_path), "UV_CACHE_DIR": str(tmp_path / "empty-cache")}
    result = dockyard("install", "--server", "sqlite", "--offline", env=env)
    assert result.returncode == 2, result.stderr
    assert "installing dockyard-sqlite failed:" in result.stderr
    assert "needs the network once" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "bin" / "dockyard-sqlite").exists()
