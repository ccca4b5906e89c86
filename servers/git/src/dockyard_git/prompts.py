"""Prompts that embed a repository's state: a commit message for the staged diff, a history summary, and a
branch review."""

from __future__ import annotations

from collections.abc import Collection
from typing import get_args

from fastmcp import FastMCP

from dockyard_shared.toolsets import prompt

from .context import GitContext
from .models import CommitType

__all__ = ["register"]


def register(server: FastMCP, git: GitContext, served: Collection[str] = ()) -> None:
    """The prompts; ``served`` names the tools this server serves (a prompt names no other tool)."""
    stage = (
        "Stage changes with git_add, then ask again."
        if "git_add" in served
        else "Ask the user to stage the changes (`git add <files>` in the repository), then ask again."
    )

    rest = " Use git_diff with paths for the rest." if "git_diff" in served else ""

    @prompt(server)
    async def commit_message(repo_path: str = "") -> str:
        """Draft a conventional commit message for the staged changes."""
        diff = await git.run(repo_path or None, lambda ops, repo: ops.worktree.diff(repo, staged=True))
        if not diff.files:
            return f"Nothing is staged in this repository. {stage}"
        return (
            "Write a commit message for these staged changes, in the conventional-commit form "
            f"'type(scope): summary' (types: {', '.join(get_args(CommitType))}), "
            "a subject under 72 characters, then a blank line and a short body saying why.\n\n"
            f"Files: {', '.join(f.path for f in diff.files)}\n\n{diff.patch or ''}"
            + (f"\n\n(Note: {diff.note})" if diff.note else "")
        )

    @prompt(server)
    async def summarize_changes(repo_path: str = "", since: str = "1 week ago") -> str:
        """Summarise the recent history of a repository."""
        name, log = await git.run(
            repo_path or None,
            lambda ops, repo: (repo.name, ops.history.log(repo, max_count=200, since=since)),
        )
        lines = "\n".join(f"- {c.sha[:10]} {c.date[:10]} {c.author}: {c.subject}" for c in log.commits)
        return (
            f"Summarise what changed in {name} since {since}: group the commits by theme, name the "
            "notable features and fixes, and say who worked on what."
            + (" Use git_show on a commit for detail." if "git_show" in served else "")
            + "\n\n"
            f"Commits ({len(log.commits)}{'+' if log.next_skip is not None else ''}):\n{lines or '(none)'}"
        )

    @prompt(server)
    async def review_branch(branch: str, base: str = "main", repo_path: str = "") -> str:
        """Review a branch against its base: what it changes, risks, and suggestions."""
        name, diff, log = await git.run(
            repo_path or None,
            lambda ops, repo: (
                repo.name,
                ops.worktree.diff(repo, base=base, target=branch),
                ops.history.log(repo, max_count=100, revision_range=f"{base}..{branch}"),
            ),
        )
        commits = "\n".join(f"- {c.sha[:10]} {c.subject}" for c in log.commits)
        return (
            f"Review branch {branch} against {base} in {name} as a careful senior engineer: summarise the "
            "change, then list bugs, risks, missing tests and style issues, each with file and line, most "
            "important first.\n\n"
            f"Commits:\n{commits or '(none)'}\n\nFiles: {', '.join(f.path for f in diff.files)}\n\n{diff.patch or ''}"
            + (f"\n\n(Note: {diff.note}{rest})" if diff.note else "")
        )
