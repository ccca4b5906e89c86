"""A pull request's review threads (GraphQL: REST has no threads, nor whether one is resolved), and the
github_write toolset's actions: a comment on a pull request or issue, a reply in a review thread, and
resolving or unresolving one.

A thread is named by its GraphQL node id, which names nothing about its repository: before acting on one,
the thread is looked up and refused unless it belongs to the repository the tool was called for, so a
model cannot be steered into writing on another repository the token reaches.
"""

from __future__ import annotations

import re
from typing import Any

from dockyard_shared import InvalidArgument, PermissionDenied

from ..settings import (
    COMMENTS_PER_THREAD,
    MAX_COMMENT_CHARS,
    MAX_COMMENTS_CHARS,
    MAX_PATH_CHARS,
    MAX_POST_CHARS,
    REPLY_BUDGET,
    THREADS_PER_PAGE,
)
from .client import GitHubClient
from .fields import at, join_notes, json_size, largest_fitting, name_field, shared_out, url_of
from .models import Posted, ReviewThread, ReviewThreads, ThreadComment

__all__ = ["ReviewReading", "ReviewWriting"]

_NODE_ID = re.compile(r"[A-Za-z0-9_=-]{1,200}")
_CURSOR = re.compile(r"[A-Za-z0-9+/=_:.-]{1,300}")

THREADS_QUERY = """
query($owner: String!, $name: String!, $number: Int!, $first: Int!, $after: String, $comments: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      url
      reviewThreads(first: $first, after: $after) {
        totalCount
        pageInfo { hasNextPage endCursor }
        nodes {
          id isResolved isOutdated path line startLine
          resolvedBy { login }
          comments(first: $comments) { totalCount nodes { author { login } body createdAt url } }
        }
      }
    }
  }
}
"""

THREAD_OWNER_QUERY = """
query($id: ID!) {
  node(id: $id) {
    __typename
    ... on PullRequestReviewThread { isResolved pullRequest { number url repository { nameWithOwner } } }
  }
}
"""

REPLY_MUTATION = """
mutation($id: ID!, $body: String!) {
  addPullRequestReviewThreadReply(input: {pullRequestReviewThreadId: $id, body: $body}) { comment { url } }
}
"""

RESOLVE_MUTATION = """
mutation($id: ID!) { %s(input: {threadId: $id}) { thread { id isResolved } } }
"""


def split_slug(slug: str) -> tuple[str, str]:
    owner, name = slug.split("/", 1)
    return owner, name


def _node_id(value: object) -> str:
    text = str(value or "")
    return text if _NODE_ID.fullmatch(text) else ""


class ReviewReading:
    """Review threads of one pull request, read through GraphQL."""

    def __init__(self, client: GitHubClient) -> None:
        self.client = client

    def review_threads(
        self, slug: str, number: int, *, after: str | None = None, include_resolved: bool = False
    ) -> ReviewThreads:
        if after is not None and not _CURSOR.fullmatch(after):
            raise InvalidArgument("after must be the next_cursor of a previous github_review_threads reply.")
        owner, name = split_slug(slug)
        variables = {
            "owner": owner,
            "name": name,
            "number": number,
            "first": THREADS_PER_PAGE,
            "after": after,
            "comments": COMMENTS_PER_THREAD,
        }
        what = f"the review threads of pull request #{number}"
        data = self.client.graphql(what, THREADS_QUERY, variables)
        pull = (data.get("repository") or {}).get("pullRequest") or {}
        url = url_of(pull.get("url"))
        connection = pull.get("reviewThreads") or {}
        nodes = [n for n in connection.get("nodes") or [] if isinstance(n, dict)]
        shown = [n for n in nodes if include_resolved or not n.get("isResolved")]
        page_info = connection.get("pageInfo") or {}
        cursor = str(page_info.get("endCursor") or "")
        next_cursor = cursor if page_info.get("hasNextPage") and _CURSOR.fullmatch(cursor) else None
        notes: list[str] = []
        if next_cursor:
            notes.append(f"More threads: call again with after={next_cursor!r}.")
        if len(shown) < len(nodes):
            notes.append(
                f"{len(nodes) - len(shown)} resolved thread(s) on this page left out; include_resolved=true "
                "shows them."
            )
        raw = [
            (t, c)
            for t in shown
            for c in ((t.get("comments") or {}).get("nodes") or [])
            if isinstance(c, dict)
        ]

        def threads_with(budget: int) -> tuple[list[ReviewThread], int]:
            urls = [url_of(c.get("url")) or url for _, c in raw]
            bodies, cut = shared_out(
                [str(c.get("body") or "") for _, c in raw],
                budget,
                MAX_COMMENT_CHARS,
                source=lambda i: f"review comment {i + 1} of pull request #{number}",
                rest=lambda i: f"read the whole comment {at(urls[i])}",
            )
            by_thread: dict[int, list[ThreadComment]] = {}
            for i, ((thread, comment), body) in enumerate(zip(raw, bodies, strict=True)):
                author = (comment.get("author") or {}).get("login")
                by_thread.setdefault(id(thread), []).append(
                    ThreadComment(
                        author=name_field(author, f"author of review comment {i + 1}", where=at(urls[i])),
                        created_at=comment.get("createdAt"),
                        url=url_of(comment.get("url")),
                        body=body,
                    )
                )
            threads = []
            for index, thread in enumerate(shown, 1):
                comments = thread.get("comments") or {}
                threads.append(
                    ReviewThread(
                        id=_node_id(thread.get("id")),
                        path=name_field(
                            thread.get("path"), f"path of thread {index}", where=at(url), cap=MAX_PATH_CHARS
                        ),
                        line=_int(thread.get("line")),
                        start_line=_int(thread.get("startLine")),
                        resolved=bool(thread.get("isResolved")),
                        outdated=bool(thread.get("isOutdated")),
                        resolved_by=name_field(
                            (thread.get("resolvedBy") or {}).get("login"), "resolver", where=at(url)
                        ),
                        total_comments=_int(comments.get("totalCount")) or 0,
                        comments=by_thread.get(id(thread), []),
                    )
                )
            return threads, cut

        longer = sum(
            (_int((t.get("comments") or {}).get("totalCount")) or 0) > COMMENTS_PER_THREAD for t in shown
        )
        if longer:
            notes.append(
                f"{longer} thread(s) have more than {COMMENTS_PER_THREAD} comments; the first "
                f"{COMMENTS_PER_THREAD} are shown, the rest {at(url, '/files')}."
            )

        def reply(threads: list[ReviewThread], extra: list[str]) -> ReviewThreads:
            return ReviewThreads(
                repository=slug,
                number=number,
                url=url,
                total_threads=_int(connection.get("totalCount")) or 0,
                threads=threads,
                hidden_resolved=len(nodes) - len(shown),
                next_cursor=next_cursor,
                note=join_notes([*notes, *extra]),
            )

        def reply_with(budget: int) -> ReviewThreads:
            threads, cut = threads_with(budget)
            extra = [f"{cut} comment(s) cut; each cut one says where to read it whole."] if cut else []
            return reply(threads, extra)

        bare = reply(threads_with(0)[0], [])
        return largest_fitting(
            reply_with, min(MAX_COMMENTS_CHARS, REPLY_BUDGET - json_size(bare) - 300 * len(raw))
        )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def checked_body(body: str) -> str:
    if not body.strip():
        raise InvalidArgument("body is empty.", next_step="Write the comment's text in body.")
    if len(body) > MAX_POST_CHARS:
        raise InvalidArgument(
            f"body has {len(body):,} characters; GitHub accepts at most {MAX_POST_CHARS:,}.",
            next_step="Shorten it, or split it into several comments.",
        )
    return body


