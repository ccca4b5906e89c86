"""The PyGithub client the readers of :class:`.GitHubReader` share, and how GitHub's refusals and network failures
become problems for the model."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import urlparse

from github import Auth, Github, GithubException, RateLimitExceededException

from dockyard_shared import InvalidArgument, Problem, UpstreamUnavailable
from dockyard_shared.upstream import problem_for_status

from ..settings import PER_PAGE

__all__ = ["GitHubClient", "check_page", "translated"]

T = TypeVar("T")


def translated(what: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Run a whole reading method (of an object whose ``client`` is a :class:`GitHubClient`) under
    :meth:`GitHubClient.call`: PyGithub loads lazily, so an HTTP error can surface at any attribute access,
    not only in the requests the method wraps in ``call`` itself (those name what they were reading more
    precisely, and their problems pass through here)."""

    def decorate(method: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(method)
        def wrapper(self: Any, slug: str, *args: Any, **kwargs: Any) -> T:
            label = what.format(number=args[0] if args else kwargs.get("number"))
            return self.client.call(label, lambda: method(self, slug, *args, **kwargs))

        return wrapper

    return decorate


class GitHubClient:
    """One authenticated PyGithub client, shared by the pull request and issue readers; the token never
    leaves it."""

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
        self.api_url = api_url
        self.timeout = timeout
        # GitHub's error messages are quoted to the model: a server that echoes the token loses it here.
        self._redact: Callable[[str], str] = lambda text: text.replace(token, "[redacted]") if token else text
        host = (urlparse(api_url).hostname or "").lower()
        self.extra_hosts = set() if host in ("api.github.com", "") else {host.removeprefix("api.")}
        if host in ("127.0.0.1", "localhost"):
            self.extra_hosts.add(host)

    def call(self, what: str, work: Callable[[], T], *, doing: str = "reading") -> T:
        """``work``, with GitHub's refusals and network failures turned into problems for the model
        (``doing`` ``what``: "reading issue #3", "commenting on issue #3")."""
        try:
            return work()
        except Problem:
            raise
        except GithubException as error:
            # PyGithub also raises RateLimitExceededException for a 403 whose quota headers it read itself.
            status = 429 if isinstance(error, RateLimitExceededException) else error.status
            raise self.problem(status, f"{doing} {what}", error.headers or {}, _message(error.data)) from None
        except (OSError, ValueError) as error:
            raise UpstreamUnavailable(
                f"GitHub could not be reached while {doing} {what} ({type(error).__name__}).",
                next_step="Retry shortly."
                if doing == "reading"
                else "Check on GitHub whether it was done before retrying: the request may have arrived.",
            ) from None

    def problem(self, status: int, what: str, headers: Mapping[str, Any], message: str | None) -> Problem:
        """GitHub's answer ``status`` (its ``message`` quoted fenced, the token redacted) as a problem."""
        problem = problem_for_status(
            status,
            service="GitHub",
            what=what,
            headers=headers,
            credential_env=self.token_env,
            detail=self._redact(message or "") or None,
        )
        if status in (401, 403) and self.token_env:
            # Which setting the operator changes: the variable, or the flag that names another one.
            problem.next_step = (problem.next_step or "") + (
                f" (The token is read from ${self.token_env}; --github-token-env names another variable.)"
            )
        return problem

    def graphql(self, what: str, query: str, variables: dict[str, Any], *, doing: str = "reading") -> Any:
        """``data`` of a GraphQL ``query`` (POST /graphql through PyGithub's requester, so the token stays in
        it). GitHub answers most GraphQL failures with 200 and an ``errors`` list typed NOT_FOUND, FORBIDDEN,
        RATE_LIMITED…: each becomes the problem its REST status would."""
        requester = self._client.requester
        headers, data = self.call(
            what,
            lambda: requester.requestJsonAndCheck(
                "POST", requester.graphql_url, input={"query": query, "variables": variables}
            ),
            doing=doing,
        )
        errors = data.get("errors") if isinstance(data, dict) else None
        if errors or not isinstance(data, dict) or not isinstance(data.get("data"), dict):
            first = errors[0] if isinstance(errors, list) and errors and isinstance(errors[0], dict) else {}
            kind = str(first.get("type") or "")
            status = _GRAPHQL_STATUS.get(kind, 502 if not errors else 400)
            raise self.problem(status, f"{doing} {what}", headers or {}, _message(first) or kind or None)
        return data["data"]

    def repo(self, slug: str) -> Any:
        return self._client.get_repo(slug)


# GitHub's GraphQL error types, as the REST status that means the same.
_GRAPHQL_STATUS = {
    "NOT_FOUND": 404,
    "FORBIDDEN": 403,
    "RATE_LIMITED": 429,
    "RATE_LIMIT": 429,
    "UNPROCESSABLE": 422,
    "SERVICE_UNAVAILABLE": 503,
    "INTERNAL": 500,
    "MAX_NODE_LIMIT_EXCEEDED": 422,
}


def _message(data: object) -> str | None:
    """GitHub's ``message`` in an error body: its words, quoted fenced by ``problem_for_status``."""
    message = data.get("message") if isinstance(data, dict) else None
    return message if isinstance(message, str) else None


def check_page(page: int) -> None:
    if page < 1 or page > 1000:
        raise InvalidArgument("page must be between 1 and 1000.")
