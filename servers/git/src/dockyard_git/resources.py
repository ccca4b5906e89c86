"""The git:// resources (a repository named by its folder name) and argument completions."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

from fastmcp import FastMCP
from fastmcp.server.dependencies import get_context

from dockyard_shared import InvalidArgument
from dockyard_shared.server import complete_arguments

from .context import GitContext
from .models import ShowResult
from .roots import ClientRootsMiddleware

__all__ = ["RESOURCE_FILE_CHARS", "file_uri", "register"]

# A file resource holds more than a git_show page (60,000): it is what a host reads for a resource link,
# to show or attach, not a tool reply. At most 3 bytes a character, it stays under the MCP SDK's 1 MiB
# bound on one message over HTTP.
RESOURCE_FILE_CHARS = 250_000


def file_uri(repository: str, sha: str, path: str) -> str:
    """The git:// URI of ``path`` at commit ``sha`` in the served repository at ``repository``."""
    return f"git://{quote(Path(repository).name, safe='')}/file/{sha}/{quote(path, safe='/')}"


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
        """A file's content at a revision (the first 250,000 characters)."""
        # A tuple, not the model: a reply's size backstop is for tool replies, and this is bounded here.
        binary, content, note = await git.run_named(
            repo,
            lambda ops, target: _content(
                ops.history.show(target, revision=rev, path=path, max_chars=RESOURCE_FILE_CHARS)
            ),
        )
        if binary:
            raise InvalidArgument(f"{path} is a binary file.")
        return f"{content}\n[{note}]" if note else content

    def _content(shown: ShowResult) -> tuple[bool, str, str | None]:
        return shown.binary, shown.content or "", shown.note

    async def complete(argument: str, value: str, given: Mapping[str, str]) -> list[str]:
        if roots is None:
            return await git.completions(argument, value, given)
        # Completions pass through no middleware: they look the client's roots up themselves.
        with git.serving(await roots.known_roots(get_context())):
            return await git.completions(argument, value, given)

    complete_arguments(server, complete)
