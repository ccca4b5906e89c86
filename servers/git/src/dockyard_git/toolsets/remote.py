"""The remote toolset (off by default; --allow-remote): list remotes, fetch, and — with the write toolset on
too — fast-forward pull and push. A force-with-lease, or a push to a protected branch, asks the user."""

from __future__ import annotations

from typing import Annotated, Any

import mcp.types as mt
from fastmcp import Context
from fastmcp.dependencies import CurrentContext
from pydantic import Field

from dockyard_shared import READ_ONLY
from dockyard_shared.confirm import Confirm, require_confirmation
from dockyard_shared.schema import optional
from dockyard_shared.toolsets import ToolRegistrar

from ..context import GitContext
from ..remotes.models import FetchResult, PullResult, PushResult, RemotesResult
from .arguments import RepoPath

__all__ = ["register"]

# Each talks to a remote (open world); none discards local work. A push may replace a remote's commits
# (force-with-lease, after the user confirms): destructive.
FETCHES = mt.ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=True
)
PUSHES = mt.ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True
)

Remote = Annotated[str | None, optional("string", "Default: the branch's upstream remote, else origin.")]


def register(registrar: ToolRegistrar, git: GitContext, *, writes: bool, task: Any = None) -> None:
    """``writes``: the write toolset is on too, so git_pull and git_push are served. ``task``: the task
    configuration of fetch, pull and push when the server serves the tasks extension (--tasks)."""

    @registrar.tool(annotations=READ_ONLY)
    async def git_remotes(repo_path: RepoPath = None) -> RemotesResult:
        """List remotes and how each local branch tracks them.

        Use when: before fetch, pull or push.
        Not for: contacting a remote (git_fetch).
        Returns: remotes (URLs without credentials; why one is refused), branches with upstream and
        ahead/behind as of the last fetch, and when that was.
        Limits: 50 remotes, 300 branches.
        """
        return await git.on_remote(repo_path, lambda remotes, repo: remotes.listing.remotes(repo))

    @registrar.tool(annotations=FETCHES, task=task)
    async def git_fetch(
        remote: Remote = None,
        prune: Annotated[
            bool, Field(description="Drop remote-tracking branches gone from the remote.")
        ] = False,
        repo_path: RepoPath = None,
    ) -> FetchResult:
        """Download a remote's branches into its remote/branch refs.

        Use when: seeing what others pushed.
        Not for: updating local branches or files (git_pull).
        Returns: refs moved (new, updated, forced, deleted; commits each), commits fetched.
        Limits: branches, not tags; no submodules; 50 refs listed.
        """
        return await git.on_remote(
            repo_path, lambda remotes, repo: remotes.fetching.fetch(repo, remote, prune=prune)
        )

    if not writes:
        return

    @registrar.tool(annotations=FETCHES, task=task)
    async def git_pull(
        remote: Remote = None,
        branch: Annotated[str | None, optional("string", "Remote branch; default: the upstream.")] = None,
        repo_path: RepoPath = None,
    ) -> PullResult:
        """Fetch, then fast-forward the current branch to the remote branch.

        Use when: the user wants the remote's new commits in their branch.
        Not for: diverged work: never merges or rebases (Conflict says what diverged).
        Returns: outcome (fast-forwarded, up to date, ahead), commits brought in, the fetch.
        Limits: refused if uncommitted changes would be overwritten.
        """
        return await git.on_remote(
            repo_path, lambda remotes, repo: remotes.fetching.pull(repo, remote, branch)
        )

    @registrar.tool(annotations=PUSHES, task=task)
    async def git_push(
        remote: Remote = None,
        branch: Annotated[str | None, optional("string", "Local branch; default: the current one.")] = None,
        set_upstream: bool = False,
        force_with_lease: Annotated[
            bool, Field(description="Replace the remote branch if unchanged since the last fetch.")
        ] = False,
        tags: Annotated[
            list[str] | None, optional("array", "Tags to push too.", items={"type": "string"})
        ] = None,
        confirm: Confirm = False,
        repo_path: RepoPath = None,
        ctx: Context = CurrentContext(),
    ) -> PushResult:
        """Push a local branch to its upstream (else the same name) on a remote.

        Use when: the user asked to publish commits.
        Not for: a plain force push (never done).
        Returns: outcome (new branch, fast-forward, forced with lease, up to date), old and new commit.
        Limits: non-fast-forward is a Conflict. force_with_lease and protected branches (default: the
        remote's default branch) ask the user. No hooks.
        """
        plan = await git.on_remote(
            repo_path,
            lambda remotes, repo: remotes.pushing.plan(
                repo, remote, branch, set_upstream=set_upstream, force_with_lease=force_with_lease, tags=tags
            ),
        )
        if plan.confirmation:
            pending = await require_confirmation(
                ctx,
                plan.confirmation,
                confirm=confirm,
                exposure=git.settings.exposure,
                declined=f"The user declined the push; {plan.branch} was not pushed.",
            )
            if pending is not None:
                return pending  # type: ignore[return-value]  # the client asks the user and retries
        return await git.on_remote(repo_path, lambda remotes, repo: remotes.pushing.push(plan))
