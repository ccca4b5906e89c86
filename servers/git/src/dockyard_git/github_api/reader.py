"""The GitHub reader: one client, and the pull request and issue readers that hold it."""

from __future__ import annotations

from .actions import ActionsReading
from .client import GitHubClient
from .issues import IssueReading
from .origins import OriginReading
from .pulls import PullRequestReading
from .review import ReviewReading, ReviewWriting

__all__ = ["GitHubReader"]


class GitHubReader:
    """Access to one GitHub (its API at ``api_url``) through one client (:mod:`.client`): pull requests
    (:mod:`.pulls`), issues (:mod:`.issues`), review threads (:mod:`.review`), failed CI jobs
    (:mod:`.actions`) and where lines come from (:mod:`.origins`), each read by the object that defines
    it; and, in ``writes``, the github_write toolset's comments, replies and thread resolution."""

    def __init__(self, token: str, api_url: str, *, token_env: str, timeout: int = 15) -> None:
        self.client = GitHubClient(token, api_url, token_env=token_env, timeout=timeout)
        self.extra_hosts = self.client.extra_hosts
        pulls, issues = PullRequestReading(self.client), IssueReading(self.client)
        self.pull_requests = pulls.pull_requests
        self.pull_request = pulls.pull_request
        self.issues = issues.issues
        self.issue = issues.issue
        self.review_threads = ReviewReading(self.client).review_threads
        self.failed_job_log = ActionsReading(self.client).failed_job_log
        self.line_origin = OriginReading(self.client).line_origin
        # The github_write toolset's actions (served only when the operator turns it on).
        self.writes = ReviewWriting(self.client)
