"""git_remotes, git_fetch and git_pull: what the remotes are, what moved, and fast-forwarding to it."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path

from dockyard_shared import Conflict, InvalidArgument, LimitExceeded, NotFound, Problem
from dockyard_shared.untrusted import fence

from ..repos import Repository
from .access import refused_config, scrub
from .base import RemotePlumbing
from .models import (
    BranchTracking,
    CommitLine,
    FetchResult,
    MovedRef,
    PullResult,
    RemoteInfo,
    RemotesResult,
)

_MAX_REMOTES = 50
_MAX_MOVED = 50  # refs listed by a fetch
_SUBJECT = 200
_SHOWN_COMMITS = 20  # brought in by a pull
_DIVERGED_SHOWN = 5  # each side of a refused pull


class FetchOperations(RemotePlumbing):
    # -- git_remotes --------------------------------------------------------------------------

    def remotes(self, repo: Repository) -> RemotesResult:
        fetch_urls: dict[str, str] = {}
        push_urls: dict[str, list[str]] = {}
        for line in self._git(repo, "remote", "-v").text.splitlines():
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
                self._valid_name(name, "The remote")
                for url in dict.fromkeys(urls):
                    self._classify(repo, url)
            except Problem as problem:
                refused = problem.what
            head = self._git(repo, "symbolic-ref", "--quiet", f"refs/remotes/{name}/HEAD", check=False)
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
        cap = self.limits.max_list
        notes = []
        if len(names) > _MAX_REMOTES:
            notes.append(f"Only the first {_MAX_REMOTES} of {len(names)} remotes are listed.")
        if len(branches) > cap:
            notes.append(f"Only the first {cap} of {len(branches)} branches are listed; use git_branches.")
        reason = refused_config(self.runner.config_names(repo.git_dir))
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
        out = self._git(
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

    # -- git_fetch ----------------------------------------------------------------------------

    def fetch(self, repo: Repository, remote: str | None = None, *, prune: bool = False) -> FetchResult:
        current = None if remote else self._current_branch_or_none(repo)
        name = self._remote(repo, remote, self._tracking(repo, current)[1] if current else None)
        with self.runner.holding(repo.git_dir):
            return self._fetch(repo, name, prune)

    def _current_branch_or_none(self, repo: Repository) -> str | None:
        try:
            return self._current_branch(repo)
        except Problem:
            return None

    def _fetch(self, repo: Repository, name: str, prune: bool) -> FetchResult:
        url = self._fetch_url(repo, name)
        self._check_config(repo)
        prefix = f"refs/remotes/{name}/"
        every_ref = self._refs(repo)
        before = {ref: sha for ref, sha in every_ref.items() if ref.startswith(prefix)}
        args = [
            "fetch",
            "--no-tags",
            "--no-prune-tags",
            "--prune" if prune else "--no-prune",
            "--no-recurse-submodules",
            "--no-write-commit-graph",
            "--no-auto-maintenance",
            "--refmap=",
            f"--upload-pack={self.access.pack_programs([url])[0]}",
            "--end-of-options",
            name,
            f"+refs/heads/*:{prefix}*",
        ]
        packs = Path(
            self._git(repo, "rev-parse", "--path-format=absolute", "--git-path", "objects/pack").text.strip()
        )
        partial = set(packs.glob("tmp_pack_*"))
        try:
            self._network(repo, args, self.access.network(name, [url], fetching=True), [url])
        except Problem:
            self._over_the_size_limit(packs, partial, url.shown)
            raise
        after = self._refs(repo, prefix)
        moved = []
        for ref in sorted(set(before) | set(after)):
            old, new = before.get(ref), after.get(ref)
            if old == new or ref == f"{prefix}HEAD":
                continue
            short = ref.removeprefix("refs/remotes/")
            if new is None:
                moved.append(MovedRef(ref=short, change="deleted", old=old, new=None, commits=None))
            elif old is None:
                moved.append(MovedRef(ref=short, change="new", old=None, new=new, commits=None))
            else:
                moved.append(MovedRef(ref=short, change="updated", old=old, new=new, commits=None))
        for item in moved[:_MAX_MOVED]:
            if item.change == "updated":
                if self._is_ancestor(repo, item.old, item.new):
                    item.commits = self._count(repo, [item.new], [item.old])[0]
                else:
                    item.change = "forced"
            elif item.change == "new":
                item.commits = self._count(repo, [item.new], list(every_ref.values()))[0]
        tips = [item.new for item in moved if item.new]
        new_commits, capped = self._count(repo, tips, list(every_ref.values()))
        truncated = len(moved) > _MAX_MOVED
        return FetchResult(
            repository=repo.name,
            remote=name,
            url=url.shown,
            moved=moved[:_MAX_MOVED],
            new_commits=new_commits,
            new_commits_capped=capped,
            truncated=truncated,
            note=f"{len(moved)} refs moved; the first {_MAX_MOVED} are listed. git_branches(kind='remote') "
            "lists them all."
            if truncated
            else None,
        )

    def _over_the_size_limit(self, packs: Path, before: set[Path], shown: str) -> None:
        """When the fetch stopped because its pack reached the size limit (index-pack got SIGXFSZ and git
        says only "invalid index-pack output"), remove the partial pack it left and say so."""
        limit = self.settings.max_fetch_bytes
        cut = [p for p in set(packs.glob("tmp_pack_*")) - before if p.is_file() and p.stat().st_size >= limit]
        if not cut:
            return
        for partial in cut:
            partial.unlink(missing_ok=True)
        raise LimitExceeded(
            f"git fetch with {shown} was stopped: what it fetched exceeds the limit of {limit:,} bytes in one "
            "file (--max-fetch-bytes); the partial download was removed.",
            next_step="Ask the user to fetch this repository themselves, or the operator to raise --max-fetch-bytes.",
        )

    # -- git_pull -----------------------------------------------------------------------------

    def pull(self, repo: Repository, remote: str | None = None, branch: str | None = None) -> PullResult:
        if repo.bare:
            raise InvalidArgument(f"{repo.name} is a bare repository: there is no working tree to update.")
        current = self._current_branch(repo)
        _, upstream_remote, upstream_ref = self._tracking(repo, current)
        name = self._remote(repo, remote, upstream_remote)
        if branch:
            remote_branch = self._valid_name(branch, "The branch")
        elif upstream_remote == name and upstream_ref and upstream_ref.startswith("refs/heads/"):
            remote_branch = upstream_ref.removeprefix("refs/heads/")
        else:
            remote_branch = current
        with self.runner.holding(repo.git_dir):
            fetched = self._fetch(repo, name, prune=False)
        upstream = f"{name}/{remote_branch}"
        new = self._sha(repo, f"refs/remotes/{upstream}")
        if new is None:
            raise NotFound(
                f"The remote {name!r} has no branch {remote_branch!r}.",
                next_step="Pass branch (git_branches(kind='remote') lists the remote's branches), or push it "
                "first with git_push.",
            )
        old = self._sha(repo, "HEAD")

        def result(outcome: str, commits: list[CommitLine], count: int, head: str | None) -> PullResult:
            return PullResult(
                repository=repo.name,
                branch=current,
                upstream=upstream,
                outcome=outcome,
                old=old,
                new=head,
                commits=commits,
                commit_count=count,
                fetch=fetched,
            )

        if old == new:
            return result("up to date", [], 0, old)
        if old is not None and self._is_ancestor(repo, new, old):
            return result("ahead", [], 0, old)
        if old is not None and not self._is_ancestor(repo, old, new):
            raise self._diverged(repo, current, upstream, old, new)
        merged = self._git(
            repo,
            "merge",
            "--ff-only",
            "--no-stat",
            "--no-edit",
            "--no-verify",
            "--no-autostash",
            "--end-of-options",
            new,
            check=False,
        )
        if merged.returncode != 0:
            message = " ".join(line.strip() for line in merged.stderr.splitlines() if line.strip())[:600]
            # git names the files, and the fetched commits chose those names: data.
            said = fence(message, "output of git merge")
            if "would be overwritten" in message or "untracked working tree files" in message:
                raise Conflict(
                    f"Fast-forwarding {current} to {upstream} would overwrite uncommitted changes:\n{said}",
                    next_step="Commit or stash them first (git_commit or git_stash), then pull again.",
                )
            raise Conflict(f"Fast-forwarding {current} to {upstream} failed:\n{said}")
        commits = self._commits(repo, new, old, _SHOWN_COMMITS)
        count = self._count(repo, [new], [old] if old else [])[0]
        return result("fast-forwarded", commits, count, new)

    def _commits(self, repo: Repository, tip: str, base: str | None, limit: int) -> list[CommitLine]:
        args = ["log", f"--max-count={limit}", "--format=%H%x1f%s", tip]
        if base:
            args += ["--not", base]
        out = self._git(repo, *args)
        lines = []
        for line in out.text.splitlines():
            sha, _, subject = line.partition("\x1f")
            cut = subject if len(subject) <= _SUBJECT else subject[:_SUBJECT] + "…"
            lines.append(CommitLine(sha=sha, subject=cut))
        return lines

    def _diverged(self, repo: Repository, branch: str, upstream: str, local: str, remote: str) -> Conflict:
        ahead = self._count(repo, [local], [remote])[0]
        behind = self._count(repo, [remote], [local])[0]

        def side(tip: str, base: str) -> str:
            return "\n".join(
                f"{c.sha[:12]} {c.subject}" for c in self._commits(repo, tip, base, _DIVERGED_SHOWN)
            )

        listing = fence(
            f"Only on {branch}:\n{side(local, remote)}\nOnly on {upstream}:\n{side(remote, local)}",
            "commit subjects of the two sides",
        )
        return Conflict(
            f"{branch} and {upstream} have diverged: {ahead} commit(s) only here, {behind} only on the remote. "
            f"This server only fast-forwards.\n{listing}",
            next_step="Tell the user; they can rebase or merge locally (git pull --rebase, or git merge), which "
            "this server does not do. Replacing the remote's commits needs git_push with force_with_lease and "
            "the user's confirmation.",
        )
