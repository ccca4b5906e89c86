"""git_remotes: each remote, whether the tools would refuse it, and each branch's tracking state; no network."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime

from dockyard_shared import Problem

from ..repos import Repository
from .access import refused_config, scrub
from .context import RemoteContext
from .models import BranchTracking, RemoteInfo, RemotesResult

_MAX_REMOTES = 50


class RemoteListing:
    """git_remotes, over the shared :class:`~.context.RemoteContext`."""

    def __init__(self, ctx: RemoteContext) -> None:
        self.ctx = ctx

    def remotes(self, repo: Repository) -> RemotesResult:
        fetch_urls: dict[str, str] = {}
        push_urls: dict[str, list[str]] = {}
        for line in self.ctx.git(repo, "remote", "-v").text.splitlines():
            name, _, rest = line.partition("\t")
            url, _, kind = rest.rpartition(" ")
            if kind == "(fetch)":
                fetch_urls.setdefault(name, url)
            elif kind == "(push)":
                push_urls.setdefault(name, []).append(url)
        names = list(dict.fromkeys([*fetch_urls, *push_urls]))
        infos = []
        for name in names[:_MAX_REMOTES]:
            urls = [u for u in [fetch_urls.get(name), *push_urls.get(name, [])] if u]
            refused = None
            try:
                self.ctx.valid_name(name, "The remote")
                for url in dict.fromkeys(urls):
                    self.ctx.classify(repo, url)
            except Problem as problem:
                refused = problem.what
            head = self.ctx.git(repo, "symbolic-ref", "--quiet", f"refs/remotes/{name}/HEAD", check=False)
            infos.append(
                RemoteInfo(
                    name=name,
                    fetch_url=scrub(fetch_urls[name]) if name in fetch_urls else None,
                    push_urls=[scrub(url) for url in push_urls.get(name, [])],
                    default_branch=head.text.strip().removeprefix(f"refs/remotes/{name}/") or None,
                    refused=refused,
                )
            )
        branches = self._branch_tracking(repo)
        cap = self.ctx.limits.max_list
        notes = []
        if len(names) > _MAX_REMOTES:
            notes.append(f"Only the first {_MAX_REMOTES} of {len(names)} remotes are listed.")
        if len(branches) > cap:
            notes.append(f"Only the first {cap} of {len(branches)} branches are listed; use git_branches.")
        reason = refused_config(self.ctx.runner.config_names(repo.git_dir))
        if reason:
            notes.append(f"The remote tools refuse this repository: {reason}.")
        fetched = os.path.join(repo.git_dir, "FETCH_HEAD")
        last_fetch = None
        if os.path.isfile(fetched):
            last_fetch = datetime.fromtimestamp(os.stat(fetched).st_mtime, UTC).isoformat(timespec="seconds")
        return RemotesResult(
            repository=repo.name,
            remotes=infos,
            branches=branches[:cap],
            last_fetch=last_fetch,
            truncated=len(names) > _MAX_REMOTES or len(branches) > cap,
            note=" ".join(notes) or None,
        )

    def _branch_tracking(self, repo: Repository) -> list[BranchTracking]:
        out = self.ctx.git(
            repo,
            "for-each-ref",
            "--format=%(refname:short)%00%(upstream:short)%00%(upstream:track,nobracket)",
            "refs/heads",
        )
        branches = []
        for line in out.text.splitlines():
            branch, upstream, track = ([*line.split("\x00"), "", ""])[:3]
            ahead = re.search(r"ahead (\d+)", track)
            behind = re.search(r"behind (\d+)", track)
            known = bool(upstream) and track != "gone"
            branches.append(
                BranchTracking(
                    branch=branch,
                    upstream=upstream or None,
                    ahead=int(ahead.group(1)) if ahead else (0 if known else None),
                    behind=int(behind.group(1)) if behind else (0 if known else None),
                    gone=track == "gone",
                )
            )
        return branches
