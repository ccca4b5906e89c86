"""A small GitHub REST client for import_github_issues: one page of a repository's issues, over httpx.

No other server's code (no server imports another): the token rules are the git server's — the token is
read from ``$GITHUB_TOKEN`` (or the variable ``--github-token-env`` names), sent only in the
``Authorization`` header to ``--github-api-url``, never logged, never quoted (an error GitHub echoes
it in is redacted). GitHub's refusals become the shared wording (``dockyard_shared.upstream``). One
call reads one page (``per_page`` ≤ 100) and says whether ``Link`` names a next one. Everything in an
answer is another party's text: the store keeps it as data, replies fence it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx

from dockyard_shared import InvalidArgument, UpstreamUnavailable
from dockyard_shared.upstream import problem_for_status

from .drafts import IssueDraft
from .rules import MAX_DESCRIPTION, MAX_LABEL, MAX_LABELS, MAX_TITLE

__all__ = ["MAX_PAGE", "GitHubIssues", "IssuePage", "parse_repo"]

MAX_PAGE = 100  # issues per call (GitHub's own per_page ceiling)
MAX_BODY_BYTES = 8_000_000  # one page of 100 issues with 65,536-character bodies fits
_REPO = re.compile(r"^([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))/([A-Za-z0-9._-]{1,100})$")
_LABEL_OK = re.compile(r"^[^\x00-\x1f\x7f,]+$")


def parse_repo(value: str) -> str:
    """``owner/name``, refusing anything that could leave the repository's API path."""
    repo = (value or "").strip()
    match = _REPO.match(repo)
    if not match or match.group(2) in (".", ".."):
        raise InvalidArgument(
            f"repo {value[:80]!r} is not a GitHub repository: give owner/name, e.g. octo-org/widgets.",
        )
    return repo


@dataclass(frozen=True)
class IssuePage:
    issues: list[IssueDraft]
    pull_requests: int  # items of the page that are pull requests (GitHub lists them among issues)
    has_next: bool


def _cut(text: str, limit: int, rest: str) -> str:
    if len(text) <= limit:
        return text
    marker = f"… [cut at {limit:,} characters; {rest}]"
    return text[: limit - len(marker)] + marker


def _labels(raw: Any) -> tuple[str, ...]:
    names = []
    for item in raw if isinstance(raw, list) else []:
        name = (item.get("name") if isinstance(item, dict) else item) or ""
        name = str(name).strip().lower()
        if name and len(name) <= MAX_LABEL and _LABEL_OK.match(name) and name not in names:
            names.append(name)
    return tuple(sorted(names[:MAX_LABELS]))


def _issue(raw: dict[str, Any]) -> IssueDraft:
    url = str(raw.get("html_url") or "")
    number = raw.get("number")
    if not url.startswith(("https://", "http://")) or len(url) > 500 or not isinstance(number, int):
        raise UpstreamUnavailable("GitHub answered an issue without a usable html_url or number.")
    title = " ".join(str(raw.get("title") or "").split()) or f"Issue #{number}"
    body = str(raw.get("body") or "").replace("\x00", "\ufffd")
    return IssueDraft(
        url=url,
        number=number,
        title=_cut(title, MAX_TITLE, "the issue has it all"),
        body=_cut(body, MAX_DESCRIPTION, f"the whole is at {url}"),
        labels=_labels(raw.get("labels")),
        closed=raw.get("state") == "closed",
    )


class GitHubIssues:
    def __init__(self, token: str, api_url: str, *, token_env: str, timeout_s: float = 20.0) -> None:
        self._token = token
        self._api = api_url.rstrip("/")
        self.token_env = token_env
        self._timeout = timeout_s

    def _redact(self, text: str) -> str:
        return text.replace(self._token, "[redacted]") if self._token else text

    def issues(self, repo: str, *, state: str, labels: str, page: int, per_page: int) -> IssuePage:
        repo = parse_repo(repo)
        params: dict[str, Any] = {"state": state, "per_page": per_page, "page": page, "direction": "asc"}
        if labels:
            params["labels"] = labels
        what = f"the issues of {repo}"
        headers = {
            "Authorization": f"Bearer {self._token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "dockyard-tasks",
        }
        try:
            with (
                httpx.Client(timeout=self._timeout, follow_redirects=False) as client,
                client.stream("GET", f"{self._api}/repos/{repo}/issues", params=params, headers=headers) as r,
            ):
                data = b""
                for chunk in r.iter_bytes():
                    data += chunk
                    if len(data) > MAX_BODY_BYTES:
                        raise UpstreamUnavailable(
                            f"GitHub's answer for {what} passed {MAX_BODY_BYTES:,} bytes; nothing was imported.",
                            next_step="Ask for fewer issues per page (limit).",
                        )
                response = r
        except httpx.HTTPError as error:
            raise UpstreamUnavailable(
                f"GitHub could not be reached while reading {what} ({type(error).__name__}); nothing was "
                "imported.",
                retryable=True,
                next_step="Retry later; check --github-api-url if it persists.",
            ) from None
        if response.status_code != 200:
            try:
                message = str(httpx.Response(200, content=data).json().get("message") or "")
            except (ValueError, AttributeError):
                message = ""
            raise problem_for_status(
                response.status_code,
                service="GitHub",
                what=f"reading {what}",
                headers=dict(response.headers),
                credential_env=self.token_env,
                detail=self._redact(message) or None,
            )
        try:
            items = httpx.Response(200, content=data).json()
        except ValueError:
            items = None
        if not isinstance(items, list):
            raise UpstreamUnavailable(f"GitHub answered {what} with something other than a list of issues.")
        issues, pulls = [], 0
        for raw in items[:per_page]:
            if not isinstance(raw, dict):
                continue
            if "pull_request" in raw:
                pulls += 1
            else:
                issues.append(_issue(raw))
        return IssuePage(issues, pulls, 'rel="next"' in response.headers.get("link", ""))
