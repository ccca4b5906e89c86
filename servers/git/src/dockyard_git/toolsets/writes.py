"""The write toolset: stage, commit, branch, switch and stash. Nothing here discards work."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from dockyard_shared import ADDITIVE, DESTRUCTIVE
from dockyard_shared.toolsets import ToolRegistrar

from ..context import GitContext
from ..models import CommitType, WriteResult
from .arguments import Paths, RepoPath

__all__ = ["register"]


def register(registrar: ToolRegistrar, git: GitContext) -> None:
    @registrar.tool(annotations=ADDITIVE)
    async def git_add(
        paths: Annotated[list[str], Field(description="Files or folders to stage ('.' for all).")],
        repo_path: RepoPath = None,
    ) -> WriteResult:
        """Stage files for the next commit.

        Use when: preparing a commit.
        Not for: unstaging — use git_unstage.
        Returns: the new status.
        Limits: paths must be inside the repository.
        """
        return await git.run(repo_path, lambda ops, repo: ops.add(repo, paths))

    @registrar.tool(annotations=ADDITIVE)
    async def git_unstage(paths: Paths = None, repo_path: RepoPath = None) -> WriteResult:
        """Remove files from the staging area, keeping their changes in the working tree.

        Use when: something was staged by mistake.
        Not for: discarding changes — this server never discards work.
        Returns: the new status.
        Limits: all staged files when paths is empty.
        """
        return await git.run(repo_path, lambda ops, repo: ops.unstage(repo, paths or []))

    @registrar.tool(annotations=ADDITIVE)
    async def git_commit(
        message: Annotated[str, Field(description="The commit message (subject line, optionally a body).")],
        type: Annotated[
            CommitType | None,
            Field(description="Conventional-commit type; the subject becomes 'type(scope): message'."),
        ] = None,
        scope: Annotated[str | None, Field(description="Conventional-commit scope, e.g. 'parser'.")] = None,
        breaking: Annotated[bool, Field(description="Mark a breaking change ('!').")] = False,
        repo_path: RepoPath = None,
    ) -> WriteResult:
        """Commit the staged changes.

        Use when: the user asked to commit what is staged.
        Not for: staging — use git_add first.
        Returns: the new commit and status.
        Limits: hooks do not run; needs user.name/user.email in the repository's config.
        """
        return await git.run(
            repo_path,
            lambda ops, repo: ops.commit(repo, message=message, type=type, scope=scope, breaking=breaking),
        )

    @registrar.tool(annotations=ADDITIVE)
    async def git_create_branch(
        name: Annotated[str, Field(description="New branch name.")],
        start_point: Annotated[str | None, Field(description="Where it starts (default HEAD).")] = None,
        switch: Annotated[bool, Field(description="Switch to it afterwards.")] = False,
        repo_path: RepoPath = None,
    ) -> WriteResult:
        """Create a branch.

        Use when: starting new work.
        Not for: switching to an existing branch — use git_checkout.
        Returns: a confirmation (and the status when switching).
        Limits: refuses an existing name.
        """
        return await git.run(
            repo_path,
            lambda ops, repo: ops.create_branch(repo, name=name, start_point=start_point, switch=switch),
        )

    @registrar.tool(annotations=DESTRUCTIVE)
    async def git_checkout(
        branch: Annotated[str, Field(description="Local branch to switch to.")],
        repo_path: RepoPath = None,
    ) -> WriteResult:
        """Switch the working tree to another local branch.

        Use when: the user asked to work on another branch.
        Not for: creating branches — use git_create_branch.
        Returns: the new status.
        Limits: refuses when there are uncommitted changes (nothing is ever discarded).
        """
        return await git.run(repo_path, lambda ops, repo: ops.checkout(repo, branch=branch))

    @registrar.tool(annotations=ADDITIVE)
    async def git_stash(
        action: Annotated[
            Literal["push", "pop", "list"],
            Field(description="push: set changes aside; pop: bring the latest back; list."),
        ],
        message: Annotated[str | None, Field(description="Label for push.")] = None,
        repo_path: RepoPath = None,
    ) -> WriteResult:
        """Set uncommitted changes aside, bring them back, or list what is set aside.

        Use when: switching branches with work in progress.
        Not for: committing — use git_commit.
        Returns: the status after push/pop, or the stash entries.
        Limits: pop keeps the entry when it conflicts.
        """
        return await git.run(repo_path, lambda ops, repo: ops.stash(repo, action=action, message=message))
