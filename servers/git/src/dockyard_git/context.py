"""What every tool works through: the served repositories, the operations on them, the GitHub reader, and
one way to run that work off the event loop."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from dockyard_shared import Problem
from dockyard_shared.offload import run_in_thread

from .gitcmd import GitRunner, running_processes
from .models import RepositoryList
from .operations import GitOperations
from .repos import Repository, RepositorySet
from .settings import Settings

if TYPE_CHECKING:
    from .github_api import GitHubReader

__all__ = ["GitContext", "Workspace"]

T = TypeVar("T")


async def run_cancellable(work: Callable[[], T]) -> T:
    """``work`` off the event loop; when the request is cancelled, the git processes it started are killed
    rather than left to run into their time limit."""
    processes: list[subprocess.Popen] = []
    token = running_processes.set(processes)  # the worker thread gets a copy of this context

    def kill() -> None:
        for process in processes:
            with contextlib.suppress(OSError):
                process.kill()

    try:
        return await run_in_thread(work, on_cancel=kill)
    finally:
        running_processes.reset(token)


@dataclass(frozen=True)
class Workspace:
    """The repositories under one set of roots, and the operations on them."""

    repositories: RepositorySet
    ops: GitOperations

    @classmethod
    def under(cls, roots: tuple, settings: Settings) -> Workspace:
        # A runner per set of roots: it confines every git call to the roots it was given.
        runner = GitRunner(timeout_s=settings.git_timeout_s)
        repositories = RepositorySet(list(roots), runner)
        return cls(repositories, GitOperations(repositories, runner, settings.limits))


class GitContext:
    def __init__(self, settings: Settings, *, github: GitHubReader | None = None) -> None:
        self.settings = settings
        self.github = github
        self._fixed = Workspace.under(settings.roots, settings)

    @classmethod
    def from_settings(cls, settings: Settings) -> GitContext:
        github = None
        if settings.github_token:
            from .github_api import GitHubReader  # PyGithub is imported only when a token is set

            github = GitHubReader(
                settings.github_token, settings.github_api_url, token_env=settings.github_token_env
            )
        return cls(settings, github=github)

    def workspace(self) -> Workspace:
        return self._fixed

    async def run(self, repo_path: str | None, work: Callable[[GitOperations, Repository], T]) -> T:
        """``work`` on the repository ``repo_path`` names, off the event loop: finding the repository
        touches the file system (and may rescan the roots), which must not hold up other requests."""
        workspace = self.workspace()
        return await run_cancellable(lambda: work(workspace.ops, workspace.repositories.resolve(repo_path)))

    async def list_repositories(self) -> RepositoryList:
        workspace = self.workspace()
        return await run_cancellable(workspace.ops.repository_list)

    async def run_named(self, name: str, work: Callable[[GitOperations, Repository], T]) -> T:
        """Like :meth:`run`, for a repository named by its folder name (as resources do)."""
        workspace = self.workspace()
        return await run_cancellable(lambda: work(workspace.ops, workspace.repositories.by_name(name)))

    async def on_github(self, repo_path: str | None, work: Callable[[GitHubReader, str], T]) -> T:
        """``work`` with the GitHub reader and the ``owner/name`` of the repository's GitHub remote."""
        reader = self.github
        assert reader is not None, "the GitHub tools are installed only with a token"
        workspace = self.workspace()

        def remote_then_work() -> T:
            repo = workspace.repositories.resolve(repo_path)
            return work(reader, workspace.ops.github_remote(repo, reader.extra_hosts))

        return await run_cancellable(remote_then_work)

    async def completions(self, argument: str, value: str, given: Mapping[str, str]) -> list[str]:
        """Values starting with ``value`` for a prompt or resource argument; ``given`` holds the arguments
        already chosen (the repository, when one is)."""
        workspace = self.workspace()
        repositories, ops = workspace.repositories, workspace.ops

        def complete() -> list[str]:
            if argument in ("repo", "repo_path"):
                served = repositories.repositories()
                names = [r.name if argument == "repo" else str(r.path) for r in served]
                return [n for n in names if n.startswith(value) or Path(n).name.startswith(value)]
            chosen = given.get("repo") or given.get("repo_path") or None
            try:
                repo = (
                    repositories.by_name(chosen)
                    if chosen and "/" not in chosen
                    else repositories.resolve(chosen)
                )
            except Problem:
                return []
            if argument in ("branch", "base", "rev"):
                listing = ops.branches(repo, kind="all")
                return [b.name for b in listing.branches if b.name.startswith(value)]
            if argument == "path":
                return ops.tracked_paths(repo, value)
            return []

        return await run_cancellable(complete)
