"""The github_write toolset (off by default; needs the GitHub token): comment on a pull request or issue,
reply in a review thread, resolve or unresolve one. Each acts only on the GitHub repository of the
repository ``repo_path`` names; a thread of another repository is refused."""

from __future__ import annotations

from typing import Annotated

import mcp.types as mt
from pydantic import Field

from dockyard_shared.toolsets import ToolRegistrar

from ..context import GitContext
from ..github_api.models import Posted
from .arguments import RepoPath

__all__ = ["register"]

# Visible to others on GitHub, and never deletes anything: a comment adds; resolving can be undone.
POSTS = mt.ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True
)
RESOLVES = mt.ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=True
)
Body = Annotated[str, Field(description="Markdown, posted as the token's user.", min_length=1)]
ThreadId = Annotated[str, Field(description="id from github_review_threads.")]


def register(registrar: ToolRegistrar, git: GitContext) -> None:
    @registrar.tool(annotations=POSTS)
    async def github_comment(
        number: Annotated[int, Field(ge=1)], body: Body, repo_path: RepoPath = None
    ) -> Posted:
        """Comment on a pull request or issue of the repository's GitHub remote.

        Use when: the user wants a note posted on a PR or issue.
        Not for: answering a line comment (github_reply_to_thread).
        Returns: the new comment's URL.
        Limits: 65,536 characters.
        """
        return await git.on_github(repo_path, lambda github, slug: github.writes.comment(slug, number, body))

    @registrar.tool(annotations=POSTS)
    async def github_reply_to_thread(thread_id: ThreadId, body: Body, repo_path: RepoPath = None) -> Posted:
        """Reply in a pull request's review thread.

        Use when: answering a reviewer's line comment.
        Not for: a general comment (github_comment).
        Returns: the reply's URL.
        Limits: threads of this repository only; 65,536 characters.
        """
        return await git.on_github(repo_path, lambda github, slug: github.writes.reply(slug, thread_id, body))

    @registrar.tool(annotations=RESOLVES)
    async def github_resolve_thread(
        thread_id: ThreadId,
        resolved: Annotated[bool, Field(description="false reopens it.")] = True,
        repo_path: RepoPath = None,
    ) -> Posted:
        """Resolve (or unresolve) a pull request's review thread.

        Use when: the feedback in a thread has been addressed.
        Not for: replying (github_reply_to_thread).
        Returns: the thread's new state.
        Limits: threads of this repository only.
        """
        return await git.on_github(
            repo_path, lambda github, slug: github.writes.resolve(slug, thread_id, resolved=resolved)
        )
