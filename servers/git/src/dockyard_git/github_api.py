"""Read-only access to a repository's GitHub pull requests and issues (PyGithub).

The token comes from an environment variable and lives only inside the PyGithub client: it is never part of
a result, an error or a log line (PyGithub masks the Authorization header in its debug log).

Everything a GitHub user controls is untrusted (see :mod:`dockyard_shared.untrusted`): free text (titles,
bodies, comments, patches) is always fenced; identifier-like fields (logins, labels, branch, file and check
names) are plain only when simple identifiers. Values GitHub itself generates (numbers, states, dates, SHAs) are plain; URLs
are plain when they look like one and dropped otherwise. Our own words (truncation marks) go after a fence.

Every reply is bounded (caps in :mod:`.settings`), and every cut is marked and says how to get the rest:
lists are one GitHub page (30); caps count the characters a field takes as JSON, so text full of quotes or
backslashes cannot double a reply; comments on a page and patches in a reply share a total budget fairly
(short ones whole, long ones cut evenly), and that budget is what the rest of the reply leaves under
REPLY_BUDGET: with every field hostile and at its cap a reply still stays under 100,000 characters.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlparse

from github import Auth, Github, GithubException, RateLimitExceededException
from pydantic import BaseModel

from dockyard_shared import InvalidArgument, UpstreamUnavailable
from dockyard_shared.upstream import problem_for_status

from .github_fields import (
    at,
    fenced,
    fitting,
    iso,
    join_notes,
    json_size,
    label_fields,
    largest_fitting,
    login_field,
    name_field,
    shared_out,
    title_and_body,
    url_of,
)
from .models import (
    ChangedFile,
    CheckResult,
    Comment,
    IssueDetail,
    IssueList,
    IssueSummary,
    PullDetail,
    PullList,
    PullSummary,
)
from .settings import (
    FILES_PER_REPLY,
    GITHUB_MAX_LISTED_FILES,
    MAX_CHECKS,
    MAX_COMMENT_CHARS,
    MAX_COMMENTS_CHARS,
    MAX_LABELS,
    MAX_LABELS_IN_LIST,
    MAX_PATCH_CHARS,
    MAX_PATCHES_CHARS,
    MAX_PATH_CHARS,
    MAX_TITLE_CHARS,
    PER_PAGE,
    REPLY_BUDGET,
)

__all__ = ["GitHubReader"]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


def _translated(what: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Run a whole reading method under :meth:`GitHubReader._call`: PyGithub loads lazily, so an HTTP
    error can surface at any attribute access, not only in the requests the method wraps in ``_call``
    itself (those name what they were reading more precisely, and their problems pass through here)."""

    def decorate(method: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(method)
        def wrapper(self: GitHubReader, slug: str, *args: Any, **kwargs: Any) -> T:
            label = what.format(number=args[0] if args else kwargs.get("number"))
            return self._call(label, lambda: method(self, slug, *args, **kwargs))

        return wrapper

    return decorate


def _is_pull_request(issue: Any) -> bool:
    """Whether a listed issue is a pull request: only those have a ``pull_request`` key. Reading the
    ``pull_request`` attribute of any other issue would make PyGithub fetch that issue again (one
    request per issue on the page), so the listed JSON is checked first."""
    raw = getattr(issue, "_rawData", None)
    if isinstance(raw, dict):
        return raw.get("pull_request") is not None
    return issue.pull_request is not None


class GitHubReader:
    def __init__(self, token: str, api_url: str, *, token_env: str, timeout: int = 15) -> None:
        self._client = Github(
            auth=Auth.Token(token),
            base_url=api_url,
            timeout=timeout,
            retry=None,
            per_page=PER_PAGE,
            # Lazy: the repository and commit objects are only addresses, so a call costs no extra
            # GET /repos/{slug} and never downloads the head commit with its whole diff.
            lazy=True,
        )
        self.token_env = token_env
        host = (urlparse(api_url).hostname or "").lower()
        self.extra_hosts = set() if host in ("api.github.com", "") else {host.removeprefix("api.")}
        if host in ("127.0.0.1", "localhost"):
            self.extra_hosts.add(host)

    def _call(self, what: str, work: Callable[[], T]) -> T:
        """``work``, with GitHub's refusals and network failures turned into problems for the model."""
        try:
            return work()
        except GithubException as error:
            # PyGithub also raises RateLimitExceededException for a 403 whose quota headers it read itself.
            status = 429 if isinstance(error, RateLimitExceededException) else error.status
            raise problem_for_status(
                status,
                service="GitHub",
                what=f"reading {what}",
                headers=error.headers or {},
                credential_env=self.token_env,
            ) from None
        except (OSError, ValueError) as error:
            raise UpstreamUnavailable(
                f"GitHub could not be reached while reading {what} ({type(error).__name__}).",
                next_step="Retry shortly.",
            ) from None

    def _repo(self, slug: str) -> Any:
        return self._client.get_repo(slug)

    @_translated("the pull requests")
    def pull_requests(
        self, slug: str, *, state: str, base: str | None, head: str | None, page: int
    ) -> PullList:
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
        summaries = []
        for p in items:
            n = int(p.number)
            url = url_of(p.html_url)
            title, _ = fenced(
                p.title, f"title of pull request #{n}", cap=MAX_TITLE_CHARS, rest=f"full title {at(url)}"
            )
            summaries.append(
                PullSummary(
                    number=n,
                    title=title,
                    state=p.state,
                    draft=bool(p.draft),
                    author=login_field(p.user, f"author of pull request #{n}", where=at(url)),
                    head=name_field(p.head.ref, f"head branch of pull request #{n}", where=at(url)) or "",
                    base=name_field(p.base.ref, f"base branch of pull request #{n}", where=at(url)) or "",
                    created_at=iso(p.created_at),
                    updated_at=iso(p.updated_at),
                    url=url,
                )
            )
        more = len(items) >= PER_PAGE
        notes = [f"There may be more: call again with page={page + 1}."] if more else []
        summaries = fitting(summaries, "pull requests", notes)
        return PullList(
            repository=slug,
            page=page,
            per_page=PER_PAGE,
            has_more=more,
            pull_requests=summaries,
            note=join_notes(notes),
        )

    @_translated("pull request #{number}")
    def pull_request(self, slug: str, number: int, *, files_page: int | None = None) -> PullDetail:
        """One pull request. ``files_page`` pages the changed files (:data:`FILES_PER_REPLY` each);
        ``None`` means the calling tool has no such argument, so notes point at the web page only."""
        page = files_page or 1
        _check_page(page)
        pull = self._call(f"pull request #{number}", lambda: self._repo(slug).get_pull(number))
        head_sha = str(pull.head.sha)
        url = url_of(pull.html_url)
        notes: list[str] = []

        title, body = title_and_body(pull, f"pull request #{number}", url, notes)

        def statuses() -> tuple[str | None, list[CheckResult], int]:
            commit = self._repo(slug).get_commit(head_sha)
            combined = commit.get_combined_status()
            listed = list(combined.statuses)
            runs = commit.get_check_runs()
            first_runs = list(runs.get_page(0))
            total = max(int(combined.total_count or 0), len(listed)) + max(
                int(runs.totalCount or 0), len(first_runs)
            )
            # Share the room between commit statuses and check runs, so neither crowds the other out.
            runs_shown = first_runs[: max(MAX_CHECKS // 2, MAX_CHECKS - len(listed))]
            found = [(s.context, s.state, s.state) for s in listed[: MAX_CHECKS - len(runs_shown)]]
            found += [(c.name, c.status, c.conclusion) for c in runs_shown]
            checks = [
                CheckResult(
                    name=name_field(
                        name, f"name of check {i} of pull request #{number}", where=at(url, "/checks")
                    )
                    or "",
                    status=status,
                    conclusion=conclusion,
                )
                for i, (name, status, conclusion) in enumerate(found, 1)
            ]
            return combined.state, checks, total

        combined_state, checks, total_checks = self._call(f"the checks of pull request #{number}", statuses)
        checks_cut = total_checks > len(checks)
        if checks_cut:
            notes.append(
                f"Only {len(checks)} of {total_checks} checks are listed; see them all {at(url, '/checks')}."
            )

        # changed_files is documented on a single pull request; if absent, page fullness decides.
        known = pull.changed_files
        changed = int(known) if isinstance(known, int) else None
        listed_total = (
            min(changed, GITHUB_MAX_LISTED_FILES) if changed is not None else GITHUB_MAX_LISTED_FILES
        )
        first = (page - 1) * FILES_PER_REPLY
        last_page_full = False

        def fetch_files() -> list[Any]:
            nonlocal last_page_full
            listing = pull.get_files()
            found: list[Any] = []
            for github_page in range(first // PER_PAGE, (first + FILES_PER_REPLY) // PER_PAGE):
                if github_page * PER_PAGE >= listed_total:
                    break
                batch = list(listing.get_page(github_page))
                found += batch
                last_page_full = len(batch) >= PER_PAGE
                if not last_page_full:
                    break
            return found[:FILES_PER_REPLY]

        raw_files = (
            self._call(f"the files of pull request #{number}", fetch_files) if first < listed_total else []
        )

        def with_patches(budget: int) -> tuple[list[ChangedFile], int]:
            """The files, their patches sharing ``budget`` characters fairly; and how many were cut."""
            patches, cut_patches = shared_out(
                [f.patch or "" for f in raw_files],
                budget,
                MAX_PATCH_CHARS,
                lambda i, text, share: fenced(
                    text,
                    f"patch of file {first + 1 + i} of pull request #{number}",
                    cap=share,
                    rest=f"patch cut; see the file with git_diff on the checked-out branch or {at(url, '/files')}",
                ),
            )
            files = [
                ChangedFile(
                    filename=name_field(
                        f.filename,
                        f"name of file {index} of pull request #{number}",
                        where=f"in git_diff on the checked-out branch or {at(url, '/files')}",
                        cap=MAX_PATH_CHARS,
                    )
                    or "",
                    status=f.status,
                    additions=f.additions,
                    deletions=f.deletions,
                    patch=patch if f.patch is not None else None,
                )
                for index, (f, patch) in enumerate(zip(raw_files, patches, strict=True), first + 1)
            ]
            return files, cut_patches

        files = [f.model_copy(update={"patch": None}) for f in with_patches(0)[0]]
        shown_to = first + len(files)
        if changed is not None:
            more_files = shown_to < listed_total
            of = f"of {changed}"
        else:
            more_files = len(files) == FILES_PER_REPLY and last_page_full
            of = "of more"
        if more_files:
            how = (
                f"call again with files_page={page + 1}, or see them "
                if files_page is not None
                else "see them "
            )
            notes.append(
                f"Files {first + 1}–{shown_to} {of} are listed; for the rest {how}{at(url, '/files')}."
            )
        elif files_page is not None and not files and page > 1:
            notes.append(f"files_page={page} is past the last file ({changed or 'no'} files changed).")
        beyond_listing = changed is not None and changed > GITHUB_MAX_LISTED_FILES
        if beyond_listing and not more_files:
            notes.append(
                f"GitHub lists only the first {GITHUB_MAX_LISTED_FILES:,} of {changed:,} files; "
                "check out the branch and use git_diff for the others."
            )

        def reply(files: list[ChangedFile], notes: list[str]) -> PullDetail:
            return PullDetail(
                repository=slug,
                number=int(pull.number),
                title=title,
                body=body,
                state=pull.state,
                merged=bool(pull.merged),
                draft=bool(pull.draft),
                author=login_field(pull.user, f"author of pull request #{number}", where=at(url)),
                head=name_field(pull.head.ref, f"head branch of pull request #{number}", where=at(url)) or "",
                base=name_field(pull.base.ref, f"base branch of pull request #{number}", where=at(url)) or "",
                head_sha=head_sha,
                url=url,
                combined_status=combined_state,
                checks=checks,
                checks_truncated=checks_cut,
                changed_files=changed if changed is not None else shown_to,
                files_page=page,
                files=files,
                files_truncated=more_files or beyond_listing,
                note=join_notes(notes),
            )

        # The patches share what the rest of the reply leaves (up to MAX_PATCHES_CHARS), measured as the
        # reply travels: names and text written by others may take more characters as JSON than as text.
        fences = 300 * sum(f.patch is not None for f in raw_files)  # each patch's fence and cut mark

        def reply_with(budget: int) -> PullDetail:
            files, cut_patches = with_patches(budget)
            cut = [
                f"{cut_patches} patch(es) cut (each at most {MAX_PATCH_CHARS:,} characters, {budget:,} in "
                f"all); the full diff is {at(url, '/files')} or from git_diff on the checked-out branch."
            ]
            return reply(files, [*notes, *cut] if cut_patches else notes)

        return largest_fitting(
            reply_with, min(MAX_PATCHES_CHARS, REPLY_BUDGET - json_size(reply(files, notes)) - fences)
        )

    @_translated("the issues")
    def issues(self, slug: str, *, state: str, labels: list[str] | None, page: int) -> IssueList:
        _check_page(page)

        def fetch() -> list[Any]:
            repo = self._repo(slug)
            listing = repo.get_issues(state=state, labels=labels or [])
            return list(listing.get_page(page - 1))

        raw = self._call("the issues", fetch)
        issues = []
        for i in raw:
            if _is_pull_request(i):  # GitHub lists pull requests among issues; they have their own tools
                continue
            n = int(i.number)
            url = url_of(i.html_url)
            title, _ = fenced(
                i.title, f"title of issue #{n}", cap=MAX_TITLE_CHARS, rest=f"full title {at(url)}"
            )
            shown, hidden = label_fields(i, n, "issue", MAX_LABELS_IN_LIST, at(url))
            issues.append(
                IssueSummary(
                    number=n,
                    title=title,
                    state=i.state,
                    author=login_field(i.user, f"author of issue #{n}", where=at(url)),
                    labels=shown,
                    labels_not_shown=hidden,
                    comments=i.comments,
                    created_at=iso(i.created_at),
                    updated_at=iso(i.updated_at),
                    url=url,
                )
            )
        more = len(raw) >= PER_PAGE
        notes = [f"There may be more: call again with page={page + 1}."] if more else []
        issues = fitting(issues, "issues", notes)
        if any(i.labels_not_shown for i in issues):
            notes.append(
                f"Items list at most {MAX_LABELS_IN_LIST} labels (labels_not_shown counts the rest): "
                f"github_issue lists {MAX_LABELS}, the issue's url all."
            )
        return IssueList(
            repository=slug,
            page=page,
            per_page=PER_PAGE,
            has_more=more,
            issues=issues,
            note=join_notes(notes),
        )

    @_translated("issue #{number}")
    def issue(self, slug: str, number: int, *, comments_page: int = 1) -> IssueDetail:
        _check_page(comments_page)
        issue = self._call(f"issue #{number}", lambda: self._repo(slug).get_issue(number))
        url = url_of(issue.html_url)
        total = int(issue.comments or 0)
        notes: list[str] = []

        def fetch_comments() -> list[Any]:
            if (comments_page - 1) * PER_PAGE >= total:
                return []
            return list(issue.get_comments().get_page(comments_page - 1))

        raw = self._call(f"the comments of issue #{number}", fetch_comments)

        def with_comments(budget: int) -> tuple[list[Comment], int]:
            """The comments, their bodies sharing ``budget`` characters fairly; and how many were cut."""
            start = (comments_page - 1) * PER_PAGE + 1
            urls = [url_of(c.html_url) or url for c in raw]
            bodies, cut_comments = shared_out(
                [c.body or "" for c in raw],
                budget,
                MAX_COMMENT_CHARS,
                lambda i, text, share: fenced(
                    text,
                    f"comment {start + i} on issue #{number}",
                    cap=share,
                    rest=f"read the whole comment {at(urls[i])}",
                ),
            )
            comments = [
                Comment(
                    author=login_field(
                        c.user, f"author of comment {start + i} on issue #{number}", where=at(urls[i])
                    ),
                    created_at=iso(c.created_at),
                    url=url_of(c.html_url),
                    body=body,
                )
                for i, (c, body) in enumerate(zip(raw, bodies, strict=True))
            ]
            return comments, cut_comments

        first = (comments_page - 1) * PER_PAGE
        more = first + len(raw) < total and bool(raw)
        if more:
            notes.append(
                f"Comments {first + 1}–{first + len(raw)} of {total} are shown: "
                f"call again with comments_page={comments_page + 1} for more."
            )
        elif not raw and total:
            notes.append(f"comments_page={comments_page} is past the last comment ({total} comments).")
        title, body = title_and_body(issue, f"issue #{number}", url, notes)
        shown, hidden = label_fields(issue, number, "issue", MAX_LABELS, at(url))
        if hidden:
            notes.append(f"{hidden} more label(s) are {at(url)}.")

        def reply(comments: list[Comment], notes: list[str]) -> IssueDetail:
            return IssueDetail(
                repository=slug,
                number=int(issue.number),
                title=title,
                body=body,
                state=issue.state,
                author=login_field(issue.user, f"author of issue #{number}", where=at(url)),
                url=url,
                labels=shown,
                labels_not_shown=hidden,
                comments=comments,
                comments_page=comments_page,
                total_comments=total,
                has_more_comments=more,
                note=join_notes(notes),
            )

        # The comment bodies share what the rest of the reply leaves (up to MAX_COMMENTS_CHARS), measured
        # as the reply travels, as a pull request's patches do.
        bare = [c.model_copy(update={"body": ""}) for c in with_comments(0)[0]]

        def reply_with(budget: int) -> IssueDetail:
            comments, cut_comments = with_comments(budget)
            cut = [
                f"{cut_comments} comment(s) cut (each at most {MAX_COMMENT_CHARS:,} characters, {budget:,} "
                "in all on a page); each cut one says where to read it whole."
            ]
            return reply(comments, [*notes, *cut] if cut_comments else notes)

        return largest_fitting(
            reply_with,
            min(MAX_COMMENTS_CHARS, REPLY_BUDGET - json_size(reply(bare, notes)) - 300 * len(raw)),
        )


def _check_page(page: int) -> None:
    if page < 1 or page > 1000:
        raise InvalidArgument("page must be between 1 and 1000.")
