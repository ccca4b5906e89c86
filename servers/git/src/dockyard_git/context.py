"""What every tool works through: the served repositories, the operations on them, the GitHub reader, and
one way to run that work off the event loop.

The repositories are those under the ``--root`` folders, or, when the server was started without any, under
the folders the client shares as MCP roots for the current request (:class:`ClientRoots`, set by
:mod:`.roots`). Client roots are confined exactly as ``--root`` folders are: each set of roots gets its own
:class:`Workspace`, whose runner refuses anything outside them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import unquote, urlparse

import pydantic_core
from pydantic import BaseModel

from dockyard_shared import LimitExceeded, NotFound, Problem
from dockyard_shared.offload import run_in_thread

from .gitcmd import GitRunner, running_processes
from .gitcmd.slots import CallProcesses, GitSlots
from .models import RepositoryList
from .operations import GitOperations, github_remote
from .repos import Repository, RepositorySet
from .settings import MAX_REPLY_CHARS, Settings

if TYPE_CHECKING:
    from .github_api.reader import GitHubReader
    from .remotes.access import RemoteAccess
    from .remotes.operations import RemoteOperations

__all__ = ["ClientRoots", "GitContext", "Workspace"]

T = TypeVar("T")
log = logging.getLogger("dockyard.git")

_KEPT_WORKSPACES = 16


async def run_cancellable(work: Callable[[], T]) -> T:
    """``work`` off the event loop; when the request is cancelled, the git processes it started are killed
    rather than left to run into their time limit, and a wait for a free git slot ends."""
    processes = CallProcesses()
    token = running_processes.set(processes)  # the worker thread gets a copy of this context
    try:
        return await run_in_thread(work, on_cancel=processes.cancel)
    finally:
        running_processes.reset(token)


def _fits(result: T) -> T:
    """``result``, unless it would exceed what a host accepts from a tool. The limits keep every reply
    well under that; this is the backstop for what they cannot foresee (a path of control characters)."""
    if isinstance(result, BaseModel):
        size = len(pydantic_core.to_json(result).decode())
        if size > MAX_REPLY_CHARS:
            raise LimitExceeded(
                f"The reply would take {size:,} characters, more than the {MAX_REPLY_CHARS:,} a host accepts.",
                next_step="Ask for less: narrower paths, a smaller max_count, or a range with start/end.",
            )
    return result


@dataclass(frozen=True)
class ClientRoots:
    """The folders a client shares as MCP roots for the current request, and why there is none when so."""

    folders: tuple[Path, ...]
    why_none: str = "the client shares no roots"

    @classmethod
    def from_uris(cls, uris: Sequence[str]) -> ClientRoots:
        """The existing local folders among ``uris`` (``file://`` URIs only), resolved as ``--root`` is."""
        folders = [folder for folder in map(_local_folder, uris) if folder is not None]
        if folders or not uris:
            return cls(tuple(dict.fromkeys(folders)))
        shown = ", ".join(repr(uri[:100]) for uri in uris[:3]) + (", …" if len(uris) > 3 else "")
        return cls((), f"none of the client's roots is an existing local folder (a file:// URI): {shown}")


def _local_folder(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    path = unquote(parsed.path)
    if "\x00" in path or not path.startswith("/"):
        return None
    folder = Path(os.path.realpath(path))
    return folder if folder.is_dir() else None


# The current request's client roots (set around each request by :mod:`.roots`; None outside one).
_client_roots: ContextVar[ClientRoots | None] = ContextVar("dockyard_git_client_roots", default=None)


@dataclass(frozen=True)
class Workspace:
    """The repositories under one set of roots, and the operations on them."""

    repositories: RepositorySet
    ops: GitOperations

    @classmethod
    def under(cls, roots: tuple, settings: Settings, slots: GitSlots) -> Workspace:
        # A runner per set of roots: it confines every git call to the roots it was given. The slots are
        # the server's: the bound on concurrent git processes holds across every set of roots.
        runner = GitRunner(
            timeout_s=settings.git_timeout_s,
            memory_mb=settings.git_memory_mb,
            cpu_s=settings.git_cpu_s,
            slots=slots,
        )
        repositories = RepositorySet(list(roots), runner)
        return cls(
            repositories,
            GitOperations(repositories, runner, settings.limits, settings.tag_signatures),
        )


class GitContext:
    def __init__(self, settings: Settings, *, github: GitHubReader | None = None) -> None:
        self.settings = settings
        self._github = github
        self._github_lock = threading.Lock()
        # With --root the workspace is fixed; without, one per set of client roots (the last few kept, so
        # a client that asks again with the same roots finds its repositories already scanned).
        self.slots = GitSlots(settings.max_git_processes, settings.max_remote_git_processes)
        self._fixed = Workspace.under(settings.roots, settings, self.slots) if settings.roots else None
        self._by_roots: OrderedDict[tuple[Path, ...], Workspace] = OrderedDict()
        self._remote_access: RemoteAccess | None = None
        self._remote_access_lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> GitContext:
        return cls(settings)

    @property
    def github(self) -> GitHubReader | None:
        """The GitHub reader when a token is set, built on first use: PyGithub (with requests) is among the
        costliest imports here, and answering ``initialize`` does not need it (see :meth:`warm_up`)."""
        if self._github is None and self.settings.github_token:
            with self._github_lock:
                if self._github is None:
                    from .github_api.reader import GitHubReader

                    self._github = GitHubReader(
                        self.settings.github_token,
                        self.settings.github_api_url,
                        token_env=self.settings.github_token_env,
                    )
        return self._github

    def warm_up(self) -> None:
        """What the first tool call would otherwise pay, done once ``initialize`` has been answered
        (:mod:`dockyard_shared.warmup`): the scan of the ``--root`` folders (each repository's layout: its
        config files listed by git) and the GitHub reader (PyGithub)."""
        if self._fixed is not None:
            served = self._fixed.repositories
            found = served.repositories()
            # The operator's one look at what --root gave: the host's log, right after the first exchange.
            if found:
                log.info(
                    "serving %d git repositor%s under %s",
                    len(found),
                    "y" if len(found) == 1 else "ies",
                    ", ".join(str(root) for root in served.roots),
                )
            else:
                empty = served.none_found()
                log.warning("%s %s", empty.what, empty.next_step)
        _ = self.github

    @property
    def follows_client_roots(self) -> bool:
        """Whether the served folders are the client's MCP roots (no --root was given)."""
        return self._fixed is None

    @contextlib.contextmanager
    def serving(self, roots: ClientRoots) -> Iterator[None]:
        """Serve ``roots`` to the request running inside this block."""
        token = _client_roots.set(roots)
        try:
            yield
        finally:
            _client_roots.reset(token)

    def workspace(self) -> Workspace:
        if self._fixed is not None:
            return self._fixed
        roots = _client_roots.get()
        if roots is None or not roots.folders:
            why = roots.why_none if roots is not None else "no client roots are known for this request"
            raise NotFound(
                f"No repository is served: dockyard-git was started without --root, and {why}.",
                next_step="Ask the user to open the repository's folder in their MCP client (which shares it "
                "as a root), or to start dockyard-git with --root <repository or folder>.",
            )
        workspace = self._by_roots.get(roots.folders)
        if workspace is None:
            workspace = Workspace.under(roots.folders, self.settings, self.slots)
            self._by_roots[roots.folders] = workspace
            if len(self._by_roots) > _KEPT_WORKSPACES:
                self._by_roots.popitem(last=False)
        else:
            self._by_roots.move_to_end(roots.folders)
        return workspace

    async def run(self, repo_path: str | None, work: Callable[[GitOperations, Repository], T]) -> T:
        """``work`` on the repository ``repo_path`` names, off the event loop: finding the repository
        touches the file system (and may rescan the roots), which must not hold up other requests."""
        workspace = self.workspace()
        return await run_cancellable(
            lambda: _fits(work(workspace.ops, workspace.repositories.resolve(repo_path)))
        )

    async def list_repositories(self) -> RepositoryList:
        workspace = self.workspace()
        return await run_cancellable(lambda: _fits(workspace.ops.worktree.repository_list()))

    async def run_named(self, name: str, work: Callable[[GitOperations, Repository], T]) -> T:
        """Like :meth:`run`, for a repository named by its folder name (as resources do)."""
        workspace = self.workspace()
        return await run_cancellable(lambda: _fits(work(workspace.ops, workspace.repositories.by_name(name))))

    async def on_remote(self, repo_path: str | None, work: Callable[[RemoteOperations, Repository], T]) -> T:
        """``work`` with the remote operations on the repository ``repo_path`` names (the remote toolset)."""
        workspace = self.workspace()

        def remote_work() -> T:
            from .remotes.operations import RemoteOperations

            runner = workspace.ops.runner
            remotes = RemoteOperations(
                workspace.repositories,
                runner,
                self.settings.remote,
                self.settings.limits,
                access=self._access(runner),
            )
            return _fits(work(remotes, workspace.repositories.resolve(repo_path)))

        return await run_cancellable(remote_work)

    def _access(self, runner: GitRunner) -> RemoteAccess:
        """How remotes are reached: read once (the operator's git config), shared by every workspace."""
        with self._remote_access_lock:
            if self._remote_access is None:
                from .remotes.access import RemoteAccess

                self._remote_access = RemoteAccess(self.settings.remote, runner.git, runner.real_exec_path())
            return self._remote_access

    async def on_github(self, repo_path: str | None, work: Callable[[GitHubReader, str], T]) -> T:
        """``work`` with the GitHub reader and the ``owner/name`` of the repository's GitHub remote."""
        reader = self.github
        assert reader is not None, "the GitHub tools are installed only with a token"
        workspace = self.workspace()

        def remote_then_work() -> T:
            repo = workspace.repositories.resolve(repo_path)
            return _fits(work(reader, github_remote(workspace.ops.plumbing, repo, reader.extra_hosts)))

        return await run_cancellable(remote_then_work)

    async def completions(self, argument: str, value: str, given: Mapping[str, str]) -> list[str]:
        """Values starting with ``value`` for a prompt or resource argument; ``given`` holds the arguments
        already chosen (the repository, when one is)."""
        try:
            workspace = self.workspace()
        except Problem:  # no repository served: nothing to complete
            return []
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
                listing = ops.history.branches(repo, kind="all")
                return [b.name for b in listing.branches if b.name.startswith(value)]
            if argument == "path":
                return ops.history.tracked_paths(repo, value)
            return []

        return await run_cancellable(complete)
