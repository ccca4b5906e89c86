"""What the remote-toolset tests build: a served clone, its bare remote inside the roots, another clone
outside them standing for other people, and a server with the remote toolset on."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from dockyard_git.settings import RemoteSettings
from dockyard_shared.toolsets import Exposure
from tests.git.helpers import git, make_repo, make_server

ALL_PROTOCOLS = ("https", "ssh", "http", "file")


@dataclass(frozen=True)
class Remotes:
    root: Path  # what the server serves: the clone and its bare remote
    work: Path  # the served clone; its origin is `origin`
    origin: Path  # a bare repository inside the root
    others: Path  # a clone outside the root: commits "someone else" pushes
    home: Path  # the operator's (empty) home


def make_remotes(tmp_path: Path) -> Remotes:
    root = tmp_path / "root"
    root.mkdir()
    seed = make_repo(tmp_path / "seed")
    origin = root / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(origin))
    work = root / "work"
    others = tmp_path / "others"
    for clone in (work, others):
        git(tmp_path, "clone", "-q", str(origin), str(clone))
        git(clone, "config", "user.name", "Ada Lovelace")
        git(clone, "config", "user.email", "ada@example.com")
    home = tmp_path / "home"
    home.mkdir()
    return Remotes(root, work, origin, others, home)


def commit(repo: Path, name: str, text: str | None = None) -> str:
    """A commit adding or changing ``name``; returns its id."""
    (repo / name).write_text(text or f"{name}\n")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")
    return git(repo, "rev-parse", "HEAD").strip()


def head_of(repo: Path, ref: str) -> str | None:
    out = git(repo, "rev-parse", "--verify", "--quiet", ref, check=False).strip()
    return out or None


def operator_environment(home: Path) -> dict[str, str]:
    """An operator with no git config of their own: no credential helper, default ssh."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}


def remote_server(
    remotes: Remotes,
    *,
    writes: bool = True,
    protocols: tuple[str, ...] = ALL_PROTOCOLS,
    trust: bool = False,
    **remote_settings,
):
    exposure = Exposure(toolsets=("default", "remote"), trust_model_confirmation=trust)
    remote_settings.setdefault("operator_environment", operator_environment(remotes.home))
    return make_server(
        remotes.root,
        allow_write=writes,
        exposure=exposure,
        remote=RemoteSettings(protocols=protocols, **remote_settings),
    )
