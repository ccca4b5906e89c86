"""The worktrees toolset (off by default): list, add, remove and prune linked worktrees inside the roots.
Removing a worktree with uncommitted or untracked changes asks the user."""

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
from ..local_models import WorktreeList, WorktreeResult
from .arguments import RepoPath

__all__ = ["register"]

WorktreePath = Annotated[str, Field(description="Folder; absolute or relative to the repository.")]


def register(registrar: ToolRegistrar, git: GitContext) -> None:
    @registrar.tool(annotations=READ_ONLY)
    async def git_worktrees(repo_path: RepoPath = None) -> WorktreeList:
        """List a repository's worktrees.

        Use when: finding or choosing a worktree for parallel work.
        Returns: path, branch, head, main/locked/prunable, served (usable as repo_path).
        Limits: 200.
        """
        return await git.run(repo_path, lambda ops, repo: ops.worktrees.list(repo))

    @registrar.tool(annotations=ADDITIVE)
    async def git_worktree_add(
        path: WorktreePath,
        branch: Annotated[str, Field(description="Branch to check out there.")],
        create: Annotated[bool, Field(description="Make branch new, from start_point.")] = False,
        start_point: Annotated[str | None, optional("string", "With create; default HEAD.")] = None,
        repo_path: RepoPath = None,
    ) -> WorktreeResult:
        """Check a branch out in a new linked worktree, a folder of its own.

        Use when: working on several branches at once (one agent per worktree).
        Returns: the worktree; pass its path as repo_path afterwards.
        Limits: the folder must be inside the roots and absent or empty; a branch is checked out in one
        worktree at a time.
        """
        return await git.run(
            repo_path,
            lambda ops, repo: ops.worktrees.add(repo, path, branch, create=create, start_point=start_point),
        )

    @registrar.tool(annotations=DESTRUCTIVE)
    async def git_worktree_remove(
        path: WorktreePath,
        confirm: Confirm = False,
        repo_path: RepoPath = None,
        ctx: Context = CurrentContext(),
    ) -> WorktreeResult:
        """Delete a linked worktree's folder and record; its branch stays.

        Use when: the work there is merged or abandoned.
        Returns: a confirmation.
        Limits: with uncommitted or untracked changes the user is asked first; locked or main: refused.
        """
        plan = await git.run(repo_path, lambda ops, repo: ops.worktrees.removal_plan(repo, path))
        if plan.confirmation:
            pending = await require_confirmation(
                ctx,
                plan.confirmation,
                confirm=confirm,
                exposure=git.settings.exposure,
                declined=f"The user declined; the worktree {plan.path} was kept.",
            )
            if pending is not None:
                return pending  # type: ignore[return-value]  # the client asks the user and retries
        return await git.run(repo_path, lambda ops, repo: ops.worktrees.remove(repo, plan))

    @registrar.tool(annotations=ADDITIVE)
    async def git_worktree_prune(repo_path: RepoPath = None) -> WorktreeResult:
        """Forget worktrees whose folders were deleted.

        Use when: git_worktrees marks some prunable.
        Returns: what was pruned.
        """
        return await git.run(repo_path, lambda ops, repo: ops.worktrees.prune(repo))
