"""git_fetch and git_pull: what moved on the remote, and fast-forwarding to it."""

from __future__ import annotations

from pathlib import Path

from dockyard_shared import Conflict, InvalidArgument, LimitExceeded, NotFound, Problem
from dockyard_shared.untrusted import fence
from dockyard_shared.words import plural

from ..gitcmd import running_processes
from ..repos import Repository
from .context import RemoteContext
from .models import (
    CommitLine,
    FetchResult,
    MovedRef,
    PullResult,
)

_MAX_MOVED = 50  # refs listed by a fetch
_SUBJECT = 200
_SHOWN_COMMITS = 20  # brought in by a pull
_DIVERGED_SHOWN = 5  # each side of a refused pull


def _call_cancelled() -> bool:
    """Was this tool call cancelled (a cancelled request or task): its git processes were killed."""
    return bool(getattr(running_processes.get(), "cancelled", False))


def _remove_partial_download(packs: Path, before: set[Path]) -> None:
    """A killed fetch leaves the pack it was receiving (``tmp_pack_*``, and ``tmp_idx_*`` or ``tmp_rev_*``
    if it got that far): remove what appeared during this call. Runs after the git process group was
    killed. Another fetch of the same repository running at that very moment (both hold the lock shared)
    would lose its download and fail; a retry of it succeeds."""
    for leftover in set(packs.glob("tmp_*")) - before:
        leftover.unlink(missing_ok=True)


class Fetching:
    """git_fetch and git_pull, over the shared :class:`~.context.RemoteContext`."""

    def __init__(self, ctx: RemoteContext) -> None:
        self.ctx = ctx

    # -- git_fetch ----------------------------------------------------------------------------

    def fetch(self, repo: Repository, remote: str | None = None, *, prune: bool = False) -> FetchResult:
        current = None if remote else self._current_branch_or_none(repo)
        name = self.ctx.choose_remote(repo, remote, self.ctx.tracking(repo, current)[1] if current else None)
        with self.ctx.runner.holding(repo.git_dir):
            return self._fetch(repo, name, prune)

    def _current_branch_or_none(self, repo: Repository) -> str | None:
        try:
            return self.ctx.current_branch(repo)
        except Problem:
            return None

    def _fetch(self, repo: Repository, name: str, prune: bool) -> FetchResult:
        url = self.ctx.fetch_url(repo, name)
        self.ctx.check_config(repo)
        prefix = f"refs/remotes/{name}/"
        every_ref = self.ctx.refs(repo)
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
            f"--upload-pack={self.ctx.access.pack_programs([url])[0]}",
            "--end-of-options",
            name,
            f"+refs/heads/*:{prefix}*",
        ]
        packs = Path(
            self.ctx.git(
                repo, "rev-parse", "--path-format=absolute", "--git-path", "objects/pack"
            ).text.strip()
        )
        partial = set(packs.glob("tmp_pack_*"))
        before_call = set(packs.glob("tmp_*"))
        try:
            self.ctx.on_network(repo, args, self.ctx.access.network(name, [url], fetching=True), [url])
        except BaseException as error:
            if _call_cancelled():
                _remove_partial_download(packs, before_call)
            if isinstance(error, Problem):
                self._over_the_size_limit(packs, partial, url.shown)
            raise
        after = self.ctx.refs(repo, prefix)
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
                if self.ctx.is_ancestor(repo, item.old, item.new):
                    item.commits = self.ctx.count(repo, [item.new], [item.old])[0]
                else:
                    item.change = "forced"
            elif item.change == "new":
                item.commits = self.ctx.count(repo, [item.new], list(every_ref.values()))[0]
        tips = [item.new for item in moved if item.new]
        new_commits, capped = self.ctx.count(repo, tips, list(every_ref.values()))
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
        limit = self.ctx.settings.max_fetch_bytes
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
        current = self.ctx.current_branch(repo)
        _, upstream_remote, upstream_ref = self.ctx.tracking(repo, current)
        name = self.ctx.choose_remote(repo, remote, upstream_remote)
        if branch:
            remote_branch = self.ctx.valid_name(branch, "The branch")
        elif upstream_remote == name and upstream_ref and upstream_ref.startswith("refs/heads/"):
            remote_branch = upstream_ref.removeprefix("refs/heads/")
        else:
            remote_branch = current
        with self.ctx.runner.holding(repo.git_dir):
            fetched = self._fetch(repo, name, prune=False)
        upstream = f"{name}/{remote_branch}"
        new = self.ctx.sha(repo, f"refs/remotes/{upstream}")
        if new is None:
            raise NotFound(
                f"The remote {name!r} has no branch {remote_branch!r}.",
                next_step="Pass branch (git_branches(kind='remote') lists the remote's branches), or push it "
                "first with git_push.",
            )
        old = self.ctx.sha(repo, "HEAD")

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
        if old is not None and self.ctx.is_ancestor(repo, new, old):
            return result("ahead", [], 0, old)
        if old is not None and not self.ctx.is_ancestor(repo, old, new):
            raise self._diverged(repo, current, upstream, old, new)
        merged = self.ctx.git(
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
        count = self.ctx.count(repo, [new], [old] if old else [])[0]
        return result("fast-forwarded", commits, count, new)

    def _commits(self, repo: Repository, tip: str, base: str | None, limit: int) -> list[CommitLine]:
        args = ["log", f"--max-count={limit}", "--format=%H%x1f%s", tip]
        if base:
            args += ["--not", base]
        out = self.ctx.git(repo, *args)
        lines = []
        for line in out.text.splitlines():
            sha, _, subject = line.partition("\x1f")
            cut = subject if len(subject) <= _SUBJECT else subject[:_SUBJECT] + "…"
            lines.append(CommitLine(sha=sha, subject=cut))
        return lines

    def _diverged(self, repo: Repository, branch: str, upstream: str, local: str, remote: str) -> Conflict:
        ahead = self.ctx.count(repo, [local], [remote])[0]
        behind = self.ctx.count(repo, [remote], [local])[0]

        def side(tip: str, base: str) -> str:
            return "\n".join(
                f"{c.sha[:12]} {c.subject}" for c in self._commits(repo, tip, base, _DIVERGED_SHOWN)
            )

        listing = fence(
            f"Only on {branch}:\n{side(local, remote)}\nOnly on {upstream}:\n{side(remote, local)}",
            "commit subjects of the two sides",
        )
        return Conflict(
            f"{branch} and {upstream} have diverged: {plural(ahead, 'commit')} only here, {behind} only on the remote. "
            f"This server only fast-forwards.\n{listing}",
            next_step="Tell the user; they can rebase or merge locally (git pull --rebase, or git merge), which "
            "this server does not do. Replacing the remote's commits needs git_push with force_with_lease and "
            "the user's confirmation.",
        )
