"""Read-only access to a repository's GitHub pull requests and issues (PyGithub).

The token comes from an environment variable and lives only inside the PyGithub client: it is never
part of a result, an error or a log line. Text written by other people (titles, bodies, comments, patches)
is returned inside ``<untrusted-data>`` markers, so a model can tell data from instructions.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlparse

from github import Auth, Github, GithubException, RateLimitExceededException
from pydantic import BaseModel, Field

from dockyard_shared import InvalidArgument, NotFound, PermissionDenied, UpstreamUnavailable, bound_text

__all__ = ["GitHubReader", "github_slug", "untrusted"]

T = TypeVar("T")
PER_PAGE = 30


def untrusted(text: str | None, source: str) -> str:
    """``text`` fenced as data; a marker inside it cannot close the fence early."""
    body = (
        (text or "")
        .replace("<untrusted-data", "<\u200buntrusted-data")
        .replace("</untrusted-data", "<\u200b/untrusted-data")
    )
    return f'<untrusted-data source="{source}">\n{body}\n</untrusted-data>'


def github_slug(remote_urls: list[str], extra_hosts: set[str]) -> str | None:
    """``owner/name`` of the first remote on github.com (or an allowed GitHub Enterprise host)."""
    hosts = {"github.com", "www.github.com", *extra_hosts}
    for url in remote_urls:
        match = re.match(r"^(?:ssh://)?git@([^:/]+)[:/](.+?)(?:\.git)?/?$", url)
        if match:
            host, path = match.groups()
        else:
            parsed = urlparse(url)
            host, path = parsed.hostname or "", parsed.path.strip("/").removesuffix(".git")
        parts = path.split("/")
        if host.lower() in hosts and len(parts) == 2 and all(re.fullmatch(r"[\w.-]+", p) for p in parts):
            return f"{parts[0]}/{parts[1]}"
    return None


class PullSummary(BaseModel):
    number: int
    title: str = Field(description="untrusted text, fenced")
    state: str
    draft: bool
    author: str | None
    head: str
    base: str
    created_at: str | None
    updated_at: str | None
    url: str


class IssueSummary(BaseModel):
    number: int
    title: str = Field(description="untrusted text, fenced")
    state: str
    author: str | None
    labels: list[str]
    comments: int
    created_at: str | None
    updated_at: str | None
    url: str


class Page(BaseModel):
    repository: str = Field(description="owner/name on GitHub")
    page: int
    per_page: int
    has_more: bool
    note: str | None = None


class PullList(Page):
    pull_requests: list[PullSummary]


class IssueList(Page):
    issues: list[IssueSummary]


class CheckResult(BaseModel):
    name: str
    status: str
    conclusion: str | None


class ChangedFile(BaseModel):
    filename: str
    status: str
    additions: int
    deletions: int
    patch: str | None = Field(description="untrusted, fenced, cut at the per-file budget")


class PullDetail(BaseModel):
    repository: str
    number: int
    title: str
    body: str
    state: str
    merged: bool
    draft: bool
    author: str | None
    head: str
    base: str
    head_sha: str
    combined_status: str | None
    checks: list[CheckResult]
    files: list[ChangedFile]
    files_truncated: bool
    note: str | None = None


class Comment(BaseModel):
    author: str | None
    created_at: str | None
    body: str


class IssueDetail(BaseModel):
    repository: str
    number: int
    title: str
    body: str
    state: str
    author: str | None
    labels: list[str]
    comments: list[Comment]
    comments_page: int
    has_more_comments: bool
    note: str | None = None


def _translated(what: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Run a reading method under :meth:`GitHubReader._call`: PyGithub loads lazily, so an HTTP
    error can surface at any attribute access, not only at the first request."""

    def decorate(method: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(method)
        def wrapper(self: GitHubReader, slug: str, *args: Any, **kwargs: Any) -> T:
            label = what.format(number=args[0] if args else kwargs.get("number"))
            return self._call(label, lambda: method(self, slug, *args, **kwargs))

        return wrapper

    return decorate


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat() if value else None


class GitHubReader:
    def __init__(self, token: str, api_url: str, *, token_env: str, timeout: int = 15) -> None:
        self._client = Github(
            auth=Auth.Token(token), base_url=api_url, timeout=timeout, retry=None, per_page=PER_PAGE
        )
        self.token_env = token_env
        host = (urlparse(api_url).hostname or "").lower()
        self.extra_hosts = set() if host in ("api.github.com", "") else {host.removeprefix("api.")}
        if host in ("127.0.0.1", "localhost"):
            self.extra_hosts.add(host)

    def _call(self, what: str, work: Callable[[], T]) -> T:
        try:
            return work()
        except RateLimitExceededException as error:
            raise self._rate_limited(error) from None
        except GithubException as error:
            status = error.status
            headers = error.headers or {}
            if status == 401:
                raise PermissionDenied(
                    f"GitHub rejected the token while reading {what} (401 Bad credentials).",
                    next_step=f"Tell the user to check the token in ${self.token_env} (expired or revoked?).",
                ) from None
            if status in (403, 429) and (
                headers.get("x-ratelimit-remaining") == "0" or "retry-after" in headers or status == 429
            ):
                raise self._rate_limited(error) from None
            if status == 403:
                raise PermissionDenied(
                    f"GitHub refused access to {what} (403).",
                    next_step=f"The token in ${self.token_env} may lack the 'repo' scope for this repository.",
                ) from None
            if status == 404:
                raise NotFound(
                    f"GitHub has no {what} (404), or the token cannot see it.",
                    next_step="Check the number with the list tool; private repositories need a token with access.",
                ) from None
            raise UpstreamUnavailable(
                f"GitHub answered {status} while reading {what}.", next_step="Retry shortly."
            ) from None
        except (OSError, ValueError) as error:
            raise UpstreamUnavailable(
                f"GitHub could not be reached while reading {what} ({type(error).__name__}).",
                next_step="Retry shortly.",
            ) from None

    def _rate_limited(self, error: GithubException) -> UpstreamUnavailable:
        headers = error.headers or {}
        reset = headers.get("x-ratelimit-reset")
        when = ""
        if reset and reset.isdigit():
            when = f" It resets at {datetime.fromtimestamp(int(reset), UTC).isoformat()}."
        elif headers.get("retry-after"):
            when = f" Retry after {headers['retry-after']} seconds."
        return UpstreamUnavailable(
            f"GitHub's rate limit is exhausted.{when}",
            retryable=True,
            next_step="Wait until the reset time, then retry; meanwhile use the local git tools.",
        )

    def _repo(self, slug: str) -> Any:
        return self._client.get_repo(slug)

    @_translated("the pull requests")
    def pull_requests(
        self, slug: str, *, state: str, base: str | None, head: str | None, page: int
    ) -> PullList:
        per_page = PER_PAGE
        _check_page(page)
        kwargs: dict[str, Any] = {"state": state}
        if base:
            kwargs["base"] = base
        if head:
            kwargs["head"] = head

        def fetch() -> list[Any]:
            pulls = self._repo(slug).get_pulls(**kwargs)
            return list(pulls.get_page(page - 1))

        items = self._call("the pull requests", fetch)
        summaries = [
            PullSummary(
                number=p.number,
                title=untrusted(p.title, f"title of pull request #{p.number}"),
                state=p.state,
                draft=bool(p.draft),
                author=p.user.login if p.user else None,
                head=p.head.ref,
                base=p.base.ref,
                created_at=_iso(p.created_at),
                updated_at=_iso(p.updated_at),
                url=p.html_url,
            )
            for p in items
        ]
        more = len(items) >= per_page
        return PullList(
            repository=slug,
            page=page,
            per_page=per_page,
            has_more=more,
            pull_requests=summaries,
            note=f"There may be more: call again with page={page + 1}." if more else None,
        )

    @_translated("pull request #{number}")
    def pull_request(
        self, slug: str, number: int, *, max_patch_chars: int = 4_000, max_files: int = 100
    ) -> PullDetail:
        pull = self._call(f"pull request #{number}", lambda: self._repo(slug).get_pull(number))
        head_sha = pull.head.sha

        def statuses() -> tuple[str | None, list[CheckResult]]:
            commit = self._repo(slug).get_commit(head_sha)
            combined = commit.get_combined_status()
            checks = [
                CheckResult(name=s.context, status=s.state, conclusion=s.state) for s in combined.statuses
            ]
            checks += [
                CheckResult(name=c.name, status=c.status, conclusion=c.conclusion)
                for c in commit.get_check_runs()
            ]
            return combined.state, checks

        combined_state, checks = self._call(f"the checks of pull request #{number}", statuses)
        files_iter = self._call(
            f"the files of pull request #{number}", lambda: list(pull.get_files()[: max_files + 1])
        )
        files = []
        for f in files_iter[:max_files]:
            patch = None
            if f.patch is not None:
                cut = bound_text(f.patch, max_patch_chars)
                patch = untrusted(
                    cut.text
                    + ("\n[… patch cut; see the file locally with git_diff]" if cut.truncated else ""),
                    f"patch of {f.filename}",
                )
            files.append(
                ChangedFile(
                    filename=f.filename,
                    status=f.status,
                    additions=f.additions,
                    deletions=f.deletions,
                    patch=patch,
                )
            )
        truncated = len(files_iter) > max_files
        return PullDetail(
            repository=slug,
            number=pull.number,
            title=untrusted(pull.title, f"title of pull request #{number}"),
            body=untrusted(pull.body, f"body of pull request #{number}"),
            state=pull.state,
            merged=bool(pull.merged),
            draft=bool(pull.draft),
            author=pull.user.login if pull.user else None,
            head=pull.head.ref,
            base=pull.base.ref,
            head_sha=head_sha,
            combined_status=combined_state,
            checks=checks,
            files=files,
            files_truncated=truncated,
            note=f"Only the first {max_files} files are listed; check out the branch and use git_diff for the rest."
            if truncated
            else None,
        )

    @_translated("the issues")
    def issues(self, slug: str, *, state: str, labels: list[str] | None, page: int) -> IssueList:
        per_page = PER_PAGE
        _check_page(page)

        def fetch() -> list[Any]:
            repo = self._repo(slug)
            listing = repo.get_issues(state=state, labels=labels or [])
            return list(listing.get_page(page - 1))

        raw = self._call("the issues", fetch)
        issues = [
            IssueSummary(
                number=i.number,
                title=untrusted(i.title, f"title of issue #{i.number}"),
                state=i.state,
                author=i.user.login if i.user else None,
                labels=[label.name for label in i.labels],
                comments=i.comments,
                created_at=_iso(i.created_at),
                updated_at=_iso(i.updated_at),
                url=i.html_url,
            )
            for i in raw
            if i.pull_request is None  # GitHub lists pull requests among issues; they have their own tools
        ]
        more = len(raw) >= per_page
        return IssueList(
            repository=slug,
            page=page,
            per_page=per_page,
            has_more=more,
            issues=issues,
            note=f"There may be more: call again with page={page + 1}." if more else None,
        )

    @_translated("issue #{number}")
    def issue(self, slug: str, number: int, *, comments_page: int = 1) -> IssueDetail:
        per_page = PER_PAGE
        _check_page(comments_page)
        issue = self._call(f"issue #{number}", lambda: self._repo(slug).get_issue(number))

        def fetch_comments() -> list[Any]:
            listing = issue.get_comments()
            return list(listing.get_page(comments_page - 1))

        raw = self._call(f"the comments of issue #{number}", fetch_comments)
        comments = [
            Comment(
                author=c.user.login if c.user else None,
                created_at=_iso(c.created_at),
                body=untrusted(bound_text(c.body or "", 8_000).text, f"comment {c.id} on issue #{number}"),
            )
            for c in raw
        ]
        more = len(raw) >= per_page
        return IssueDetail(
            repository=slug,
            number=issue.number,
            title=untrusted(issue.title, f"title of issue #{number}"),
            body=untrusted(bound_text(issue.body or "", 20_000).text, f"body of issue #{number}"),
            state=issue.state,
            author=issue.user.login if issue.user else None,
            labels=[label.name for label in issue.labels],
            comments=comments,
            comments_page=comments_page,
            has_more_comments=more,
            note=f"More comments may exist: call again with comments_page={comments_page + 1}."
            if more
            else None,
        )


def _check_page(page: int) -> None:
    if page < 1 or page > 1000:
        raise InvalidArgument("page must be between 1 and 1000.")
