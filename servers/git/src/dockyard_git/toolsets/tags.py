"""The tags toolset (off by default): list tags; create and delete (the user is asked) annotated tags;
verify a signature where the operator enabled it (--tag-signatures)."""

from __future__ import annotations

from typing import Annotated

from fastmcp import Context
from fastmcp.dependencies import CurrentContext
from pydantic import Field

from dockyard_shared import ADDITIVE, DESTRUCTIVE, READ_ONLY
from dockyard_shared.confirm import Confirm, require_confirmation
from dockyard_shared.schema import optional
from dockyard_shared.toolsets import ToolRegistrar

from ..context import GitContext
from ..local_models import TagResult, TagVerification
from ..models import TagList
from .arguments import RepoPath
from .replies import lean_result

__all__ = ["register"]

TagName = Annotated[str, Field(description="E.g. v1.2.0.")]


def register(registrar: ToolRegistrar, git: GitContext) -> None:
    @registrar.tool(annotations=READ_ONLY)
    async def git_tags(repo_path: RepoPath = None) -> TagList:
        """List tags, newest first, with the commit each points to.

        Use when: finding releases or versions.
        Not for: branches (git_branches).
        Returns: name, sha, date, subject.
        Limits: the newest 300.
        """
        return lean_result(await git.run(repo_path, lambda ops, repo: ops.history.tags(repo)))  # type: ignore[return-value]

    @registrar.tool(annotations=ADDITIVE)
    async def git_tag_create(
        name: TagName,
        message: str,
        revision: Annotated[str | None, optional("string", "Default HEAD.")] = None,
        repo_path: RepoPath = None,
    ) -> TagResult:
        """Create an annotated tag.

        Use when: the user asked to mark a release.
        Returns: the tag and its commit.
        Limits: unsigned; never moves an existing tag; local only (git_push tags= publishes).
        """
        return await git.run(repo_path, lambda ops, repo: ops.tags.create(repo, name, message, revision))

    @registrar.tool(annotations=DESTRUCTIVE)
    async def git_tag_delete(
        name: TagName, confirm: Confirm = False, repo_path: RepoPath = None, ctx: Context = CurrentContext()
    ) -> TagResult:
        """Delete a local tag, after the user agrees.

        Returns: the tag and the commit it named.
        Limits: a pushed copy stays on the remote.
        """
        name = await git.run(repo_path, lambda ops, repo: ops.tags.existing(repo, name))
        pending = await require_confirmation(
            ctx,
            f"Delete the tag {name}?",
            confirm=confirm,
            exposure=git.settings.exposure,
            declined=f"The user declined; the tag {name} was kept.",
        )
        if pending is not None:
            return pending  # type: ignore[return-value]  # the client asks the user and retries
        return await git.run(repo_path, lambda ops, repo: ops.tags.delete(repo, name))

    @registrar.tool(annotations=READ_ONLY)
    async def git_tag_verify(name: TagName, repo_path: RepoPath = None) -> TagVerification:
        """Check a tag's signature.

        Returns: valid, format, the verifier's report (fenced).
        Limits: only when the operator enabled --tag-signatures; else an error saying how.
        """
        return await git.run(repo_path, lambda ops, repo: ops.tags.verify(repo, name))
