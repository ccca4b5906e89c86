"""The read toolset: what a local repository holds — status, history, commits, diffs, branches.

Descriptions say each thing once: what repo_path and paths are, and how a bounded reply continues
(``next_skip``/``next_offset``), is in the server's instructions; the limits shared by git_diff and git_show
are stated in git_diff's."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field

from dockyard_shared import READ_ONLY
from dockyard_shared.results import linked_result
from dockyard_shared.schema import optional
from dockyard_shared.toolsets import ToolRegistrar

from ..context import GitContext
from ..models import (
    BranchList,
    CommitField,
    DiffResult,
    LogResult,
    RepositoryList,
    ShowResult,
    StatusResult,
)
from ..resources import RESOURCE_FILE_CHARS, file_uri
from .arguments import Paths, RepoPath
from .replies import lean_result

__all__ = ["register"]

Text = Annotated[str | None, optional("string")]


def register(registrar: ToolRegistrar, git: GitContext) -> None:
    @registrar.tool(annotations=READ_ONLY)
    async def git_repositories() -> RepositoryList:
        """List the served repositories.

        Use when: several are served.
        Not for: one repository's state (git_status).
        Returns: path (a repo_path), name, bare, branch, dirty.
        Limits: 500; 3 folders deep.
        """
        return await git.list_repositories()

    @registrar.tool(annotations=READ_ONLY)
    async def git_status(repo_path: RepoPath = None) -> StatusResult:
        """Working tree state.

        Use when: before a commit; what changed locally.
        Not for: the changes (git_diff).
        Returns: branch, upstream, ahead/behind; staged, unstaged, untracked, conflicted files.
        Limits: 300 a list.
        """
        return await git.run(repo_path, lambda ops, repo: ops.worktree.status(repo))

    @registrar.tool(annotations=READ_ONLY)
    async def git_log(
        repo_path: RepoPath = None,
        max_count: int = 50,
        skip: Annotated[int, Field(ge=0)] = 0,
        revision_range: Text = None,
        paths: Paths = None,
        author: Text = None,
        since: Annotated[str | None, optional("string", "E.g. 2024-01-31, '2 weeks ago'.")] = None,
        until: Text = None,
        grep: Annotated[str | None, optional("string", "In the message.")] = None,
        fields: Annotated[
            list[CommitField] | None, optional("array", items={"enum": list(get_args(CommitField))})
        ] = None,
    ) -> LogResult:
        """List commits, newest first.

        Use when: recent history; when or by whom something changed.
        Not for: a commit's changes (git_show).
        Returns: sha + fields (default date, author, subject).
        Limits: 1000 a call.
        """
        result = await git.run(
            repo_path,
            lambda ops, repo: ops.history.log(
                repo,
                max_count=max_count,
                skip=skip,
                revision_range=revision_range,
                paths=paths,
                author=author,
                since=since,
                until=until,
                grep=grep,
                fields=fields,
            ),
        )
        return lean_result(result)  # type: ignore[return-value]

    @registrar.tool(annotations=READ_ONLY)
    async def git_diff(
        repo_path: RepoPath = None,
        staged: bool = False,
        base: Annotated[str | None, optional("string", "Against target, else the work tree.")] = None,
        target: Text = None,
        paths: Paths = None,
        context_lines: Annotated[int, Field(ge=0, le=50)] = 3,
        mode: Literal["patch", "stat", "name_only"] = "patch",
    ) -> DiffResult:
        """Show unstaged, staged, or base-to-target changes.

        Use when: reviewing work, or comparing revisions.
        Not for: one commit (git_show).
        Returns: files with status and line counts; the patch in patch mode.
        Limits: patches cut at 12,000 characters a file, 60,000 in all; big changes: mode=stat, then paths.
        """
        result = await git.run(
            repo_path,
            lambda ops, repo: ops.worktree.diff(
                repo,
                staged=staged,
                base=base,
                target=target,
                paths=paths,
                context_lines=context_lines,
                mode=mode,
            ),
        )
        return lean_result(result)  # type: ignore[return-value]

    @registrar.tool(annotations=READ_ONLY)
    async def git_show(
        revision: Annotated[str, Field(description="Commit, tag, HEAD~2…, or REV:PATH.")] = "HEAD",
        path: Text = None,
        offset: Annotated[int, Field(ge=0)] = 0,
        repo_path: RepoPath = None,
    ) -> ShowResult:
        """Show a commit, or a file (path) as of a revision.

        Use when: inspecting a commit, or reading an old file.
        Not for: comparing revisions (git_diff).
        Returns: commit, patch (a cut one with its files' line counts); or content, size.
        Limits: patches as git_diff; content paged by 60,000 characters; no binary.
        """
        where: list[str] = []

        def show(ops, repo):
            where.append(str(repo.path))
            return ops.history.show(repo, revision=revision, path=path, offset=offset)

        shown = await git.run(repo_path, show)
        if not (shown.truncated and shown.path and shown.revision_sha):
            return lean_result(shown)  # type: ignore[return-value]
        # More than a page: a host that reads resource links can show or attach the whole file at once.
        return linked_result(  # type: ignore[return-value]
            shown,
            uri=file_uri(where[0], shown.revision_sha, shown.path),
            name=shown.path,
            description=f"{shown.path} at {shown.revision_sha[:12]}, up to {RESOURCE_FILE_CHARS:,} characters",
            mime_type="text/plain",
            size=shown.size,
            exclude_none=True,
        )

    @registrar.tool(annotations=READ_ONLY)
    async def git_branches(
        kind: Literal["local", "remote", "all"] = "local",
        contains: Annotated[str | None, optional("string", "A commit they contain.")] = None,
        repo_path: RepoPath = None,
    ) -> BranchList:
        """List branches.

        Use when: choosing a branch to compare, check out or review.
        Not for: a branch's history (git_log).
        Returns: name, kind, sha, current, upstream, last subject.
        Limits: 300.
        """
        result = await git.run(
            repo_path, lambda ops, repo: ops.history.branches(repo, kind=kind, contains=contains)
        )
        return lean_result(result)  # type: ignore[return-value]
