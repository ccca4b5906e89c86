"""The merging toolset (off by default): merge, rebase, cherry-pick and revert, each with continue, skip and
abort, a bounded conflict report and a next step in every reply. Rebasing commits already on a remote asks
the user. Never an editor, a hook, a merge driver or a recorded resolution of the repository's."""

from __future__ import annotations

from typing import Annotated, Literal

from fastmcp import Context
from fastmcp.dependencies import CurrentContext
from pydantic import Field

from dockyard_shared import DESTRUCTIVE, InvalidArgument
from dockyard_shared.confirm import Confirm, require_confirmation
from dockyard_shared.schema import optional
from dockyard_shared.toolsets import ToolRegistrar

from ..context import GitContext
from ..local_models import IntegrationResult
from .arguments import RepoPath

__all__ = ["register"]

Action = Annotated[
    Literal["start", "continue", "skip", "abort"],
    Field(description="continue stages resolved files and goes on; skip drops the current commit."),
]
Commits = Annotated[
    list[str] | None, optional("array", "With start: 1-50 commits, oldest first.", items={"type": "string"})
]


def _needed(value: object, what: str, action: str) -> None:
    if action == "start" and not value:
        raise InvalidArgument(f"Starting needs {what}.", next_step=f"Pass {what}, or another action.")


def register(registrar: ToolRegistrar, git: GitContext) -> None:
    @registrar.tool(annotations=DESTRUCTIVE)
    async def git_merge(
        action: Action = "start",
        revision: Annotated[str | None, optional("string", "With start: what to merge in.")] = None,
        fast_forward: Literal["allow", "only", "never"] = "allow",
        message: Annotated[str | None, optional("string", "Merge commit message.")] = None,
        repo_path: RepoPath = None,
    ) -> IntegrationResult:
        """Merge a branch or commit into the current branch, or continue/abort a merge.

        Use when: the user asked to merge.
        Returns: state (done, up to date, conflicts, aborted), commits made, conflicts (files, hunks with
        both sides), next_step.
        Limits: refuses uncommitted changes; 30 files, 10 hunks each, 2,000 characters per side.
        """
        if action == "start":
            _needed(revision, "revision", action)
            return await git.run(
                repo_path,
                lambda ops, repo: ops.integration.merge(
                    repo, revision or "", fast_forward=fast_forward, message=message
                ),
            )
        return await git.run(repo_path, lambda ops, repo: ops.integration.act(repo, "merge", action))

    @registrar.tool(annotations=DESTRUCTIVE)
    async def git_rebase(
        action: Action = "start",
        onto: Annotated[str | None, optional("string", "With start; default: the upstream.")] = None,
        confirm: Confirm = False,
        repo_path: RepoPath = None,
        ctx: Context = CurrentContext(),
    ) -> IntegrationResult:
        """Replay the current branch's commits onto another commit, or continue/skip/abort a rebase.

        Use when: the user asked to rebase.
        Returns: as git_merge.
        Limits: commits already on a remote ask the user (history rewrite); never interactive.
        """
        if action != "start":
            return await git.run(repo_path, lambda ops, repo: ops.integration.act(repo, "rebase", action))
        plan = await git.run(repo_path, lambda ops, repo: ops.integration.rebase_plan(repo, onto))
        if plan.confirmation:
            pending = await require_confirmation(
                ctx,
                plan.confirmation,
                confirm=confirm,
                exposure=git.settings.exposure,
                declined="The user declined the rebase; nothing was changed.",
            )
            if pending is not None:
                return pending  # type: ignore[return-value]  # the client asks the user and retries
        return await git.run(repo_path, lambda ops, repo: ops.integration.rebase(repo, plan))

    @registrar.tool(annotations=DESTRUCTIVE)
    async def git_cherry_pick(
        action: Action = "start", commits: Commits = None, repo_path: RepoPath = None
    ) -> IntegrationResult:
        """Apply commits onto the current branch, or continue/skip/abort.

        Returns: as git_merge.
        Limits: no merge commits.
        """
        _needed(commits, "commits", action)
        if action == "start":
            return await git.run(
                repo_path, lambda ops, repo: ops.integration.pick(repo, "cherry-pick", commits or [])
            )
        return await git.run(repo_path, lambda ops, repo: ops.integration.act(repo, "cherry-pick", action))

    @registrar.tool(annotations=DESTRUCTIVE)
    async def git_revert(
        action: Action = "start", commits: Commits = None, repo_path: RepoPath = None
    ) -> IntegrationResult:
        """Commit the undoing of commits, or continue/skip/abort.

        Not for: dropping commits from history.
        Returns: as git_merge.
        Limits: no merge commits.
        """
        _needed(commits, "commits", action)
        if action == "start":
            return await git.run(
                repo_path, lambda ops, repo: ops.integration.pick(repo, "revert", commits or [])
            )
        return await git.run(repo_path, lambda ops, repo: ops.integration.act(repo, "revert", action))
