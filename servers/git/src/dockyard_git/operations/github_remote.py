"""Which GitHub repository a local repository's remotes name (the GitHub toolset works on it)."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from urllib.parse import urlparse

from dockyard_shared import NotFound

from ..repos import Repository
from .plumbing import Plumbing

__all__ = ["github_remote", "github_slug"]


def github_remote(plumbing: Plumbing, repo: Repository, extra_hosts: Collection[str] = ()) -> str:
    """``owner/name`` of the repository's first remote on github.com (or one of ``extra_hosts``:
    GitHub Enterprise), or a not-found problem."""
    remotes = plumbing.git(repo, "config", "--get-regexp", r"^remote\..*\.url$", check=False)
    urls = [line.split(" ", 1)[1] for line in remotes.text.splitlines() if " " in line]
    found = github_slug(urls, extra_hosts)
    if not found:
        raise NotFound(
            f"{repo.name} has no GitHub remote.",
            next_step="GitHub tools work on repositories with a github.com remote (git_branches "
            "kind='remote' lists remotes).",
        )
    return found


def github_slug(remote_urls: Sequence[str], extra_hosts: Collection[str]) -> str | None:
    """``owner/name`` of the first remote on github.com (or an allowed GitHub Enterprise host)."""
    hosts = {"github.com", "www.github.com", *extra_hosts}
    for url in remote_urls:
        match = re.match(r"^(?:ssh://)?git@([^:/]+)[:/](.+?)(?:\.git)?/?$", url)
        if match:
            host, path = match.groups()
        else:
            parsed = urlparse(url)
            host, path = parsed.hostname or "", parsed.path.strip("/").removesuffix(".git")
        parts = path.split("/")
        if host.lower() in hosts and len(parts) == 2 and all(re.fullmatch(r"[\w.-]+", p) for p in parts):
            return f"{parts[0]}/{parts[1]}"
    return None
