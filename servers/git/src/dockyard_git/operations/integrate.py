"""Merge, rebase, cherry-pick and revert, each with continue, skip and abort: every reply says what
happened, reports conflicts (bounded, see :mod:`.conflicts`) and names the next step.

Every command runs ``integrating`` (:mod:`..gitcmd.integration`): no editor, no merge driver, recorded
resolution, autostash or hook of the repository's. A rebase, cherry-pick or revert left half-done by
someone else is continued only when its instructions hold nothing that would run a command (``exec``) or a
merge strategy outside git's own.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Literal

from dockyard_shared import Conflict, InvalidArgument, PermissionDenied

from ..local_models import IntegrationResult
from ..repos import Repository
from .conflicts import conflict_report, has_markers, unmerged
from .plumbing import COMMIT_FORMAT, Plumbing, clip, parse_commits

__all__ = ["Integration", "Operation", "RebasePlan"]

Operation = Literal["merge", "rebase", "cherry-pick", "revert"]
Action = Literal["start", "continue", "skip", "abort"]

_MAX_PICKS = 50
_BUILTIN_STRATEGIES = {"ort", "recursive", "resolve", "octopus", "ours", "subtree"}
_SAFE_TODO = {
    "pick", "p", "reword", "r", "edit", "e", "squash", "s", "fixup", "f", "drop", "d", "label", "l",
    "reset", "t", "merge", "m", "update-ref", "u", "noop", "break", "b", "revert",
}  # fmt: skip
_COMMON = ["--no-rerere-autoupdate", "--no-gpg-sign"]


@dataclass(frozen=True)
class RebasePlan:
    onto: str  # commit id
    onto_name: str
    head: str
    commits: int
    published: int  # of those, already on a remote-tracking branch

    @property
    def confirmation(self) -> str | None:
        if not self.published:
            return None
        return (
            f"Rebase {self.commits} commit(s) onto {self.onto_name}? {self.published} of them are already on a "
            "remote: rewriting them means a force push and breaks others' copies."
        )


class Integration:
    def __init__(self, plumbing: Plumbing) -> None:
        self.plumbing = plumbing
        self.limits = plumbing.limits

    # -- state --------------------------------------------------------------------------------

    def in_progress(self, repo: Repository) -> Operation | None:
        git_dir = str(repo.git_dir)
        if os.path.exists(f"{git_dir}/rebase-merge") or os.path.exists(f"{git_dir}/rebase-apply"):
            return "rebase"
        if os.path.exists(f"{git_dir}/MERGE_HEAD"):
            return "merge"
        if os.path.exists(f"{git_dir}/CHERRY_PICK_HEAD"):
            return "cherry-pick"
        if os.path.exists(f"{git_dir}/REVERT_HEAD"):
            return "revert"
        todo = _state(repo, "sequencer/todo")
        if todo is not None:
            first = next((line.split()[0] for line in todo.splitlines() if line.strip()), "pick")
            return "revert" if first == "revert" else "cherry-pick"
        return None

    def _git(self, repo: Repository, *args: str):
        return self.plumbing.runner.run(repo.git_dir, repo.work_tree, args, check=False, integrating=True)

    def _ready_to_start(self, repo: Repository, operation: Operation) -> str:
        self.plumbing.require_work_tree(repo)
        running = self.in_progress(repo)
        if running:
            raise Conflict(
                f"A {running} is in progress in {repo.name}.",
                next_step=f"Finish it first: git_{running.replace('-', '_')} with action 'continue' or 'abort'.",
            )
        status = self.plumbing.git(repo, "status", "--porcelain", "--untracked-files=no", max_bytes=4000)
        if status.text.strip() or status.truncated:
            raise Conflict(
                f"{repo.name} has uncommitted changes; a {operation} could mix them with its own.",
                next_step="Commit them (git_commit) or set them aside (git_stash push), then call again.",
            )
        email = self.plumbing.git(repo, "config", "--get", "user.email", check=False).text.strip()
        if not email:
            raise Conflict(
                "The repository has no committer identity (user.name / user.email in its config).",
                next_step="Ask the user to set them: git config user.name '…' && git config user.email '…'.",
            )
        _, head = self.plumbing.head(repo)
        if head is None:
            raise Conflict(f"{repo.name} has no commit yet.", next_step="Commit something first.")
        return head

    # -- starting -----------------------------------------------------------------------------

    def merge(
        self,
        repo: Repository,
        revision: str,
        *,
        fast_forward: Literal["allow", "only", "never"] = "allow",
        message: str | None = None,
    ) -> IntegrationResult:
        head = self._ready_to_start(repo, "merge")
        self.plumbing.verify(repo, revision)
        mode = {"allow": "--ff", "only": "--ff-only", "never": "--no-ff"}[fast_forward]
        args = ["merge", "--no-edit", "--no-verify", "--no-stat", mode, *_COMMON]
        if message is not None:
            if not message.strip() or len(message) > 10_000 or "\x00" in message:
                raise InvalidArgument("message must be 1 to 10,000 characters, without NUL.")
            args += ["-m", message]
        output = self._git(repo, *args, "--end-of-options", revision.strip())
        return self._outcome(repo, "merge", head, output, started=True)

    def rebase_plan(self, repo: Repository, onto: str | None) -> RebasePlan:
        head = self._ready_to_start(repo, "rebase")
        name = onto or "@{upstream}"
        if onto is None:
            found = self.plumbing.git(
                repo, "rev-parse", "--verify", "--quiet", "--symbolic-full-name", "@{upstream}", check=False
            )
            if found.returncode != 0:
                raise InvalidArgument(
                    "The current branch has no upstream to rebase onto.",
                    next_step="Pass onto: the branch to rebase onto (git_branches lists them).",
                )
        onto_sha = self.plumbing.verify(repo, name, "onto")
        count = int(self.plumbing.git(repo, "rev-list", "--count", f"{onto_sha}..{head}").text.strip() or 0)
        local = self.plumbing.git(repo, "rev-list", "--count", f"{onto_sha}..{head}", "--not", "--remotes")
        published = count - int(local.text.strip() or 0)
        return RebasePlan(onto_sha, clip(name, 200), head, count, published)

    def rebase(self, repo: Repository, plan: RebasePlan) -> IntegrationResult:
        head = self._ready_to_start(repo, "rebase")
        if head != plan.head:
            raise Conflict("HEAD moved while the user was asked.", next_step="Call git_rebase again.")
        args = ["rebase", "--no-verify", "--no-autostash", "--no-fork-point", "--no-stat", *_COMMON]
        output = self._git(repo, *args, "--end-of-options", plan.onto)
        return self._outcome(repo, "rebase", head, output, started=True)

    def pick(self, repo: Repository, operation: Literal["cherry-pick", "revert"], commits: list[str]):
        head = self._ready_to_start(repo, operation)
        if not commits or len(commits) > _MAX_PICKS:
            raise InvalidArgument(f"Name 1 to {_MAX_PICKS} commits.")
        shas = [self.plumbing.verify(repo, commit, "commit") for commit in commits]
        for commit, sha in zip(commits, shas, strict=True):
            parents = self.plumbing.git(repo, "rev-list", "--parents", "-n", "1", sha).text.split()
            if len(parents) > 2:
                raise InvalidArgument(
                    f"{clip(commit, 100)} is a merge commit; picking or reverting one needs a chosen parent.",
                    next_step="Name the commits of the merged branch instead, or ask the user to do this one.",
                )
        extra = ["--no-edit"] if operation == "revert" else []
        output = self._git(repo, operation, *extra, *_COMMON, "--end-of-options", *shas)
        return self._outcome(repo, operation, head, output, started=True)

    # -- continuing ---------------------------------------------------------------------------

    def act(self, repo: Repository, operation: Operation, action: Action) -> IntegrationResult:
        self.plumbing.require_work_tree(repo)
        running = self.in_progress(repo)
        if running != operation:
            where = f"a {running} is in progress" if running else "nothing is in progress"
            raise Conflict(
                f"There is no {operation} to {action} in {repo.name}: {where}.",
                next_step=f"Use git_{running.replace('-', '_')}." if running else "Start one first.",
            )
        _, head = self.plumbing.head(repo)
        if action == "abort":
            output = self._git(repo, operation, "--abort")
            if output.returncode != 0:
                raise Conflict(
                    f"git {operation} --abort failed: {_tail(output.stderr)}", next_step="Check git_status."
                )
            _, now = self.plumbing.head(repo)
            return IntegrationResult(
                repository=str(repo.path),
                operation=operation,
                state="aborted",
                message=f"The {operation} was aborted; the branch is back where it was.",
                next_step="Nothing to do; git_status shows the working tree.",
                head=now,
            )
        if action == "skip" and operation == "merge":
            raise InvalidArgument("A merge cannot skip.", next_step="Use action 'continue' or 'abort'.")
        self._check_instructions(repo)
        if action == "continue":
            still = self._stage_resolved(repo)
            if still:
                return self._outcome(repo, operation, head, None, started=False)
            if operation == "merge":
                output = self._git(repo, "commit", "--no-edit", "--no-verify", "--no-gpg-sign")
            else:
                output = self._git(repo, operation, "--continue")
        else:
            output = self._git(repo, operation, "--skip")
        return self._outcome(repo, operation, head, output, started=False)

    def _stage_resolved(self, repo: Repository) -> list[str]:
        """Stage every conflicted file whose markers are gone (or that was deleted); the rest stay."""
        still = []
        for path, (_, submodule) in unmerged(self.plumbing, repo).items():
            # Refuses a path leading out of the repository; the path itself (a link too) is what is staged.
            self.plumbing.repositories.relative_path(repo, path)
            full = os.path.join(str(repo.work_tree), path)
            if submodule:
                still.append(path)
            elif not os.path.lexists(full):
                self.plumbing.git(repo, "rm", "--cached", "--quiet", "--", path)
            elif os.path.islink(full) or not has_markers(_read_small(full, 4_000_000) or ""):
                self.plumbing.git(repo, "add", "--", path)
            else:
                still.append(path)
        return still

    def _check_instructions(self, repo: Repository) -> None:
        """Refuse to continue a sequence whose instructions would run a command or an outside strategy.
        Nothing read here is echoed beyond a known step or a strategy that is a plain name."""
        refuse = "Ask the user to finish or abort it themselves; or call with action 'abort'."
        for todo in ("rebase-merge/git-rebase-todo", "sequencer/todo"):
            for line in (_state(repo, todo) or "").splitlines():
                word = line.strip().split(maxsplit=1)[0] if line.strip() else "#"
                if not word.startswith("#") and word not in _SAFE_TODO:
                    step = f"an '{word}'" if word in ("exec", "x") else "an unknown"
                    raise PermissionDenied(
                        f"The {todo} of {repo.name} holds {step} step, which this server never runs.",
                        next_step=refuse,
                    )
        strategies = [
            (_state(repo, "rebase-merge/strategy") or "").strip(),
            (_state(repo, "rebase-apply/strategy") or "").strip(),
            *re.findall(r"(?mi)^\s*strategy\s*=\s*(\S+)", _state(repo, "sequencer/opts") or ""),
        ]
        for strategy in filter(None, strategies):
            if strategy.strip('"') not in _BUILTIN_STRATEGIES:
                name = repr(strategy) if re.fullmatch(r"[\w-]{1,40}", strategy) else "a strategy"
                raise PermissionDenied(
                    f"The {repo.name} sequence names {name}, not one of git's merge strategies.",
                    next_step=refuse,
                )

    # -- outcome ------------------------------------------------------------------------------

    def _outcome(self, repo: Repository, operation: Operation, before: str | None, output, *, started: bool):
        _, head = self.plumbing.head(repo)
        tool = f"git_{operation.replace('-', '_')}"
        base = {"repository": str(repo.path), "operation": operation, "head": head}
        if self.in_progress(repo) == operation:
            report = conflict_report(self.plumbing, repo)
            if report.total:
                skip = "" if operation == "merge" else ", 'skip' to drop this commit"
                return IntegrationResult(
                    **base,
                    state="conflicts",
                    message=f"The {operation} stopped on conflicts in {report.total} file(s).",
                    next_step=f"Edit each file to the wanted text (markers removed), then {tool} with action "
                    f"'continue' (it stages resolved files); or 'abort' to return to where it started{skip}.",
                    conflicts=report.files,
                    conflicts_total=report.total,
                    truncated=report.truncated,
                    note=report.note,
                )
            said = _tail(output.stderr or output.text) if output is not None else ""
            return IntegrationResult(
                **base,
                state="stopped",
                message=f"The {operation} stopped without conflicts" + (f": {said}" if said else "."),
                next_step=f"{tool} with action 'continue'"
                + ("" if operation == "merge" else ", 'skip' to drop the current commit")
                + ", or 'abort'.",
            )
        if output is not None and output.returncode != 0:
            said = _tail(output.stderr or output.text)
            raise Conflict(
                f"git {operation} failed, nothing was changed: {said}", next_step=_after_failure(said)
            )
        if started and head == before:
            return IntegrationResult(
                **base, state="up to date", message="Nothing to do: already up to date.", next_step="Nothing."
            )
        made = []
        if before and head and before != head:
            log = self.plumbing.git(repo, "log", "-n", "20", f"--format={COMMIT_FORMAT}", f"{before}..{head}")
            made = parse_commits(log.text, self.limits)
        return IntegrationResult(
            **base,
            state="done",
            message=f"The {operation} is complete.",
            next_step="Review with git_log or git_diff; publish with git_push if the user wants.",
            commits=made,
        )


def _after_failure(said: str) -> str:
    lowered = said.lower()
    if "fast-forward" in lowered:
        return "The branches have diverged: merge with fast_forward='allow', or rebase."
    if "would be overwritten" in lowered or "untracked" in lowered:
        return "Untracked files are in the way: ask the user to move or commit them, then call again."
    if "unrelated histories" in lowered:
        return "The histories share no commit; this server does not merge unrelated histories."
    if "empty" in lowered:
        return "The change is already there: nothing to apply."
    return "Check git_status and git_log, then call again or ask the user."


def _tail(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return clip(" ".join(lines[-3:]), 600)


def _state(repo: Repository, relative: str) -> str | None:
    """A file of the repository's sequencer state, refused if a link leads it out of the git dir."""
    path = os.path.join(str(repo.git_dir), relative)
    git_dir = os.path.realpath(repo.git_dir)
    if os.path.lexists(path) and not os.path.realpath(path).startswith(git_dir + os.sep):
        raise PermissionDenied(
            f"{relative} in the git directory of {repo.name} leads outside it.",
            next_step="Ask the user to remove it; this server does not continue such a sequence.",
        )
    return _read_small(path)


def _read_small(path: str, limit: int = 1_000_000) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return os.read(fd, limit).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)
