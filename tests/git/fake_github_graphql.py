"""The GraphQL half of the loopback GitHub fake: POST /graphql, executed for real (graphql-core) against a
subset of GitHub's public schema, with GitHub's answers:

* the types, fields and arguments below are spelled as in GitHub's schema (``reviewThreads``,
  ``closingIssuesReferences``, ``associatedPullRequests``, ``resolveReviewThread``…); any valid query
  over them works (aliases, fragments, variables), an invalid one is refused as GitHub refuses it
  (``Field 'x' doesn't exist on type 'Y'``, extensions ``code: undefinedField``);
* connections need ``first`` or ``last`` (at most 100) and page with opaque cursors;
* failures are HTTP 200 with ``data`` (null where it failed) and ``errors`` carrying GitHub's ``type``:
  ``NOT_FOUND`` ("Could not resolve to a PullRequest with the number of 9."), ``FORBIDDEN`` ("Resource
  not accessible by personal access token", for a token without write access), ``RATE_LIMITED`` (with
  ``X-RateLimit-Remaining: 0``); a missing or wrong token is HTTP 401 ``Bad credentials``.
"""

from __future__ import annotations

import base64
import re
from typing import TYPE_CHECKING, Any

from graphql import GraphQLError, build_schema, graphql_sync

if TYPE_CHECKING:
    from tests.git.fake_github import FakeGitHub

API = "https://api.github.com"

SDL = """
scalar DateTime
scalar URI
scalar GitObjectID

interface Node { id: ID! }
interface Actor { login: String! url: URI! }
interface GitObject { id: ID! oid: GitObjectID! }
union IssueOrPullRequest = Issue | PullRequest
enum PullRequestState { OPEN CLOSED MERGED }
enum IssueState { OPEN CLOSED }
enum DiffSide { LEFT RIGHT }

type Query {
  repository(owner: String!, name: String!, followRenames: Boolean = true): Repository
  node(id: ID!): Node
}

type Mutation {
  resolveReviewThread(input: ResolveReviewThreadInput!): ResolveReviewThreadPayload
  unresolveReviewThread(input: UnresolveReviewThreadInput!): UnresolveReviewThreadPayload
  addPullRequestReviewThreadReply(input: AddPullRequestReviewThreadReplyInput!): AddPullRequestReviewThreadReplyPayload
}

input ResolveReviewThreadInput { threadId: ID! clientMutationId: String }
type ResolveReviewThreadPayload { clientMutationId: String thread: PullRequestReviewThread }
input UnresolveReviewThreadInput { threadId: ID! clientMutationId: String }
type UnresolveReviewThreadPayload { clientMutationId: String thread: PullRequestReviewThread }
input AddPullRequestReviewThreadReplyInput {
  body: String! clientMutationId: String pullRequestReviewId: ID pullRequestReviewThreadId: ID!
}
type AddPullRequestReviewThreadReplyPayload { clientMutationId: String comment: PullRequestReviewComment }

type User implements Node & Actor { id: ID! login: String! url: URI! }
type PageInfo { hasNextPage: Boolean! hasPreviousPage: Boolean! startCursor: String endCursor: String }

type Repository implements Node {
  id: ID! name: String! nameWithOwner: String! url: URI!
  pullRequest(number: Int!): PullRequest
  issue(number: Int!): Issue
  issueOrPullRequest(number: Int!): IssueOrPullRequest
  object(oid: GitObjectID, expression: String): GitObject
}

type Commit implements Node & GitObject {
  id: ID! oid: GitObjectID! messageHeadline: String! url: URI!
  associatedPullRequests(first: Int, after: String, last: Int, before: String): PullRequestConnection
}

type PullRequest implements Node {
  id: ID! number: Int! title: String! body: String! state: PullRequestState! url: URI!
  mergedAt: DateTime author: Actor repository: Repository!
  reviewThreads(first: Int, after: String, last: Int, before: String): PullRequestReviewThreadConnection!
  closingIssuesReferences(first: Int, after: String, last: Int, before: String): IssueConnection
}
type PullRequestConnection { totalCount: Int! nodes: [PullRequest] pageInfo: PageInfo! }

type Issue implements Node {
  id: ID! number: Int! title: String! body: String! state: IssueState! url: URI! author: Actor
  repository: Repository!
}
type IssueConnection { totalCount: Int! nodes: [Issue] pageInfo: PageInfo! }

type PullRequestReviewThread implements Node {
  id: ID! isResolved: Boolean! isOutdated: Boolean! path: String! line: Int startLine: Int
  diffSide: DiffSide! resolvedBy: User pullRequest: PullRequest! repository: Repository!
  comments(first: Int, after: String, last: Int, before: String): PullRequestReviewCommentConnection!
}
type PullRequestReviewThreadConnection { totalCount: Int! nodes: [PullRequestReviewThread] pageInfo: PageInfo! }

type PullRequestReviewComment implements Node {
  id: ID! databaseId: Int author: Actor body: String! createdAt: DateTime! url: URI!
}
type PullRequestReviewCommentConnection {
  totalCount: Int! nodes: [PullRequestReviewComment] pageInfo: PageInfo!
}
"""

