"""Read-only access to a repository's GitHub pull requests and issues (PyGithub).

The token comes from an environment variable and lives only inside the PyGithub client: it is never part of
a result, an error or a log line (PyGithub masks the Authorization header in its debug log).

Everything a GitHub user controls is untrusted (see :mod:`dockyard_shared.untrusted`): free text (titles,
bodies, comments, patches) is always fenced; identifier-like fields (logins, labels, branch, file and check
names) are plain only when simple identifiers. Values GitHub itself generates (numbers, states, dates, SHAs) are plain; URLs
are plain when they look like one and dropped otherwise. Our own words (truncation marks) go after a fence.

Every reply is bounded (caps in :mod:`..settings`), and every cut is marked and says how to get the rest:
lists are one GitHub page (30); caps count the characters a field takes as JSON, so text full of quotes or
backslashes cannot double a reply; comments on a page and patches in a reply share a total budget fairly
(short ones whole, long ones cut evenly), and that budget is what the rest of the reply leaves under
REPLY_BUDGET: with every field hostile and at its cap a reply still stays under 100,000 characters.
"""

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
