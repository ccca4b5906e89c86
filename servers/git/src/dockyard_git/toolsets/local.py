"""The read toolset: what a local repository holds — status, history, diffs, blame, branches, tags, grep."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from dockyard_shared import READ_ONLY
from dockyard_shared.results import model_result
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
from ..operations import GitOperations
from .arguments import Paths, RepoPath

__all__ = ["register"]


def register(registrar: ToolRegistrar, git: GitContext) -> None:
    @registrar.tool(annotations=READ_ONLY)
    async def git_repositories() -> RepositoryList:
        """List the git repositories this server serves, with their current branch and whether they have changes.

        Use when: starting out, or when a tool asks for repo_path.
        Not for: details of one repository — use git_status.
        Returns: each repository's path (pass it as repo_path), name, bare flag, branch and dirty state.
        Limits: repositories found under the roots up to 3 folders deep, at most 500.
        """
        return await git.list_repositories()

    @registrar.tool(annotations=READ_ONLY)
    async def git_status(repo_path: RepoPath = None) -> StatusResult:
        """Show the working tree state: branch, upstream, ahead/behind, staged, unstaged, untracked and conflicted files.

        Use when: before committing, or to see what changed locally.
        Not for: the content of changes — use git_diff.
        Returns: structured lists of file changes with git's status letters.
        Limits: each list is cut at 300 entries (truncated says so).
        """
        return await git.run(repo_path, GitOperations.status)

    @registrar.tool(annotations=READ_ONLY)
    async def git_log(
        repo_path: RepoPath = None,
        max_count: Annotated[
            int | None,
            Field(description="Commits to return (default 50, at most 1000; -1 means as many as allowed)."),
        ] = None,
        skip: Annotated[int, Field(description="Commits to skip (for paging: pass next_skip).", ge=0)] = 0,
        revision_range: Annotated[
            str | None, Field(description="A revision or range such as main..feature.")
        ] = None,
        paths: Paths = None,
        author: Annotated[
            str | None, Field(description="Only commits whose author matches this pattern.")
        ] = None,
        since: Annotated[
            str | None, Field(description="Only commits after this date, e.g. 2024-01-31 or '2 weeks ago'.")
        ] = None,
        until: Annotated[str | None, Field(description="Only commits before this date.")] = None,
        grep: Annotated[
            str | None, Field(description="Only commits whose message matches this pattern.")
        ] = None,
        fields: Annotated[
            list[CommitField] | None,
            Field(
                description="Commit fields to return (sha is always included). Default: sha, date, author, "
                "subject. Add email or parents when needed; ['sha', 'subject'] is the cheapest.",
            ),
        ] = None,
    ) -> LogResult:
        """List commits, newest first, optionally filtered by range, path, author, date or message.

        Use when: finding when or by whom something changed, or reviewing recent history.
        Not for: a commit's changes — use git_show.
        Returns: commits with sha, ISO date, author and subject (choose others with fields: email, parents);
        next_skip when more match.
        Limits: 50 commits by default, 1000 per call at most; page with skip=next_skip.
        """
        result = await git.run(
            repo_path,
            lambda ops, repo: ops.log(
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
        staged: Annotated[bool, Field(description="Staged changes instead of unstaged ones.")] = False,
        base: Annotated[
            str | None, Field(description="Compare this revision (with target, or with the working tree).")
        ] = None,
        target: Annotated[str | None, Field(description="Second revision to compare base with.")] = None,
        paths: Paths = None,
        context_lines: Annotated[
            int, Field(description="Unchanged lines around each change.", ge=0, le=50)
        ] = 3,
        mode: Annotated[
            Literal["patch", "stat", "name_only"],
            Field(description="patch: the diff; stat: per-file line counts; name_only: just the files."),
        ] = "patch",
    ) -> DiffResult:
        """Show changes: unstaged (default), staged, or between revisions, as a patch or a summary.

        Use when: reviewing what changed before a commit, or between two revisions.
        Not for: one commit's changes — git_show is simpler.
        Returns: the changed files with status and line counts, and in patch mode the unified diff.
        Limits: each file's patch is cut at 12,000 characters and the whole at 60,000, with a note naming
        what was cut; the file list stays complete. Use mode='stat' first on big changes, then paths.
        """
        return await git.run(
            repo_path,
            lambda ops, repo: ops.diff(
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
        revision: Annotated[
            str, Field(description="A commit (HEAD, a sha, a tag) or REV:PATH for a file's content.")
        ] = "HEAD",
        path: Annotated[
            str | None, Field(description="Show this file's content at the revision instead of the commit.")
        ] = None,
        offset: Annotated[
            int, Field(description="For file content: the character to start from (next_offset).", ge=0)
        ] = 0,
        repo_path: RepoPath = None,
    ) -> ShowResult:
        """Show a commit (message, files with line counts, patch) or a file's content at a revision.

        Use when: inspecting one commit, or reading a file as it was at some revision.
        Not for: comparing arbitrary revisions — use git_diff.
        Returns: kind='commit' with the commit, files and patch; or kind='file' with content and size.
        Limits: patches are cut per file and in total like git_diff; file content is paged 60,000
        characters at a time (next_offset); binary files are not shown.
        """
        return await git.run(
            repo_path, lambda ops, repo: ops.show(repo, revision=revision, path=path, offset=offset)
        )

    @registrar.tool(annotations=READ_ONLY)
    async def git_blame(
        path: Annotated[str, Field(description="File to blame, relative to the repository top.")],
        start: Annotated[int | None, Field(description="First line (1-based).", ge=1)] = None,
        end: Annotated[int | None, Field(description="Last line.", ge=1)] = None,
        revision: Annotated[
            str | None, Field(description="Blame as of this revision (default: working tree).")
        ] = None,
        repo_path: RepoPath = None,
    ) -> BlameResult:
        """Show who last changed each line of a file, and in which commit.

        Use when: finding the origin of specific lines.
        Not for: a file's whole history — use git_log with paths.
        Returns: per line: number, commit sha, author, date (unix time), commit summary and the text.
        Limits: 500 lines per call; give start/end for a range and continue from the note.
        """
        return await git.run(
            repo_path, lambda ops, repo: ops.blame(repo, path=path, start=start, end=end, revision=revision)
        )

    @registrar.tool(annotations=READ_ONLY)
    async def git_branches(
        kind: Annotated[Literal["local", "remote", "all"], Field(description="Which branches.")] = "local",
        contains: Annotated[str | None, Field(description="Only branches that contain this commit.")] = None,
        repo_path: RepoPath = None,
    ) -> BranchList:
        """List branches with their commit, upstream and last subject; the current one is marked.

        Use when: choosing a branch to compare, check out or review.
        Not for: tags — use git_tags.
        Returns: name, local/remote, sha, current flag, upstream and subject of each branch.
        Limits: 300 branches at most.
        """
        return await git.run(repo_path, lambda ops, repo: ops.branches(repo, kind=kind, contains=contains))

    @registrar.tool(annotations=READ_ONLY)
    async def git_tags(repo_path: RepoPath = None) -> TagList:
        """List tags, newest first, with the commit each points to.

        Use when: finding releases or versions.
        Not for: branches — use git_branches.
        Returns: name, commit sha, date and subject of each tag.
        Limits: the newest 300 tags.
        """
        return await git.run(repo_path, GitOperations.tags)

    @registrar.tool(annotations=READ_ONLY)
    async def git_grep(
        pattern: Annotated[str, Field(description="Extended regular expression to search for.")],
        paths: Paths = None,
        revision: Annotated[
            str | None, Field(description="Search this revision instead of the working tree.")
        ] = None,
        ignore_case: bool = False,
        max_matches: Annotated[
            int | None, Field(description="Matches to return (default 100, at most 200).", ge=1)
        ] = None,
        repo_path: RepoPath = None,
    ) -> GrepResult:
        """Search tracked files for a pattern.

        Use when: finding where something is defined or used.
        Not for: searching history — use git_log with grep.
        Returns: matches with path, line number and the line (cut at 500 characters).
        Limits: 100 matches by default, 200 at most; binary files are skipped.
        """
        return await git.run(
            repo_path,
            lambda ops, repo: ops.grep(
                repo,
                pattern=pattern,
                paths=paths,
                revision=revision,
                ignore_case=ignore_case,
                max_matches=max_matches,
            ),
        )