class ReviewWriting:
    """The github_write actions: each names what it did, and where."""

    def __init__(self, client: GitHubClient) -> None:
        self.client = client

    def comment(self, slug: str, number: int, body: str) -> Posted:
        """A comment on pull request or issue ``number`` (GitHub's issue comments serve both)."""
        text = checked_body(body)
        what = f"issue or pull request #{number}"

        def post() -> Any:
            return self.client.repo(slug).get_issue(number).create_comment(text)

        created = self.client.call(what, post, doing="commenting on")
        return Posted(
            repository=slug, done=f"Commented on #{number}.", url=url_of(getattr(created, "html_url", ""))
        )

    def _thread(self, slug: str, thread_id: str) -> dict[str, Any]:
        """The thread ``thread_id`` names, refused unless it is a review thread of ``slug``."""
        if not _NODE_ID.fullmatch(thread_id):
            raise InvalidArgument(
                "thread_id is not a GitHub node id.", next_step="Take the id from github_review_threads."
            )
        data = self.client.graphql(f"review thread {thread_id}", THREAD_OWNER_QUERY, {"id": thread_id})
        node = data.get("node") or {}
        if node.get("__typename") != "PullRequestReviewThread":
            raise InvalidArgument(
                f"{thread_id} is not a review thread.", next_step="Take the id from github_review_threads."
            )
        pull = node.get("pullRequest") or {}
        owner = str((pull.get("repository") or {}).get("nameWithOwner") or "")
        if owner.lower() != slug.lower():
            raise PermissionDenied(
                f"Review thread {thread_id} belongs to another repository, not {slug}.",
                next_step="This tool acts only on the repository repo_path names; list its threads with "
                "github_review_threads.",
            )
        return node

    def reply(self, slug: str, thread_id: str, body: str) -> Posted:
        text = checked_body(body)
        self._thread(slug, thread_id)
        data = self.client.graphql(
            f"review thread {thread_id}", REPLY_MUTATION, {"id": thread_id, "body": text}, doing="replying in"
        )
        comment = ((data.get("addPullRequestReviewThreadReply") or {}).get("comment")) or {}
        return Posted(
            repository=slug,
            done=f"Replied in review thread {thread_id}.",
            url=url_of(comment.get("url")),
            thread_id=thread_id,
        )

    def resolve(self, slug: str, thread_id: str, *, resolved: bool) -> Posted:
        node = self._thread(slug, thread_id)
        verb = "resolve" if resolved else "unresolve"
        pull = node.get("pullRequest") or {}
        url = url_of(pull.get("url"))
        if bool(node.get("isResolved")) == resolved:
            return Posted(
                repository=slug,
                done=f"Review thread {thread_id} was already {verb}d; nothing changed.",
                url=url,
                thread_id=thread_id,
                resolved=resolved,
            )
        mutation = "resolveReviewThread" if resolved else "unresolveReviewThread"
        data = self.client.graphql(
            f"review thread {thread_id}",
            RESOLVE_MUTATION % mutation,
            {"id": thread_id},
            doing=f"{verb[:-1]}ing",
        )
        thread = (data.get(mutation) or {}).get("thread") or {}
        return Posted(
            repository=slug,
            done=f"Review thread {thread_id} {verb}d.",
            url=url,
            thread_id=thread_id,
            resolved=bool(thread.get("isResolved")),
        )
