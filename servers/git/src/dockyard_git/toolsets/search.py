"""The search toolset (off by default): grep of tracked files and blame of a file's lines.

Off by default because the everyday job does not need them: hosts search the workspace with their own
tools, and blame is occasional line archaeology (git_log with paths answers who changed a file)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from dockyard_shared import READ_ONLY
from dockyard_shared.schema import optional
from dockyard_shared.toolsets import ToolRegistrar

from ..context import GitContext
from ..models import BlameResult, GrepResult
from .arguments import Paths, RepoPath
from .replies import lean_result

__all__ = ["register"]

Revision = Annotated[str | None, optional("string", "Instead of the work tree.")]


def register(registrar: ToolRegistrar, git: GitContext) -> None:
    @registrar.tool(annotations=READ_ONLY)
    async def git_blame(
        path: str,
        start: Annotated[int | None, Field(ge=1), optional("integer", "From 1.", minimum=1)] = None,
        end: Annotated[int | None, Field(ge=1), optional("integer", minimum=1)] = None,
        revision: Revision = None,
        repo_path: RepoPath = None,
    ) -> BlameResult:
        """Show who last changed each line of a file, and in which commit.

        Use when: finding where specific lines come from.
        Not for: a file's whole history (git_log with paths).
        Returns: per line: number, sha, author, date, commit summary, text.
        Limits: 500 lines a call; the note says where to continue.
        """
        result = await git.run(
            repo_path,
            lambda ops, repo: ops.history.blame(repo, path=path, start=start, end=end, revision=revision),
        )
        return lean_result(result)  # type: ignore[return-value]

    @registrar.tool(annotations=READ_ONLY)
    async def git_grep(
        pattern: Annotated[str, Field(description="Extended regular expression.")],
        paths: Paths = None,
        revision: Revision = None,
        ignore_case: bool = False,
        max_matches: Annotated[int | None, Field(ge=1), optional("integer", minimum=1)] = None,
        repo_path: RepoPath = None,
    ) -> GrepResult:
        """Search tracked files for a pattern.

        Use when: finding where something is defined or used.
        Not for: searching history (git_log with grep).
        Returns: path, line number and text (cut at 500 characters) of each match.
        Limits: 100 matches unless max_matches, 200 at most; binary files skipped.
        """
        result = await git.run(
            repo_path,
            lambda ops, repo: ops.history.grep(
                repo,
                pattern=pattern,
                paths=paths,
                revision=revision,
                ignore_case=ignore_case,
                max_matches=max_matches,
            ),
        )
        return lean_result(result)  # type: ignore[return-value]
