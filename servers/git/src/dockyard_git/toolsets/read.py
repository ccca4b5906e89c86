"""The read toolset: what a local repository holds — status, history, diffs, blame, branches, tags, grep."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field

from dockyard_shared import READ_ONLY
from dockyard_shared.results import linked_result, model_result
from dockyard_shared.schema import optional
from dockyard_shared.toolsets import ToolRegistrar

from ..context import GitContext
from ..models import (
    BlameResult,
    BranchList,
    CommitField,
    DiffResult,
    GrepResult,
    LogResult,
    RepositoryList,
    ShowResult,
    StatusResult,
    TagList,
)
from ..resources import RESOURCE_FILE_CHARS, file_uri
from .arguments import Paths, RepoPath

__all__ = ["register"]

Text = Annotated[str | None, optional("string")]


def register(registrar: ToolRegistrar, git: GitContext) -> None:
    @registrar.tool(annotations=READ_ONLY)
    async def git_repositories() -> RepositoryList:
        """List the served repositories with their branch and whether they have changes.

        Use when: starting out, or a tool asks for repo_path.
        Not for: one repository's state (git_status).
        Returns: path (the repo_path to pass), name, bare, branch, dirty.
        Limits: 500, found up to 3 folders deep under the roots.
        """
        return await git.list_repositories()

    @registrar.tool(annotations=READ_ONLY)
    async def git_status(repo_path: RepoPath = None) -> StatusResult:
        """Working tree state: branch, upstream, ahead/behind; staged, unstaged, untracked, conflicted files.

        Use when: before committing, or to see what changed locally.
        Not for: the changes themselves (git_diff).
        Returns: file lists with git's status letters.
        Limits: 300 entries per list.
        """
        return await git.run(repo_path, lambda ops, repo: ops.worktree.status(repo))

    @registrar.tool(annotations=READ_ONLY)
    async def git_log(
        repo_path: RepoPath = None,
        max_count: Annotated[int | None, optional("integer", "-1: as many as allowed.")] = None,
        skip: Annotated[int, Field(description="From next_skip.", ge=0)] = 0,
        revision_range: Annotated[str | None, optional("string", "E.g. main..feature.")] = None,
        paths: Paths = None,
        author: Annotated[str | None, optional("string", "Pattern.")] = None,
        since: Annotated[str | None, optional("string", "Date, e.g. 2024-01-31 or '2 weeks ago'.")] = None,
        until: Annotated[str | None, optional("string", "Date.")] = None,
        grep: Annotated[str | None, optional("string", "Message pattern.")] = None,
        fields: Annotated[
            list[CommitField] | None,
            optional(
                "array",
                "Besides sha; default: date, author, subject.",
                items={"enum": list(get_args(CommitField))},
            ),
        ] = None,
    ) -> LogResult:
        """List commits, newest first, filtered by range, paths, author, date or message.

        Use when: finding when or by whom something changed, or reading recent history.
        Not for: a commit's changes (git_show).
        Returns: commits (sha and the fields asked for); next_skip when more match.
        Limits: 50 commits unless max_count says, 1000 at most.
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
        return model_result(result, exclude_none=True)  # type: ignore[return-value]

    @registrar.tool(annotations=READ_ONLY)
    async def git_diff(
        repo_path: RepoPath = None,
        staged: Annotated[bool, Field(description="Instead of unstaged.")] = False,
        base: Annotated[str | None, optional("string", "Against target or the work tree.")] = None,
        target: Text = None,
        paths: Paths = None,
        context_lines: Annotated[int, Field(ge=0, le=50)] = 3,
        mode: Literal["patch", "stat", "name_only"] = "patch",
    ) -> DiffResult:
        """Show changes (unstaged, staged, or base to target) as a patch, line counts or names.

        Use when: reviewing changes before a commit, or between two revisions.
        Not for: one commit's changes (git_show).
        Returns: the changed files with status and line counts; in patch mode the unified diff.
        Limits: patches cut at 12,000 characters a file, 60,000 in all (the note names the cuts); on big
        changes use mode=stat first, then paths.
        """
        return await git.run(
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

    @registrar.tool(annotations=READ_ONLY)
    async def git_show(
        revision: Annotated[str, Field(description="Commit, tag, HEAD~2…, or REV:PATH.")] = "HEAD",
        path: Annotated[str | None, optional("string", "A file, as of the revision.")] = None,
        offset: Annotated[int, Field(description="From next_offset.", ge=0)] = 0,
        repo_path: RepoPath = None,
    ) -> ShowResult:
        """Show a commit (message, files, patch) or a file's content at a revision.

        Use when: inspecting one commit, or reading a file as it was.
        Not for: comparing revisions (git_diff).
        Returns: kind=commit with commit, files, patch; or kind=file with content, size.
        Limits: patches cut as in git_diff; content paged by 60,000 characters (next_offset); no binary content.
        """
        shown = await git.run(
            repo_path, lambda ops, repo: ops.history.show(repo, revision=revision, path=path, offset=offset)
        )
        if not (shown.truncated and shown.path and shown.revision_sha):
            # A commit has no content, size or next_offset: not sent as nulls.
            return model_result(shown, exclude_none=True)  # type: ignore[return-value]
        # More than a page: a host that reads resource links can show or attach the whole file at once.
        return linked_result(  # type: ignore[return-value]
            shown,
            uri=file_uri(shown.repository, shown.revision_sha, shown.path),
            name=shown.path,
            description=f"{shown.path} at {shown.revision_sha[:12]}, up to {RESOURCE_FILE_CHARS:,} characters",
            mime_type="text/plain",
            size=shown.size,
            exclude_none=True,
        )

    @registrar.tool(annotations=READ_ONLY)
    async def git_blame(
        path: str,
        start: Annotated[int | None, Field(ge=1), optional("integer", "From 1.", minimum=1)] = None,
        end: Annotated[int | None, Field(ge=1), optional("integer", "Last line.", minimum=1)] = None,
        revision: Annotated[str | None, optional("string", "Instead of the working tree.")] = None,
        repo_path: RepoPath = None,
    ) -> BlameResult:
        """Show who last changed each line of a file, and in which commit.

        Use when: finding where specific lines come from.
        Not for: a file's whole history (git_log with paths).
        Returns: per line: number, sha, author, date (ISO 8601), commit summary, text.
        Limits: 500 lines a call; continue with start/end where the note says.
        """
        return await git.run(
            repo_path,
            lambda ops, repo: ops.history.blame(repo, path=path, start=start, end=end, revision=revision),
        )

    @registrar.tool(annotations=READ_ONLY)
    async def git_branches(
        kind: Literal["local", "remote", "all"] = "local",
        contains: Annotated[str | None, optional("string", "A commit they contain.")] = None,
        repo_path: RepoPath = None,
    ) -> BranchList:
        """List branches with their commit, upstream and last subject; the current one is marked.

        Use when: choosing a branch to compare, check out or review.
        Not for: tags (git_tags).
        Returns: name, kind, sha, current, upstream, subject.
        Limits: 300 branches.
        """
        return await git.run(
            repo_path, lambda ops, repo: ops.history.branches(repo, kind=kind, contains=contains)
        )

    @registrar.tool(annotations=READ_ONLY)
    async def git_tags(repo_path: RepoPath = None) -> TagList:
        """List tags, newest first, with the commit each points to.

        Use when: finding releases or versions.
        Not for: branches (git_branches).
        Returns: name, sha, date, subject.
        Limits: the newest 300.
        """
        return await git.run(repo_path, lambda ops, repo: ops.history.tags(repo))

    @registrar.tool(annotations=READ_ONLY)
    async def git_grep(
        pattern: Annotated[str, Field(description="Extended regular expression.")],
        paths: Paths = None,
        revision: Annotated[str | None, optional("string", "Instead of the working tree.")] = None,
        ignore_case: bool = False,
        max_matches: Annotated[int | None, Field(ge=1), optional("integer", minimum=1)] = None,
        repo_path: RepoPath = None,
    ) -> GrepResult:
        """Search tracked files for a pattern.

        Use when: finding where something is defined or used.
        Not for: searching history (git_log with grep).
        Returns: path, line number and text (cut at 500 characters) of each match.
        Limits: 100 matches unless max_matches says, 200 at most; binary files skipped.
        """
        return await git.run(
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
