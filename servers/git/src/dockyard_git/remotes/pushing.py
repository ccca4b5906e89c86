"""git_push: plan a push (which branch, where, whether the user must confirm it), then run it."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from dockyard_shared import Conflict, InvalidArgument, LimitExceeded, NotFound, PermissionDenied
from dockyard_shared.untrusted import fence

from ..gitcmd import GitBusy
from ..repos import Repository
from .access import RemoteUrl
from .context import SHA, RemoteContext
from .models import PushResult

_MAX_TAGS = 20


@dataclass(frozen=True)
class PushPlan:
    """A push, checked and ready; ``confirmation`` is the question for the user, if one is needed."""

    repo: Repository
    remote: str
    urls: tuple[RemoteUrl, ...]
    branch: str
    sha: str
    remote_branch: str
    remote_sha: str | None
    lease: str | None  # force-with-lease: the remote value it may replace ('' = must not exist)
    tags: tuple[str, ...]
    set_upstream: bool
    confirmation: str | None


class Pushing:
    """git_push (:meth:`plan`, then :meth:`push` once the user confirmed, when asked), over the shared :class:`~.context.RemoteContext`."""

    def __init__(self, ctx: RemoteContext) -> None:
        self.ctx = ctx

    def plan(
        self,
        repo: Repository,
        remote: str | None = None,
        branch: str | None = None,
        *,
        set_upstream: bool = False,
        force_with_lease: bool = False,
        tags: list[str] | None = None,
    ) -> PushPlan:
        if branch:
            branch = self.ctx.valid_name(branch, "The branch")
        else:
            if repo.bare:
                raise InvalidArgument(f"{repo.name} is a bare repository: say which branch to push.")
            branch = self.ctx.current_branch(repo)
        sha = self.ctx.sha(repo, f"refs/heads/{branch}")
        if sha is None:
            raise NotFound(
                f"{repo.name} has no local branch {branch!r}.", next_step="List branches with git_branches."
            )
        push_remote, upstream_remote, upstream_ref = self.ctx.tracking(repo, branch)
        name = self.ctx.choose_remote(repo, remote, push_remote or upstream_remote)
        if upstream_remote == name and upstream_ref and upstream_ref.startswith("refs/heads/"):
            remote_branch = self.ctx.valid_name(
                upstream_ref.removeprefix("refs/heads/"), "The upstream branch"
            )
        else:
            remote_branch = branch
        named_tags = tuple(dict.fromkeys(self.ctx.valid_name(tag, "The tag") for tag in tags or []))
        if len(named_tags) > _MAX_TAGS:
            raise InvalidArgument(f"At most {_MAX_TAGS} tags per push.")
        for tag in named_tags:
            if self.ctx.git(
                repo, "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}", check=False
            ).returncode:
                raise NotFound(f"{repo.name} has no tag {tag!r}.", next_step="List tags with git_tags.")
        with self.ctx.runner.holding(repo.git_dir):
            urls = self.ctx.push_urls(repo, name)
            self.ctx.check_config(repo)
            self._check_fetch_refspecs(repo, name)
            default_branch, remote_sha = self._remote_heads(repo, name, urls, remote_branch)
        lease = None
        if force_with_lease:
            lease = self.ctx.sha(repo, f"refs/remotes/{name}/{remote_branch}") or ""
        protected = self._protected(repo, name, remote_branch, default_branch)
        target = f"{remote_branch} on {name} ({urls[0].shown})"
        confirmation = None
        if lease is not None:
            replaced = f"the remote's {lease[:12]}" if lease else "nothing (the branch must not exist yet)"
            confirmation = (
                f"Force-push {branch} ({sha[:12]}) to {target}, replacing {replaced}? Commits there that "
                f"{branch} does not have will no longer be on that branch."
                + (f" {protected}" if protected else "")
            )
        elif protected:
            if remote_sha and not self.ctx.is_ancestor(repo, remote_sha, sha):
                raise self._rejected(branch, remote_branch, name, "non-fast-forward")
            confirmation = f"Push {branch} ({sha[:12]}) to {target}? {protected}"
        return PushPlan(
            repo,
            name,
            urls,
            branch,
            sha,
            remote_branch,
            remote_sha,
            lease,
            named_tags,
            set_upstream,
            confirmation,
        )

    def _check_fetch_refspecs(self, repo: Repository, name: str) -> None:
        """git updates the refs a push maps through the remote's fetch refspecs: only remote-tracking ones."""
        out = self.ctx.git(
            repo, "config", "--get-all", "--end-of-options", f"remote.{name}.fetch", check=False
        )
        for spec in out.text.splitlines():
            destination = spec.partition(":")[2]
            if destination and not destination.startswith("refs/remotes/"):
                raise PermissionDenied(
                    f"remote.{name}.fetch maps to {destination!r}, outside refs/remotes/: a push would move "
                    "that local ref.",
                    next_step="Ask the user to fix the remote's fetch refspec.",
                )

    def _remote_heads(
        self, repo: Repository, name: str, urls: tuple[RemoteUrl, ...], remote_branch: str
    ) -> tuple[str | None, str | None]:
        """The remote's default branch and the current value of ``remote_branch`` there, as it says."""
        args = [
            "ls-remote",
            "--symref",
            f"--upload-pack={self.ctx.access.pack_programs(urls)[0]}",
            "--end-of-options",
            name,
            "HEAD",
            f"refs/heads/{remote_branch}",
        ]
        out = self.ctx.on_network(repo, args, self.ctx.access.network(name, urls, fetching=False), urls)
        default = current = None
        for line in out.text.splitlines():
            value, _, ref = line.partition("\t")
            if value.startswith("ref: refs/heads/") and ref == "HEAD":
                default = value.removeprefix("ref: refs/heads/")
            elif ref == f"refs/heads/{remote_branch}" and SHA.fullmatch(value):
                current = value
        return default, current

    def _protected(self, repo: Repository, name: str, remote_branch: str, default: str | None) -> str | None:
        """Why a push to ``remote_branch`` needs the user's confirmation, or ``None``."""
        if self.ctx.settings.protected_branches:
            for pattern in self.ctx.settings.protected_branches:
                if fnmatch.fnmatchcase(remote_branch, pattern):
                    return f"{remote_branch} is a protected branch (--protected-branch {pattern})."
            return None
        defaults = {default} if default else set()
        recorded = self.ctx.git(repo, "symbolic-ref", "--quiet", f"refs/remotes/{name}/HEAD", check=False)
        if recorded.returncode == 0:
            defaults.add(recorded.text.strip().removeprefix(f"refs/remotes/{name}/"))
        if remote_branch in defaults:
            return f"{remote_branch} is the remote's default branch."
        return None

    def push(self, plan: PushPlan) -> PushResult:
        repo, name = plan.repo, plan.remote
        with self.ctx.runner.holding(repo.git_dir):
            urls = self.ctx.push_urls(repo, name)
            if [u.raw for u in urls] != [u.raw for u in plan.urls]:
                raise Conflict(
                    f"The URL of the remote {name!r} changed while the push waited; nothing was pushed.",
                    retryable=True,
                    next_step="Call git_push again.",
                )
            self.ctx.check_config(repo)
            self._check_fetch_refspecs(repo, name)
            args = [
                "push",
                "--porcelain",
                "--no-verify",
                "--no-follow-tags",
                "--no-signed",
                "--recurse-submodules=no",
                "--no-force-if-includes",
                f"--receive-pack={self.ctx.access.pack_programs(urls)[1]}",
            ]
            if plan.lease is not None:
                args.append(f"--force-with-lease=refs/heads/{plan.remote_branch}:{plan.lease}")
            args += ["--end-of-options", name, f"{plan.sha}:refs/heads/{plan.remote_branch}"]
            args += [f"refs/tags/{tag}:refs/tags/{tag}" for tag in plan.tags]
            access = self.ctx.access.network(name, urls, fetching=False)
            try:
                out = self.ctx.runner.run(
                    repo.git_dir, repo.work_tree, args, max_bytes=1_000_000, check=False, network=access
                )
            except GitBusy:  # never started: nothing reached the remote
                raise
            except LimitExceeded:
                raise LimitExceeded(
                    f"git push to {urls[0].shown} did not finish within {access.timeout_s:.0f} s and was "
                    "stopped; the remote may or may not have the push.",
                    next_step="Fetch (git_fetch) to see what the remote has before trying again.",
                ) from None
        status = self._push_status(out.text, plan)
        if status is None:
            raise self.ctx.network_problem("push", out, urls[0].shown)
        flag, summary = status
        if flag in ("!",):
            reason = re.search(r"\(([^)]*)\)", summary)
            raise self._rejected(
                plan.branch, plan.remote_branch, name, reason.group(1) if reason else summary
            )
        if out.returncode != 0:  # the branch went, a tag did not
            raise self.ctx.network_problem("push", out, urls[0].shown)
        upstream_set = False
        if plan.set_upstream:
            self.ctx.git(repo, "config", "--end-of-options", f"branch.{plan.branch}.remote", name)
            self.ctx.git(
                repo,
                "config",
                "--end-of-options",
                f"branch.{plan.branch}.merge",
                f"refs/heads/{plan.remote_branch}",
            )
            upstream_set = True
        outcome = {"*": "new branch", "+": "forced with lease", "=": "up to date"}.get(flag, "fast-forward")
        message = f"Pushed {plan.branch} to {name}/{plan.remote_branch} ({outcome})."
        if plan.tags:
            message += f" Tags: {', '.join(plan.tags)}."
        if upstream_set:
            message += f" {plan.branch} now tracks {name}/{plan.remote_branch}."
        return PushResult(
            repository=repo.name,
            remote=name,
            url=urls[0].shown,
            branch=plan.branch,
            remote_branch=plan.remote_branch,
            outcome=outcome,
            old=plan.remote_sha,
            new=plan.sha,
            tags=list(plan.tags),
            upstream_set=upstream_set,
            message=message,
        )

    @staticmethod
    def _push_status(porcelain: str, plan: PushPlan) -> tuple[str, str] | None:
        """(flag, summary) of the branch's line of ``git push --porcelain``; None when git printed none."""
        target = f":refs/heads/{plan.remote_branch}"
        for line in porcelain.splitlines():
            parts = line.split("\t")
            if len(parts) >= 3 and parts[1].endswith(target):
                return parts[0][:1] or " ", parts[2]
        return None

    @staticmethod
    def _rejected(branch: str, remote_branch: str, remote: str, reason: str) -> Conflict:
        if reason in ("non-fast-forward", "fetch first"):
            return Conflict(
                f"The push of {branch} to {remote}/{remote_branch} was rejected: the remote branch has commits "
                f"{branch} does not have ({reason}).",
                next_step="Fetch and pull (git_pull fast-forwards, or tells what diverged), rebase or merge "
                "locally, then push again; replacing the remote's commits needs force_with_lease and the user's "
                "confirmation.",
            )
        if reason == "stale info":
            return Conflict(
                f"The force-with-lease push of {branch} to {remote}/{remote_branch} was rejected: the remote "
                "branch moved since it was last fetched, so the lease no longer holds.",
                next_step="git_fetch, look at what arrived, and ask the user again.",
            )
        # Any other reason is the remote's own words (a hook's, a hosting service's): data.
        return Conflict(
            f"The push of {branch} to {remote}/{remote_branch} was rejected. The reason given:\n"
            f"{fence(reason[:300], 'reason given by the remote')}",
            next_step="Tell the user what the remote said; retrying the same push will be rejected again.",
        )
