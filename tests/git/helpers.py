"""What the git tests import: the test's own git, a repository to work on, a server over some roots."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from dockyard_git.server import create_server
from dockyard_git.settings import Settings
from dockyard_shared.toolsets import Exposure

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Ada Lovelace",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Lovelace",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}


def git(repo: Path, *args: str, check: bool = True) -> str:
    """The test's own git (not the server's): builds fixtures."""
    result = subprocess.run(
        ["git", *args], cwd=repo, env=GIT_ENV, capture_output=True, text=True, check=check
    )
    return result.stdout


def make_repo(path: Path, *, commits: int = 3) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Ada Lovelace")
    git(path, "config", "user.email", "ada@example.com")
    (path / "src").mkdir(exist_ok=True)
    for i in range(commits):
        (path / "README.md").write_text(f"# Project\n\nversion {i}\n")
        (path / "src" / "app.py").write_text("".join(f"def f{j}():\n    return {j * i}\n" for j in range(5)))
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", f"change number {i}")
    git(path, "tag", "-a", "v1.0", "-m", "first release")
    return path


# The toolsets that hold the read tools off by default: git_blame and git_grep (search), git_tags (tags).
LOOKUPS = ("search", "tags")


def make_server(
    *roots: Path,
    allow_write: bool = False,
    exposure: Exposure | None = None,
    toolsets: tuple[str, ...] = (),
    **extra,
):
    """A server over ``roots``; ``allow_write`` serves the write toolset as --allow-write does, ``toolsets``
    turns these on besides the default ones (``LOOKUPS`` for git_blame, git_grep, git_tags)."""
    exposure = (exposure or Exposure()).enabling(*toolsets, *(("write",) if allow_write else ()))
    return create_server(Settings(roots=tuple(roots), exposure=exposure, **extra))