SCHEMA = build_schema(SDL)


class Failure(GraphQLError):
    """An error GitHub reports with a ``type`` beside its message."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message, extensions={"type": kind})


def _cursor(index: int) -> str:
    return base64.b64encode(f"cursor:v2:{index}".encode()).decode()


def _index(cursor: str) -> int:
    try:
        return int(base64.b64decode(cursor, validate=True).decode().removeprefix("cursor:v2:"))
    except ValueError:
        raise Failure(
            f"`{cursor}` does not appear to be a valid cursor.", "INVALID_CURSOR_ARGUMENTS"
        ) from None


def connection(items: list[Any], name: str):
    """A connection field over ``items``, paginated as GitHub's are."""

    def resolve(
        _info: Any,
        first: int | None = None,
        last: int | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> dict[str, Any]:
        if first is None and last is None:
            raise Failure(
                f"You must provide a `first` or `last` value to properly paginate the `{name}` connection.",
                "MISSING_PAGINATION_BOUNDARIES",
            )
        for value, which in ((first, "first"), (last, "last")):
            if value is not None and not 0 <= value <= 100:
                raise Failure(
                    f"Requesting {value} records on the `{name}` connection exceeds the `{which}` limit of "
                    "100 records.",
                    "EXCESSIVE_PAGINATION",
                )
        start = _index(after) + 1 if after else 0
        stop = _index(before) if before else len(items)
        indexes = list(range(start, min(stop, len(items))))
        if first is not None:
            indexes = indexes[:first]
        if last is not None:
            indexes = indexes[-last:] if last else []
        return {
            "totalCount": len(items),
            "nodes": [items[i] for i in indexes],
            "pageInfo": {
                "hasNextPage": bool(indexes) and indexes[-1] < min(stop, len(items)) - 1,
                "hasPreviousPage": bool(indexes) and indexes[0] > 0,
                "startCursor": _cursor(indexes[0]) if indexes else None,
                "endCursor": _cursor(indexes[-1]) if indexes else None,
            },
        }

    return resolve


class Graph:
    """The fake's data as GraphQL objects (built per request, so a test's changes are seen at once)."""

    def __init__(self, fake: FakeGitHub, base_url: str) -> None:
        self.fake = fake
        self.base = base_url
        self.slug = f"{fake.owner}/{fake.name}"

    def user(self, login: str | None) -> dict[str, Any] | None:
        if login is None:
            return None
        return {
            "__typename": "User",
            "id": "U_" + login[:8],
            "login": login,
            "url": f"https://github.com/{login}",
        }

    def repository(self) -> dict[str, Any]:
        return {
            "__typename": "Repository",
            "id": "R_42",
            "name": self.fake.name,
            "nameWithOwner": self.slug,
            "url": f"https://github.com/{self.slug}",
            "pullRequest": lambda _info, number: self.pull(number, required=True),
            "issue": lambda _info, number: self.issue(number, required=True),
            "issueOrPullRequest": lambda _info, number: self.issue_or_pull(number),
            "object": lambda _info, oid=None, expression=None: self.commit(oid),
        }

    def pull(self, number: int, *, required: bool = False) -> dict[str, Any] | None:
        pull = next((p for p in self.fake.pulls if p["number"] == number), None)
        if pull is None:
            if required:
                raise Failure(f"Could not resolve to a PullRequest with the number of {number}.", "NOT_FOUND")
            return None
        merged = pull.get("merged_at")
        threads = [self.thread(t, number) for t in self.fake.review_threads.get(number, [])]
        closing = [self.issue(n) for n in self.fake.closing_issues.get(number, [])]
        return {
            "__typename": "PullRequest",
            "id": pull["node_id"],
            "number": number,
            "title": pull["title"],
            "body": pull["body"] or "",
            "state": "MERGED" if merged else pull["state"].upper(),
            "url": pull["html_url"],
            "mergedAt": merged,
            "author": self.user(pull["user"]["login"]),
            "repository": lambda _info: self.repository(),
            "reviewThreads": connection(threads, "reviewThreads"),
            "closingIssuesReferences": connection([i for i in closing if i], "closingIssuesReferences"),
        }

    def issue(self, number: int, *, required: bool = False) -> dict[str, Any] | None:
        issue = next((i for i in self.fake.issues if i["number"] == number and "pull_request" not in i), None)
        if issue is None:
            if required:
                raise Failure(f"Could not resolve to an Issue with the number of {number}.", "NOT_FOUND")
            return None
        return {
            "__typename": "Issue",
            "id": issue["node_id"],
            "number": number,
            "title": issue["title"],
            "body": issue["body"] or "",
            "state": issue["state"].upper(),
            "url": issue["html_url"],
            "author": self.user(issue["user"]["login"]),
            "repository": lambda _info: self.repository(),
        }

    def issue_or_pull(self, number: int) -> dict[str, Any] | None:
        found = self.issue(number) or self.pull(number)
        if found is None:
            raise Failure(
                f"Could not resolve to an issue or pull request with the number of {number}.", "NOT_FOUND"
            )
        return found

    def commit(self, oid: str | None) -> dict[str, Any] | None:
        if oid is None or oid not in self.fake.commit_pulls:
            return None  # GitHub answers null for an object it does not have, without an error
        pulls = [self.pull(n) for n in self.fake.commit_pulls[oid]]
        return {
            "__typename": "Commit",
            "id": "C_" + oid[:10],
            "oid": oid,
            "messageHeadline": "a commit",
            "url": f"https://github.com/{self.slug}/commit/{oid}",
            "associatedPullRequests": connection([p for p in pulls if p], "associatedPullRequests"),
        }

    def thread(self, thread: dict[str, Any], number: int) -> dict[str, Any]:
        comments = [
            {
                "__typename": "PullRequestReviewComment",
                "id": f"PRRC_{c['databaseId']}",
                "databaseId": c["databaseId"],
                "author": self.user(c["author"]),
                "body": c["body"],
                "createdAt": c.get("createdAt", "2026-03-01T00:00:00Z"),
                "url": f"https://github.com/{self.slug}/pull/{number}#discussion_r{c['databaseId']}",
            }
            for c in thread["comments"]
        ]
        return {
            "__typename": "PullRequestReviewThread",
            "id": thread["id"],
            "isResolved": thread["isResolved"],
            "isOutdated": thread.get("isOutdated", False),
            "path": thread["path"],
            "line": thread.get("line"),
            "startLine": thread.get("startLine"),
            "diffSide": "RIGHT",
            "resolvedBy": self.user(thread.get("resolvedBy")),
            "pullRequest": lambda _info: self.pull(number),
            "repository": lambda _info: self.repository(),
            "comments": connection(comments, "comments"),
        }

    def find_thread(self, node_id: str) -> tuple[dict[str, Any], int] | None:
        for number, threads in self.fake.review_threads.items():
            for thread in threads:
                if thread["id"] == node_id:
                    return thread, number
        return None

    def node(self, node_id: str) -> dict[str, Any]:
        found = self.find_thread(node_id)
        if found is not None:
            return self.thread(*found)
        for pull in self.fake.pulls:
            if pull["node_id"] == node_id:
                return self.pull(pull["number"])  # type: ignore[return-value]
        for issue in self.fake.issues:
            if issue["node_id"] == node_id:
                return self.issue(issue["number"]) or {}
        raise Failure(f"Could not resolve to a node with the global id of '{node_id}'", "NOT_FOUND")

    # -- mutations ---------------------------------------------------------------------------

    def _writable_thread(self, node_id: str) -> tuple[dict[str, Any], int]:
        if self.fake.read_only_token:
            raise Failure("Resource not accessible by personal access token", "FORBIDDEN")
        found = self.find_thread(node_id)
        if found is None:
            raise Failure(f"Could not resolve to a node with the global id of '{node_id}'", "NOT_FOUND")
        return found

    def set_resolved(self, node_id: str, resolved: bool) -> dict[str, Any]:
        thread, number = self._writable_thread(node_id)
        thread["isResolved"] = resolved
        thread["resolvedBy"] = "octocat" if resolved else None
        return {"clientMutationId": None, "thread": self.thread(thread, number)}

    def reply(self, node_id: str, body: str) -> dict[str, Any]:
        thread, number = self._writable_thread(node_id)
        if not body.strip():
            raise Failure("Body can't be blank", "UNPROCESSABLE")
        database_id = 77_000 + sum(len(t["comments"]) for ts in self.fake.review_threads.values() for t in ts)
        thread["comments"].append({"databaseId": database_id, "author": "octocat", "body": body})
        comment = self.thread(thread, number)["comments"](None, last=1)["nodes"][0]
        return {"clientMutationId": None, "comment": comment}


def _root(graph: Graph) -> dict[str, Any]:
    def repository(_info: Any, owner: str, name: str, followRenames: bool = True) -> dict[str, Any]:
        if f"{owner}/{name}".lower() != graph.slug.lower():
            raise Failure(f"Could not resolve to a Repository with the name '{owner}/{name}'.", "NOT_FOUND")
        return graph.repository()

    return {
        "repository": repository,
        "node": lambda _info, id: graph.node(id),
        "resolveReviewThread": lambda _info, input: graph.set_resolved(input["threadId"], True),
        "unresolveReviewThread": lambda _info, input: graph.set_resolved(input["threadId"], False),
        "addPullRequestReviewThreadReply": lambda _info, input: graph.reply(
            input["pullRequestReviewThreadId"], input["body"]
        ),
    }


_UNDEFINED = re.compile(r"Cannot query field '(\w+)' on type '(\w+)'\.")


def _github_error(error: GraphQLError) -> dict[str, Any]:
    formatted: dict[str, Any] = dict(error.formatted)
    extensions = dict(formatted.pop("extensions", None) or {})
    if "type" in extensions:
        formatted = {"type": extensions.pop("type"), **formatted}
    if match := _UNDEFINED.match(error.message):
        formatted["message"] = f"Field '{match.group(1)}' doesn't exist on type '{match.group(2)}'"
        extensions = {"code": "undefinedField", "typeName": match.group(2), "fieldName": match.group(1)}
    if extensions:
        formatted["extensions"] = extensions
    return formatted


def execute(fake: FakeGitHub, base_url: str, request: Any) -> dict[str, Any]:
    """GitHub's answer (the JSON body of an HTTP 200) to a GraphQL request body."""
    if not isinstance(request, dict) or not isinstance(request.get("query"), str):
        return {"errors": [{"message": "A query attribute must be specified and must be a string."}]}
    result = graphql_sync(
        SCHEMA,
        request["query"],
        root_value=_root(Graph(fake, base_url)),
        variable_values=request.get("variables") or {},
        operation_name=request.get("operationName"),
    )
    answer: dict[str, Any] = {}
    if result.data is not None or not result.errors:
        answer["data"] = result.data
    if result.errors:
        answer["errors"] = [_github_error(e) for e in result.errors]
    return answer
