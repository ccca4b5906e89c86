"""What the remote operations share (:class:`RemoteContext`): running git in the repository, names, which
remote and branch, and running a command on the network with its failures worded for the model."""

from __future__ import annotations

import re

from dockyard_shared import (
    InvalidArgument,
    LimitExceeded,
    NotFound,
    PermissionDenied,
    Problem,
    UpstreamUnavailable,
    did_you_mean,
)
from dockyard_shared.untrusted import fence

from ..gitcmd import GitBusy, GitOutput, GitRunner, NetworkAccess
from ..repos import Repository, RepositorySet
from ..settings import Limits, RemoteSettings
from .access import RemoteAccess, RemoteUrl, classify, refused_config, scrub

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/+@-]{0,99}")
SHA = re.compile(r"[0-9a-f]{40,64}")
_COUNT_CAP = 10_000  # commits counted, at most, per count
# curl's words for an answer it did not follow (http.followRedirects=false): "returned error: 301".
_REDIRECT = re.compile(r"returned error: (30[1278])\b")


class RemoteContext:
    """One repository set's remotes as the operator allows them; the listing, fetching and pushing objects
    of :class:`~.RemoteOperations` each hold the same one."""

    def __init__(
        self,
        repositories: RepositorySet,
        runner: GitRunner,
        settings: RemoteSettings,
        limits: Limits | None = None,
        *,
        access: RemoteAccess | None = None,
    ) -> None:
        self.repositories = repositories
        self.runner = runner
        self.settings = settings
        self.limits = limits or Limits()
        self.access = access or RemoteAccess(settings, runner.git, runner.real_exec_path())

    # -- plumbing -----------------------------------------------------------------------------

    def git(self, repo: Repository, *args: str, check: bool = True, stdin: bytes | None = None) -> GitOutput:
        return self.runner.run(
            repo.git_dir, repo.work_tree, args, max_bytes=2_000_000, check=check, stdin=stdin
        )

    def sha(self, repo: Repository, ref: str) -> str | None:
        out = self.git(
            repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}", check=False
        )
        sha = out.text.strip()
        return sha if out.returncode == 0 and SHA.fullmatch(sha) else None

    def is_ancestor(self, repo: Repository, older: str, newer: str) -> bool:
        return self.git(repo, "merge-base", "--is-ancestor", older, newer, check=False).returncode == 0

    def count(self, repo: Repository, include: list[str], exclude: list[str]) -> tuple[int, bool]:
        """Commits reachable from ``include`` and from none of ``exclude`` (at most :data:`_COUNT_CAP`)."""
        if not include:
            return 0, False
        lines = "".join(f"{sha}\n" for sha in include) + "".join(f"^{sha}\n" for sha in exclude)
        out = self.git(
            repo, "rev-list", "--count", f"--max-count={_COUNT_CAP}", "--stdin", stdin=lines.encode()
        )
        count = int(out.text.strip() or 0)
        return count, count >= _COUNT_CAP

    def refs(self, repo: Repository, prefix: str = "") -> dict[str, str]:
        """Refs that name commits (or tags of them), by name."""
        args = ["for-each-ref", "--format=%(objectname) %(objecttype) %(refname)"]
        out = self.git(repo, *args, *([prefix] if prefix else []))
        refs = {}
        for line in out.text.splitlines():
            sha, kind, ref = ([*line.split(" ", 2), "", ""])[:3]
            if kind in ("commit", "tag"):
                refs[ref] = sha
        return refs

    def _cwd(self, repo: Repository):
        return repo.work_tree or repo.git_dir

    def valid_name(self, value: str, what: str) -> str:
        """A remote, branch or tag name: plain, not an option, a valid ref name component."""
        if not isinstance(value, str) or not _NAME.fullmatch(value) or ".." in value or "//" in value:
            raise InvalidArgument(
                f"{what} {value[:60]!r} is not a name this server accepts "
                "(letters, digits and ._/+@- only, not starting with '-' or '.').",
                next_step="Check the name with git_remotes or git_branches.",
            )
        if value.endswith(("/", ".lock", ".")):
            raise InvalidArgument(f"{what} {value!r} is not a valid name.")
        return value

    # -- which remote, which branch -----------------------------------------------------------

    def remote_names(self, repo: Repository) -> list[str]:
        return [line for line in self.git(repo, "remote").text.splitlines() if line]

    def choose_remote(self, repo: Repository, name: str | None, preferred: str | None = None) -> str:
        """The remote ``name`` asks for; else ``preferred`` (the branch's upstream, when a remote), else
        origin, else the only one."""
        names = self.remote_names(repo)
        if not name and preferred in names:
            name = preferred
        if name:
            self.valid_name(name, "The remote")
            if name not in names:
                raise NotFound(
                    f"{repo.name} has no remote named {name!r}.",
                    next_step=did_you_mean(name, names, kind="remote") if names else "It has no remotes.",
                )
            return name
        if "origin" in names:
            return "origin"
        if len(names) == 1:
            return self.valid_name(names[0], "The remote")
        if not names:
            raise NotFound(
                f"{repo.name} has no remotes.", next_step="Ask the user to add one (git remote add)."
            )
        raise InvalidArgument(
            f"{repo.name} has several remotes and none is the branch's upstream; say which one.",
            next_step=f"Pass remote: one of {', '.join(names[:10])}.",
        )

    def current_branch(self, repo: Repository) -> str:
        out = self.git(repo, "symbolic-ref", "--quiet", "HEAD", check=False)
        ref = out.text.strip()
        if out.returncode != 0 or not ref.startswith("refs/heads/"):
            raise InvalidArgument(
                f"{repo.name} has no current branch (HEAD is detached).",
                next_step="Pass branch, or switch to a branch with git_checkout.",
            )
        return ref.removeprefix("refs/heads/")

    def tracking(self, repo: Repository, branch: str) -> tuple[str | None, str | None, str | None]:
        """(push remote, upstream remote, upstream's ref on the remote) of a local branch."""
        out = self.git(
            repo,
            "for-each-ref",
            "--format=%(push:remotename)%00%(upstream:remotename)%00%(upstream:remoteref)",
            f"refs/heads/{branch}",
        )
        parts = [*(out.text.splitlines() or [""])[0].split("\x00"), "", "", ""]
        return parts[0] or None, parts[1] or None, parts[2] or None

    def fetch_url(self, repo: Repository, remote: str) -> RemoteUrl:
        out = self.git(repo, "remote", "get-url", "--end-of-options", remote, check=False)
        if out.returncode != 0 or not out.text.strip():
            raise NotFound(f"The remote {remote!r} has no URL.", next_step="Ask the user to set one.")
        return self.classify(repo, out.text.splitlines()[0])

    def push_urls(self, repo: Repository, remote: str) -> tuple[RemoteUrl, ...]:
        out = self.git(repo, "remote", "get-url", "--push", "--all", "--end-of-options", remote, check=False)
        urls = [line for line in out.text.splitlines() if line]
        if out.returncode != 0 or not urls:
            raise NotFound(f"The remote {remote!r} has no URL.", next_step="Ask the user to set one.")
        return tuple(self.classify(repo, url) for url in urls[:10])

    def classify(self, repo: Repository, url: str) -> RemoteUrl:
        return classify(
            url,
            cwd=self._cwd(repo),
            protocols=self.settings.protocols,
            inside_roots=self.repositories.allows,
            refusal=self.runner.refusal,
        )

    def check_config(self, repo: Repository) -> None:
        reason = refused_config(self.runner.config_names(repo.git_dir))
        if reason:
            raise PermissionDenied(
                f"{repo.name}: {reason}.",
                next_step="Ask the user to remove that setting from the repository's config (the operator can "
                "set GIT_SSL_CAINFO for the server instead).",
            )

    # -- running on the network ---------------------------------------------------------------

    def on_network(self, repo: Repository, args: list[str], access: NetworkAccess, urls) -> GitOutput:
        shown = urls[0].shown
        try:
            out = self.runner.run(
                repo.git_dir, repo.work_tree, args, max_bytes=1_000_000, check=False, network=access
            )
        except GitBusy:  # never started: nothing reached the remote
            raise
        except LimitExceeded:
            raise LimitExceeded(
                f"git {args[0]} with {shown} did not finish within {access.timeout_s:.0f} s and was stopped.",
                retryable=True,
                next_step="Retry later; if the remote is just slow, the operator can raise --remote-timeout.",
            ) from None
        if out.returncode != 0:
            raise self.network_problem(args[0], out, shown)
        return out

    def network_problem(self, command: str, out: GitOutput, shown: str) -> Problem:
        stderr = scrub(out.stderr, self.access.secrets)
        lines = [
            line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith("hint:")
        ]
        message = " ".join(lines[-3:])[:600] or f"git {command} failed"
        # git's words hold the remote's ("remote: …", "remote error: …"): data, after our own sentence.
        said = f" git said:\n{fence(message, f'output of git {command}')}"
        lowered = stderr.lower()
        what = f"git {command} with {shown} failed"
        if "signal 25" in lowered or "file size limit" in lowered or "file too large" in lowered:
            return LimitExceeded(
                f"git {command} with {shown} was stopped: what it fetched exceeds the limit of "
                f"{self.settings.max_fetch_bytes:,} bytes in one file (--max-fetch-bytes).",
                next_step="Ask the user to fetch this repository themselves, or the operator to raise "
                "--max-fetch-bytes.",
            )
        redirect = _REDIRECT.search(lowered)
        if redirect:
            return PermissionDenied(
                f"git {command} with {shown} was refused: the remote answered with a redirect (HTTP "
                f"{redirect.group(1)}), and this server does not follow redirects, whatever host they lead "
                "to; nothing was sent to where it leads.",
                next_step="Tell the user the remote has moved; if they trust the new address, they can set it "
                "with git remote set-url, and the call will then go there after the same checks.",
            )
        if "not allowed" in lowered and "transport" in lowered:
            return PermissionDenied(
                f"{what}: the remote or its config asks for a transport this server does not use.{said}",
                next_step="Ask the user to check the remote's URL and remote.<name>.vcs.",
            )
        auth = (
            "authentication failed",
            "could not read username",
            "could not read password",
            "error: 401",
            "error: 403",
            "permission denied",
            "host key verification failed",
        )
        if any(marker in lowered for marker in auth):
            token = (
                f" The token comes from ${self.settings.token_env} and is sent only to "
                f"{', '.join(self.settings.token_hosts)} (--remote-token-host)."
                if self.settings.token_env
                else " No token is configured (--remote-token-env)."
            )
            return PermissionDenied(
                f"{what}: the remote refused the credentials.{token}{said}",
                next_step="Tell the user: the credentials for this remote are missing or wrong (their git "
                "credential helper, ssh agent, or the token the operator configured).",
            )
        if any(m in lowered for m in ("not found", "does not appear to be a git repository", "error: 404")):
            return NotFound(f"{what}.{said}", next_step="Check the remote's URL with git_remotes.")
        if any(
            m in lowered
            for m in ("could not resolve", "connection refused", "failed to connect", "timed out", "error: 5")
        ):
            return UpstreamUnavailable(f"{what}.{said}", next_step="Retry later.")
        return UpstreamUnavailable(
            f"{what}.{said}", retryable=False, next_step="Check the remote with git_remotes."
        )
