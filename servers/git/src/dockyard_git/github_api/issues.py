"""A repository's issues, read from GitHub: one page of them (pull requests left out), or one with a
page of its comments (their bodies sharing what the reply leaves)."""

from __future__ import annotations

from typing import Any

from dockyard_shared.words import plural

from ..settings import (
    MAX_COMMENT_CHARS,
    MAX_COMMENTS_CHARS,
    MAX_LABELS,
    MAX_LABELS_IN_LIST,
    PER_PAGE,
    REPLY_BUDGET,
)
from .client import GitHubClient, check_page, translated
from .fields import (
    at,
    fitting,
    iso,
    join_notes,
    json_size,
    label_fields,
    largest_fitting,
    listed_title,
    login_field,
    next_page,
    shared_out,
    title_and_body,
    url_of,
)
from .models import Comment, IssueDetail, IssueList, IssueSummary

__all__ = ["IssueReading"]


def _is_pull_request(issue: Any) -> bool:
    """Whether a listed issue is a pull request: only those have a ``pull_request`` key. Reading the
    ``pull_request`` attribute of any other issue would make PyGithub fetch that issue again (one
    request per issue on the page), so the listed JSON is checked first."""
    raw = getattr(issue, "_rawData", None)
    if isinstance(raw, dict):
        return raw.get("pull_request") is not None
    return issue.pull_request is not None


class IssueReading:
    """The issue half of :class:`.GitHubReader`."""

    def __init__(self, client: GitHubClient) -> None:
        self.client = client

    @translated("the issues")
    def issues(self, slug: str, *, state: str, labels: list[str] | None, page: int) -> IssueList:
        check_page(page)

        def fetch() -> list[Any]:
            repo = self.client.repo(slug)
            listing = repo.get_issues(state=state, labels=labels or [])
            return list(listing.get_page(page - 1))

        raw = self.client.call("the issues", fetch)
        issues = []
        for i in raw:
            if _is_pull_request(i):  # GitHub lists pull requests among issues; they have their own tools
                continue
            n, url, title = listed_title(i, "issue")
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
        more, notes = next_page(len(raw), page)
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

    @translated("issue #{number}")
    def issue(self, slug: str, number: int, *, comments_page: int = 1) -> IssueDetail:
        check_page(comments_page)
        issue = self.client.call(f"issue #{number}", lambda: self.client.repo(slug).get_issue(number))
        url = url_of(issue.html_url)
        total = int(issue.comments or 0)
        notes: list[str] = []

        def fetch_comments() -> list[Any]:
            if (comments_page - 1) * PER_PAGE >= total:
                return []
            return list(issue.get_comments().get_page(comments_page - 1))

        raw = self.client.call(f"the comments of issue #{number}", fetch_comments)

        def with_comments(budget: int) -> tuple[list[Comment], int]:
            """The comments, their bodies sharing ``budget`` characters fairly; and how many were cut."""
            start = (comments_page - 1) * PER_PAGE + 1
            urls = [url_of(c.html_url) or url for c in raw]
            bodies, cut_comments = shared_out(
                [c.body or "" for c in raw],
                budget,
                MAX_COMMENT_CHARS,
                source=lambda i: f"comment {start + i} on issue #{number}",
                rest=lambda i: f"read the whole comment {at(urls[i])}",
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
            notes.append(f"{hidden} more {'label is' if hidden == 1 else 'labels are'} {at(url)}.")

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
                f"{plural(cut_comments, 'comment')} cut (each at most {MAX_COMMENT_CHARS:,} characters, {budget:,} "
                "in all on a page); each cut one says where to read it whole."
            ]
            return reply(comments, [*notes, *cut] if cut_comments else notes)

        return largest_fitting(
            reply_with,
            min(MAX_COMMENTS_CHARS, REPLY_BUDGET - json_size(reply(bare, notes)) - 300 * len(raw)),
        )
