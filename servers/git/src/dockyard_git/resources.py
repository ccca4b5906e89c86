"""The git:// resources (a repository named by its folder name) and argument completions."""

from __future__ import annotations

from collections.abc import Mapping

from fastmcp import FastMCP
from fastmcp.server.dependencies import get_context

from dockyard_shared import InvalidArgument
from dockyard_shared.server import complete_arguments

from .context import GitContext
from .roots import ClientRootsMiddleware

__all__ = ["register"]


def register(server: FastMCP, git: GitContext, roots: ClientRootsMiddleware | None = None) -> None:
    @server.resource("git://{repo}/status", mime_type="application/json")
    async def status_resource(repo: str) -> dict:
        """The working tree status of a repository (by folder name)."""
        return (
            await git.run_named(repo, lambda ops, repository: ops.worktree.status(repository))
        ).model_dump()

    @server.resource("git://{repo}/log", mime_type="application/json")
    async def log_resource(repo: str) -> dict:
        """The 50 most recent commits of a repository."""
        log = await git.run_named(repo, lambda ops, target: ops.history.log(target, max_count=50))
        return log.model_dump(exclude_none=True)

    @server.resource("git://{repo}/file/{rev}/{path*}", mime_type="text/plain")
    async def file_resource(repo: str, rev: str, path: str) -> str:
        """A file's content at a revision (the first 60,000 characters)."""
        shown = await git.run_named(
            repo, lambda ops, target: ops.history.show(target, revision=rev, path=path)
        )
        if shown.binary:
            raise InvalidArgument(f"{path} is a binary file.")
        return shown.content or ""

    async def complete(argument: str, value: str, given: Mapping[str, str]) -> list[str]:
        if roots is None:
            return await git.completions(argument, value, given)
        # Completions pass through no middleware: they look the client's roots up themselves.
        with git.serving(await roots.known_roots(get_context())):
            return await git.completions(argument, value, given)

    complete_arguments(server, complete)
