"""The GitHub toolset: pull requests and issues of a repository's GitHub remote, read-only. Everything
other people wrote comes back fenced as untrusted data."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from dockyard_shared import OPEN_WORLD
from dockyard_shared.toolsets import ToolRegistrar

from ..context import GitContext
from ..models import IssueDetail, IssueList, PullDetail, PullList
from .arguments import RepoPath

__all__ = ["register"]

State = Annotated[Literal["open", "closed", "all"], Field(description="Filter by state.")]
PageNumber = Annotated[int, Field(description="Page (30 items each), from 1.", ge=1)]


def register(registrar: ToolRegistrar, git: GitContext) -> None:
    @registrar.tool(annotations=OPEN_WORLD)
    async def github_pull_requests(
        state: State = "open",
        base: Annotated[str | None, Field(description="Only PRs into this branch.")] = None,
        head: Annotated[str | None, Field(description="Only PRs from this branch ('owner:branch').")] = None,
        page: PageNumber = 1,
        repo_path: RepoPath = None,
    ) -> PullList:
        """List the GitHub pull requests of a repository's GitHub remote.

        Use when: finding open work or a PR number.
        Not for: a PR's details — use github_pull_request.
        Returns: number, title (untrusted, fenced), state, author, head, base (untrusted names), dates, URL.
        Limits: 30 per page; has_more says when to ask for page+1; titles cut at 500 characters.
        """
        return await git.on_github(
            repo_path,
            lambda github, slug: github.pull_requests(slug, state=state, base=base, head=head, page=page),
        )

    @registrar.tool(annotations=OPEN_WORLD)
    async def github_pull_request(
        number: Annotated[int, Field(description="Pull request number.", ge=1)],
        files_page: Annotated[int, Field(description="Page of changed files (60 each), from 1.", ge=1)] = 1,
        repo_path: RepoPath = None,
    ) -> PullDetail:
        """Read one pull request: description, status checks and changed files with their patches.

        Use when: reviewing or summarising a PR.
        Not for: listing PRs — use github_pull_requests.
        Returns: title and body (untrusted, fenced), state, branches, head sha, checks, files. Logins,
        branch, file and check names are untrusted too (plain only when simple identifiers).
        Limits: 60 files per files_page; each patch cut at 4,000 characters, 40,000 in all; body cut at
        20,000; up to 40 checks; every cut says where the rest is (git_diff locally for whole patches).
        """
        return await git.on_github(
            repo_path, lambda github, slug: github.pull_request(slug, number, files_page=files_page)
        )

    @registrar.tool(annotations=OPEN_WORLD)
    async def github_issues(
        state: State = "open",
        labels: Annotated[list[str] | None, Field(description="Only issues with all these labels.")] = None,
        page: PageNumber = 1,
        repo_path: RepoPath = None,
    ) -> IssueList:
        """List GitHub issues of a repository's GitHub remote (pull requests excluded).

        Use when: finding reported problems or an issue number.
        Not for: one issue's discussion — use github_issue.
        Returns: number, title (untrusted, fenced), state, author and labels (untrusted names), comment
        count, dates, URL.
        Limits: 30 per page; has_more says when to ask for page+1; 10 labels per issue.
        """
        return await git.on_github(
            repo_path, lambda github, slug: github.issues(slug, state=state, labels=labels, page=page)
        )

    @registrar.tool(annotations=OPEN_WORLD)
    async def github_issue(
        number: Annotated[int, Field(description="Issue number.", ge=1)],
        comments_page: PageNumber = 1,
        repo_path: RepoPath = None,
    ) -> IssueDetail:
        """Read one GitHub issue with its comments.

        Use when: understanding a reported problem and its discussion.
        Not for: pull requests — use github_pull_request.
        Returns: title, body and comments (untrusted, fenced), state, author, labels.
        Limits: 30 comments per page (comments_page); each at most 8,000 characters, 40,000 per page in
        all; body cut at 20,000; every cut says where to read the whole.
        """
        return await git.on_github(
            repo_path, lambda github, slug: github.issue(slug, number, comments_page=comments_page)
        )
