"""The GitHub reader: one client, and the pull request and issue readers that hold it."""

from __future__ import annotations

from .client import GitHubClient
from .issues import IssueReading
from .pulls import PullRequestReading

__all__ = ["GitHubReader"]


class GitHubReader:
    """Read-only access to one GitHub (its API at ``api_url``) through one client (:mod:`.client`): pull
    requests (:mod:`.pulls`) and issues (:mod:`.issues`), each read by the object that defines it."""

    def __init__(self, token: str, api_url: str, *, token_env: str, timeout: int = 15) -> None:
        self.client = GitHubClient(token, api_url, token_env=token_env, timeout=timeout)
        self.extra_hosts = self.client.extra_hosts
        pulls, issues = PullRequestReading(self.client), IssueReading(self.client)
        self.pull_requests = pulls.pull_requests
        self.pull_request = pulls.pull_request
        self.issues = issues.issues
        self.issue = issues.issue
