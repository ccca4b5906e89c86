"""Why lines exist: their commits (from the local blame) → the pull requests that brought each commit in →
the issues those pull requests close, in one GraphQL query (a second one only for issues a body names
with a closing keyword that GitHub did not link, as when the pull request targets another branch than
the default one)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from dockyard_shared import NotFound

from ..settings import (
    MAX_ORIGIN_BODY_CHARS,
    MAX_ORIGIN_COMMITS,
    MAX_TITLE_CHARS,
    ORIGIN_ISSUES,
    ORIGIN_PULLS,
    REPLY_BUDGET,
)
from .client import GitHubClient
from .fields import at, fenced, join_notes, json_size, name_field, url_of
from .models import CommitOrigin, LineOrigin, LinkedIssue, OriginPull
from .review import split_slug

__all__ = ["BlamedCommit", "OriginReading", "blamed_commits"]

# GitHub's closing keywords (docs: "Linking a pull request to an issue"), for this repository's issues.
_CLOSING = re.compile(r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+#(\d{1,9})\b", re.IGNORECASE)

_ORIGIN = """
fragment origin on Commit {
  associatedPullRequests(first: %(pulls)d) {
    nodes {
      number title state mergedAt url body author { login }
      closingIssuesReferences(first: %(issues)d) { nodes { number title state url body } }
    }
  }
}
"""
_ISSUE = "fragment issue on Issue { number title state url body }"


@dataclass(frozen=True)
class BlamedCommit:
    sha: str
    lines: tuple[int, ...]
    summary: str
    author: str
    date: str


def blamed_commits(lines: list[Any]) -> tuple[list[BlamedCommit], list[str]]:
    """The distinct commits of blamed ``lines`` (``BlameLine``), first seen first, up to MAX_ORIGIN_COMMITS;
    and a note when more were left out."""
    by_sha: dict[str, list[Any]] = {}
    for line in lines:
        by_sha.setdefault(line.sha, []).append(line)
    kept = list(by_sha.items())[:MAX_ORIGIN_COMMITS]
    commits = [
        BlamedCommit(
            sha=sha,
            lines=tuple(b.line for b in blamed),
            summary=blamed[0].summary,
            author=blamed[0].author,
            date=blamed[0].date,
        )
        for sha, blamed in kept
    ]
    notes = []
    if len(by_sha) > len(kept):
        rest = sorted(b.line for _, blamed in list(by_sha.items())[len(kept) :] for b in blamed)
        notes.append(
            f"The lines come from {len(by_sha)} commits; the first {len(kept)} are traced. Lines from the "
            f"others ({_lines(tuple(rest))}): call again with a narrower range."
        )
    return commits, notes


class OriginReading:
    def __init__(self, client: GitHubClient) -> None:
        self.client = client

    def line_origin(self, slug: str, path: str, commits: list[BlamedCommit], notes: list[str]) -> LineOrigin:
        owner, name = split_slug(slug)
        pushed = [c for c in commits if set(c.sha) != {"0"}]
        found: dict[str, Any] = {}
        if pushed:
            params = "".join(f", $c{i}: GitObjectID!" for i in range(len(pushed)))
            fields = " ".join(
                f"c{i}: object(oid: $c{i}) {{ ... on Commit {{ ...origin }} }}" for i in range(len(pushed))
            )
            query = (
                f"query($owner: String!, $name: String!{params}) "
                f"{{ repository(owner: $owner, name: $name) {{ {fields} }} }}"
                + _ORIGIN
                % {"pulls": ORIGIN_PULLS, "issues": ORIGIN_ISSUES}
            )
            variables = {"owner": owner, "name": name, **{f"c{i}": c.sha for i, c in enumerate(pushed)}}
            data = self.client.graphql(f"the pull requests of the commits of {path}", query, variables)
            repository = data.get("repository") or {}
            found = {c.sha: repository.get(f"c{i}") for i, c in enumerate(pushed)}
        named = self._named_issues(owner, name, found, path)
        share = max(200, min(MAX_ORIGIN_BODY_CHARS, REPLY_BUDGET // max(1, 4 * len(commits) * ORIGIN_PULLS)))
        origins = []
        for c in commits:
            node = found.get(c.sha)
            pulls = ((node or {}).get("associatedPullRequests") or {}).get("nodes") or []
            origins.append(
                CommitOrigin(
                    sha=c.sha,
                    lines=list(c.lines),
                    summary=c.summary,
                    author=c.author,
                    date=c.date,
                    on_github=bool(node),
                    pull_requests=[self._pull(p, named, share) for p in pulls if isinstance(p, dict)],
                )
            )
            if set(c.sha) == {"0"}:
                notes.append(f"Line(s) {_lines(c.lines)}: not committed yet.")
            elif not node:
                notes.append(f"GitHub does not know commit {c.sha[:12]} (not pushed yet?).")
            elif not pulls:
                notes.append(f"No pull request brought in commit {c.sha[:12]} (pushed directly?).")
        reply = LineOrigin(repository=slug, path=path, commits=origins, note=join_notes(notes))
        if json_size(reply) > REPLY_BUDGET:  # only with text of unusual width (all quotes): drop bodies
            for origin in reply.commits:
                for pull in origin.pull_requests:
                    pull.body = None
                    for issue in pull.issues:
                        issue.body = None
            reply.note = join_notes([*notes, "Descriptions left out to fit one reply; read them on GitHub."])
        return reply

    def _named_issues(self, owner: str, name: str, found: dict[str, Any], path: str) -> dict[int, Any]:
        """Issues named in a body with a closing keyword that GitHub did not link (up to ORIGIN_ISSUES)."""
        wanted: list[int] = []
        for node in found.values():
            for pull in ((node or {}).get("associatedPullRequests") or {}).get("nodes") or []:
                linked = {
                    i.get("number") for i in (pull.get("closingIssuesReferences") or {}).get("nodes") or []
                }
                for match in _CLOSING.finditer(str(pull.get("body") or "")[:100_000]):
                    number = int(match.group(1))
                    if number not in linked and number not in wanted and number != pull.get("number"):
                        wanted.append(number)
        wanted = wanted[:ORIGIN_ISSUES]
        if not wanted:
            return {}
        params = "".join(f", $i{i}: Int!" for i in range(len(wanted)))
        fields = " ".join(
            f"i{i}: issueOrPullRequest(number: $i{i}) {{ ...issue }}" for i in range(len(wanted))
        )
        query = f"query($owner: String!, $name: String!{params}) {{ repository(owner: $owner, name: $name) {{ {fields} }} }} {_ISSUE}"
        variables = {"owner": owner, "name": name, **{f"i{i}": n for i, n in enumerate(wanted)}}
        try:
            data = self.client.graphql(f"the issues named by pull requests touching {path}", query, variables)
        except NotFound:  # an issue named in a body may not exist: the linked ones still stand
            return {}
        repository = data.get("repository") or {}
        return {n: repository.get(f"i{i}") for i, n in enumerate(wanted) if repository.get(f"i{i}")}

    def _pull(self, pull: dict[str, Any], named: dict[int, Any], share: int) -> OriginPull:
        number = int(pull.get("number") or 0)
        url = url_of(pull.get("url"))
        title, _ = fenced(
            pull.get("title"),
            f"title of pull request #{number}",
            cap=MAX_TITLE_CHARS,
            rest=f"full title {at(url)}",
        )
        body, _ = fenced(
            pull.get("body"), f"body of pull request #{number}", cap=share, rest=f"read the whole {at(url)}"
        )
        linked = [
            i for i in (pull.get("closingIssuesReferences") or {}).get("nodes") or [] if isinstance(i, dict)
        ]
        issues = [self._issue(i, "closes", share // 2) for i in linked]
        for match in _CLOSING.finditer(str(pull.get("body") or "")[:100_000]):
            issue = named.get(int(match.group(1)))
            if issue and all(i.number != issue.get("number") for i in issues) and len(issues) < ORIGIN_ISSUES:
                issues.append(self._issue(issue, "named in body", share // 2))
        return OriginPull(
            number=number,
            title=title,
            state=pull.get("state"),
            merged_at=pull.get("mergedAt"),
            author=name_field(
                (pull.get("author") or {}).get("login"), f"author of pull request #{number}", where=at(url)
            ),
            url=url,
            body=body,
            issues=issues,
        )

    def _issue(self, issue: dict[str, Any], how: str, share: int) -> LinkedIssue:
        number = int(issue.get("number") or 0)
        url = url_of(issue.get("url"))
        title, _ = fenced(
            issue.get("title"), f"title of issue #{number}", cap=MAX_TITLE_CHARS, rest=f"full title {at(url)}"
        )
        body, _ = fenced(
            issue.get("body"), f"body of issue #{number}", cap=share, rest=f"read the whole {at(url)}"
        )
        return LinkedIssue(number=number, title=title, state=issue.get("state"), url=url, how=how, body=body)


def _lines(lines: tuple[int, ...]) -> str:
    return ", ".join(map(str, lines[:10])) + ("…" if len(lines) > 10 else "")
