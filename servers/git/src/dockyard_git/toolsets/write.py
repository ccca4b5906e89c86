"""The write toolset: stage, commit, branch, switch and stash. Nothing here discards work."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field

from dockyard_shared import ADDITIVE, DESTRUCTIVE
from dockyard_shared.schema import optional
from dockyard_shared.toolsets import ToolRegistrar

from ..context import GitContext
from ..models import CommitType, WriteResult
from .arguments import Paths, RepoPath

__all__ = ["register"]


def register(registrar: ToolRegistrar, git: GitContext) -> None:
    @registrar.tool(annotations=ADDITIVE)
    async def git_add(
        paths: Annotated[list[str], Field(description="Files or folders; '.' for all.")],
        repo_path: RepoPath = None,
    ) -> WriteResult:
        """Stage files for the next commit.

        Use when: preparing a commit.
        Not for: unstaging (git_unstage).
        Returns: the new status.
        Limits: paths inside the repository only.
        """
        return await git.run(repo_path, lambda ops, repo: ops.worktree.add(repo, paths))

    @registrar.tool(annotations=ADDITIVE)
    async def git_unstage(paths: Paths = None, repo_path: RepoPath = None) -> WriteResult:
        """Unstage files, keeping their changes in the working tree.

        Use when: something was staged by mistake.
        Not for: discarding changes (never done here).
        Returns: the new status.
        Limits: no paths: everything staged.
        """
        return await git.run(repo_path, lambda ops, repo: ops.worktree.unstage(repo, paths or []))

    @registrar.tool(annotations=ADDITIVE)
    async def git_commit(
        message: Annotated[str, Field(description="Subject line, then optionally a blank line and a body.")],
        type: Annotated[
            CommitType | None,
            optional("string", "Makes the subject 'type(scope)!: message'.", enum=list(get_args(CommitType))),
        ] = None,
        scope: Annotated[str | None, optional("string", "E.g. parser.")] = None,
        breaking: Annotated[bool, Field(description="Adds the '!'.")] = False,
        repo_path: RepoPath = None,
    ) -> WriteResult:
        """Commit the staged changes, optionally as a conventional commit.

        Use when: the user asked to commit what is staged.
        Not for: staging (git_add first).
        Returns: the new commit and the status.
        Limits: hooks do not run; needs user.name and user.email in the repository's config.
        """
        return await git.run(
            repo_path,
            lambda ops, repo: ops.worktree.commit(
                repo, message=message, type=type, scope=scope, breaking=breaking
            ),
        )

    @registrar.tool(annotations=ADDITIVE)
    async def git_create_branch(
        name: str,
        start_point: Annotated[str | None, optional("string", "A revision; HEAD when omitted.")] = None,
        switch: Annotated[bool, Field(description="Switch to it afterwards.")] = False,
        repo_path: RepoPath = None,
    ) -> WriteResult:
        """Create a branch.

        Use when: starting new work.
        Not for: switching to an existing branch (git_checkout).
        Returns: a confirmation, and the status when switching.
        Limits: refuses an existing name.
        """
        return await git.run(
            repo_path,
            lambda ops, repo: ops.worktree.create_branch(
                repo, name=name, start_point=start_point, switch=switch
            ),
        )

    @registrar.tool(annotations=DESTRUCTIVE)
    async def git_checkout(
        branch: Annotated[str, Field(description="A local branch.")],
        repo_path: RepoPath = None,
    ) -> WriteResult:
        """Switch the working tree to another local branch.

        Use when: the user asked to work on another branch.
        Not for: creating a branch (git_create_branch).
        Returns: the new status.
        Limits: refuses while there are uncommitted changes: nothing is ever discarded.
        """
        return await git.run(repo_path, lambda ops, repo: ops.worktree.checkout(repo, branch=branch))

    @registrar.tool(annotations=ADDITIVE)
    async def git_stash(
        action: Annotated[
            Literal["push", "pop", "list"],
            Field(description="push sets changes aside, pop brings the last back."),
        ],
        message: Annotated[str | None, optional("string", "Label for push.")] = None,
        repo_path: RepoPath = None,
    ) -> WriteResult:
        """Set uncommitted changes aside, bring them back, or list what is set aside.

        Use when: switching branches with work in progress.
        Not for: committing (git_commit).
        Returns: the status after push or pop, or the stash entries.
        Limits: pop keeps the entry when it conflicts.
        """
        return await git.run(
            repo_path, lambda ops, repo: ops.worktree.stash(repo, action=action, message=message)
        )
