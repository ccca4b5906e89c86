"""Publish-ready: PyPI metadata on every member, a registry server.json per server that agrees with the
package and the server's own flags, and wheels that install and start with no network."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from dockyard_shared.cli import discover_servers
from tests.harness import ERAS, REPO_ROOT, Launch, open_session

MEMBERS = ["shared", *sorted(f"servers/{p.name}" for p in (REPO_ROOT / "servers").iterdir() if p.is_dir())]
SERVERS = discover_servers()
PROJECTS = {
    member: tomllib.loads((REPO_ROOT / member / "pyproject.toml").read_text())["project"]
    for member in MEMBERS
}
# PEP 440 release segments only: every member is released together, at one version.
VERSION = re.compile(r"^\d+\.\d+\.\d+$")
REGISTRY_NAME = re.compile(r"^io\.github\.[a-zA-Z0-9-]+/[a-zA-Z0-9._-]+$")
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")


@pytest.mark.parametrize("member", MEMBERS)
def test_every_member_carries_the_metadata_pypi_shows(member):
    project = PROJECTS[member]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (REPO_ROOT / member / "LICENSE").read_text() == (REPO_ROOT / "LICENSE").read_text()
    assert project["readme"] == "README.md" and (REPO_ROOT / member / "README.md").is_file()
    assert "mcp" in project["keywords"] and len(project["keywords"]) >= 4
    classifiers = project["classifiers"]
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert any(c.startswith("Development Status :: ") for c in classifiers)
    assert any(c.startswith("Topic :: ") for c in classifiers)
    assert {"Homepage", "Repository", "Issues", "Documentation"} <= set(project["urls"])
    assert all(url.startswith("https://") for url in project["urls"].values())
    assert len(project["description"]) <= 200


def test_every_member_has_the_same_release_version_and_servers_pin_shared_to_its_minor():
    versions = {member: project["version"] for member, project in PROJECTS.items()}
    assert len(set(versions.values())) == 1, versions
    (version,) = set(versions.values())
    assert VERSION.match(version)
    major, minor, _ = (int(part) for part in version.split("."))
    for member, project in PROJECTS.items():
        if member == "shared":
            continue
        (shared,) = [d for d in project["dependencies"] if d.startswith("dockyard-shared")]
        assert shared == f"dockyard-shared>={version},<{major}.{minor + 1}", member


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_each_server_json_agrees_with_its_package_readme_and_flags(name):
    folder = REPO_ROOT / "servers" / name
    document = json.loads((folder / "server.json").read_text())
    project = PROJECTS[f"servers/{name}"]
    assert document["$schema"].startswith("https://static.modelcontextprotocol.io/schemas/")
    assert REGISTRY_NAME.match(document["name"]) and document["name"].endswith(f"/{name}")
    assert 1 <= len(document["description"]) <= 100  # the registry schema's bound
    assert document["version"] == project["version"]
    assert document["repository"]["subfolder"] == f"servers/{name}"
    # PyPI ownership: the registry looks for this line in the package's description (its README).
    assert f"mcp-name: {document['name']}" in (folder / "README.md").read_text()

    (package,) = document["packages"]
    assert package["registryType"] == "pypi" and package["registryBaseUrl"] == "https://pypi.org"
    assert package["identifier"] == project["name"] == f"dockyard-{name}"
    assert package["version"] == project["version"] and package["transport"] == {"type": "stdio"}
    parser = SERVERS[name].parser()
    for argument in package.get("packageArguments", []):
        assert argument["type"] == "named"
        _, unknown = parser.parse_known_args([argument["name"], "x"])
        assert argument["name"] not in unknown, f"{name} has no flag {argument['name']}"
    for variable in package.get("environmentVariables", []):
        if any(word in variable["name"] for word in SECRET_WORDS):
            assert variable["isSecret"] is True, variable["name"]
        assert variable["description"]


def test_the_secrets_servers_read_are_declared_secret():
    from dockyard_name_origin.settings import DEFAULT_KEY_ENV

    def secret_names(name: str) -> set[str]:
        document = json.loads((REPO_ROOT / "servers" / name / "server.json").read_text())
        return {v["name"] for v in document["packages"][0].get("environmentVariables", []) if v["isSecret"]}

    assert DEFAULT_KEY_ENV in secret_names("name-origin")
    assert SERVERS["git"].parser().parse_args([]).github_token_env in secret_names("git")


# -- The built wheels, installed with no network ---------------------------------------------------------


def _uv() -> str:
    return shutil.which("uv") or "uv"


def _offline(command: list[str]) -> list[str]:
    """``command`` in a network namespace of its own where the machine allows one (no network at all)."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-rn", "true"], capture_output=True).returncode == 0:
        return [unshare, "-rn", *command]
    return command


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_the_built_wheels_install_into_a_fresh_environment_offline_and_every_server_starts(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"VIRTUAL_ENV", "PYTHONPATH", "UV_PROJECT_ENVIRONMENT"}
    }
    dist = tmp_path / "dist"
    built = subprocess.run(
        [_uv(), "build", "--all-packages", "--wheel", "-o", str(dist)],
        cwd=REPO_ROOT, capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    wheels = sorted(p.name for p in dist.glob("*.whl"))
    assert [w.split("-")[0] for w in wheels] == sorted(p["name"].replace("-", "_") for p in PROJECTS.values())

    # The lock's versions of everything else, which the workspace's own sync put in uv's cache.
    exported = subprocess.run(
        [_uv(), "export", "--frozen", "--all-packages", "--no-dev", "--no-hashes", "--no-emit-workspace"],
        cwd=REPO_ROOT, capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    constraints = tmp_path / "constraints.txt"
    constraints.write_text(exported.stdout)
    offline_env = {**env, "UV_NO_CONFIG": "1"}

    def install(venv: Path, *, offline: bool) -> subprocess.CompletedProcess[str]:
        subprocess.run(
            [_uv(), "venv", "-q", "--python", sys.executable, str(venv)], cwd=tmp_path, env=env, check=True
        )
        command = [
            _uv(), "pip", "install", "--python", str(venv / "bin" / "python"),
            "--find-links", str(dist), "--constraints", str(constraints),
            *(f"dockyard-{name}" for name in SERVERS),
        ]  # fmt: skip
        if offline:
            command = _offline([*command[:3], "--offline", *command[3:]])
        return subprocess.run(
            command, cwd=tmp_path, capture_output=True, text=True, env=offline_env, timeout=600
        )

    # A first install with the network (as a release's CI or a user's first install has it) leaves the
    # index's answers in uv's cache; a sync from the lock alone downloads wheels by URL and caches none.
    warm = install(tmp_path / "warm", offline=False)
    assert warm.returncode == 0, warm.stderr
    venv = tmp_path / "venv"
    installed = install(venv, offline=True)
    assert installed.returncode == 0, installed.stderr
    # From the wheels: nothing of the checkout on the new environment's path (no path or editable install).
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import dockyard_shared, sys; print(dockyard_shared.__file__); print(sys.path)"],
        capture_output=True, text=True, cwd=tmp_path, env={"PATH": os.environ["PATH"]}, check=True,
    )  # fmt: skip
    assert str(REPO_ROOT) not in where.stdout and str(venv) in where.stdout.splitlines()[0]

    for name in SERVERS:
        script = str(venv / "bin" / f"dockyard-{name}")
        command = _offline([script])
        launch = Launch(
            command[0], tuple(command[1:]), env={"XDG_DATA_HOME": str(tmp_path / "data")}, cwd=str(tmp_path)
        )
        for era in ERAS:
            async with open_session(launch, era=era, timeout=120) as session:
                tools = await session.list_tools()
            assert tools, f"{name} ({era}) listed no tools"
            assert all(tool.icons for tool in tools), f"{name}: the wheel lacks its icon files"

    # Installed without the `tasks` extra: a server's --tasks refuses at start, naming the install command.
    with_tasks = [
        name for name in SERVERS if re.search(r"--tasks\b(?!-)", SERVERS[name].parser().format_usage())
    ]
    assert with_tasks
    for name in with_tasks:
        refused = subprocess.run(
            [str(venv / "bin" / f"dockyard-{name}"), "--tasks"],
            capture_output=True, text=True, cwd=tmp_path, stdin=subprocess.DEVNULL, timeout=120,
            env={"PATH": os.environ["PATH"], "XDG_DATA_HOME": str(tmp_path / "data")},
        )  # fmt: skip
        assert refused.returncode == 2, refused.stderr
        assert f"uv tool install 'dockyard-{name}[tasks]'" in refused.stderr, refused.stderr
