"""Linked worktrees: list, add (a new or an existing branch), remove, prune.

A worktree's folder must lie inside the roots; once added, it is a served repository of its own (its git
dir, under the common dir's ``worktrees/``, is checked and neutralised by the runner like any other), so a
parallel agent passes it as ``repo_path``. Removal never runs git's own cleanliness check (which starts a
git on the worktree's git dir, stopped by the runner's gatekeeper): the worktree's status is read here, and
a dirty one is removed only after the user agreed (the tool asks).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from dockyard_shared import Conflict, InvalidArgument, NotFound, PermissionDenied

from ..bounds import take
from ..local_models import WorktreeInfo, WorktreeList, WorktreeResult
from ..repos import Repository, git_dir_of, validate_revision_text
from .plumbing import Plumbing, clip

__all__ = ["RemovalPlan", "Worktrees"]

_MAX_WORKTREES = 200


@dataclass(frozen=True)
class RemovalPlan:
    path: str
    dirty: list[str]  # up to 10 changed paths; empty when clean

    @property
    def confirmation(self) -> str | None:
        if not self.dirty:
            return None
        return (
            f"Remove the worktree {self.path}? It has uncommitted or untracked changes "
            f"({', '.join(self.dirty)}), which would be lost."
        )


class Worktrees:
    def __init__(self, plumbing: Plumbing) -> None:
        self.plumbing = plumbing
        self.repositories = plumbing.repositories

    def _records(self, repo: Repository) -> list[dict[str, str]]:
        output = self.plumbing.git(repo, "worktree", "list", "--porcelain", "-z", max_bytes=4_000_000)
        records, current = [], {}
        for field in output.text.split("\x00"):
            if not field:
                if current:
                    records.append(current)
                current = {}
                continue
            key, _, value = field.partition(" ")
            current[key] = value
        if current:
            records.append(current)
        return records

    def _info(self, record: dict[str, str], first: bool) -> WorktreeInfo:
        path = record.get("worktree", "")
        branch = record.get("branch")
        served = False
        if path and self.repositories.allows(Path(path)) and "prunable" not in record:
            git_dir = git_dir_of(Path(path)) if not first or "bare" not in record else Path(path)
            served = git_dir is not None and self.repositories.allows(git_dir)
            served = served and not self.plumbing.runner.refusal(git_dir)  # type: ignore[arg-type]
        return WorktreeInfo(
            path=clip(path, 1000),
            head=record.get("HEAD"),
            branch=clip(branch.removeprefix("refs/heads/"), 500) if branch else None,
            main=first,
            bare="bare" in record,
            locked="locked" in record,
            prunable="prunable" in record,
            served=served,
        )

    def list(self, repo: Repository) -> WorktreeList:
        infos = [self._info(record, index == 0) for index, record in enumerate(self._records(repo))]
        shown, more, _ = take(infos, max_items=_MAX_WORKTREES, max_chars=self.plumbing.limits.max_reply_chars)
        return WorktreeList(
            repository=str(repo.path),
            worktrees=shown,
            truncated=more,
            note=f"{len(shown)} of {len(infos)} worktrees listed." if more else None,
        )

    def _target(self, repo: Repository, path: str) -> Path:
        """Where a new worktree goes: inside the roots, not inside a git dir, absent or an empty folder."""
        if not path or path.startswith("-") or "\x00" in path or "\n" in path or len(path) > 1000:
            raise InvalidArgument(
                "path must be a folder path (not starting with '-', no control characters, ≤ 1,000 characters).",
                next_step="E.g. '../myrepo-feature' (relative to the repository) or an absolute path.",
            )
        base = repo.work_tree or repo.path
        candidate = Path(path) if os.path.isabs(path) else base / path
        parent = Path(os.path.realpath(candidate.parent))
        target = parent / candidate.name
        if candidate.name in ("", ".", "..") or not self.repositories.allows(target):
            raise PermissionDenied(
                f"The worktree path {clip(path, 200)!r} is outside the folders this server may use.",
                next_step="Pick a folder inside the roots (git_repositories shows them), e.g. beside the repository.",
            )
        common = Path(os.path.realpath(repo.git_dir))
        if (
            target == common
            or common in target.parents
            or ".git" in target.parts
            or target == Path(os.path.realpath(base))
        ):
            raise PermissionDenied("A worktree may not go inside a git directory or over the repository.")
        if not parent.is_dir():
            raise NotFound(
                f"The folder {parent} does not exist.", next_step="Create it first, or pick another."
            )
        if os.path.lexists(target) and (target.is_symlink() or not target.is_dir() or any(target.iterdir())):
            raise Conflict(
                f"{target} already exists and is not an empty folder.", next_step="Pick another path."
            )
        return target

    def add(
        self, repo: Repository, path: str, branch: str, *, create: bool, start_point: str | None
    ) -> WorktreeResult:
        self.plumbing.require_work_tree(repo)
        validate_revision_text(branch, "branch")
        exists = self.plumbing.git(
            repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False
        )
        if create:
            check = self.plumbing.git(repo, "check-ref-format", "--branch", branch, check=False)
            if check.returncode != 0:
                raise InvalidArgument(f"{clip(branch, 100)!r} is not a valid branch name.")
            if exists.returncode == 0:
                raise Conflict(
                    f"A branch named {branch!r} already exists.", next_step="Pass create=false to use it."
                )
            start = self.plumbing.verify(repo, start_point or "HEAD", "start_point")
            target = self._target(repo, path)
            args = ["worktree", "add", "--no-track", "-b", branch, "--end-of-options", str(target), start]
        else:
            if exists.returncode != 0:
                raise NotFound(
                    f"There is no local branch {branch!r}.",
                    next_step="Pass create=true to make it, or check the name with git_branches.",
                )
            if start_point:
                raise InvalidArgument("start_point is only for a new branch (create=true).")
            target = self._target(repo, path)
            args = ["worktree", "add", "--end-of-options", str(target), branch]
        output = self.plumbing.runner.run(
            repo.git_dir,
            repo.work_tree,
            args,
            check=False,
            extra_env={"DOCKYARD_GIT_NEW_WORKTREE": f"{target}/.git"},
        )
        if output.returncode != 0:
            message = " ".join(output.stderr.strip().splitlines()[-2:])
            raise Conflict(
                f"git worktree add failed: {clip(message, 500)}",
                next_step="A branch checked out in another worktree cannot be checked out twice: pick another "
                "branch, or create a new one.",
            )
        self.repositories.repositories(refresh=True)
        info = next(
            (
                self._info(r, False)
                for r in self._records(repo)
                if os.path.realpath(r.get("worktree", "")) == str(target)
            ),
            None,
        )
        served = info is not None and info.served
        return WorktreeResult(
            repository=str(repo.path),
            message=f"Worktree at {target} on branch {branch}.",
            worktree=info,
            next_step=f"Pass repo_path='{target}' to work in it."
            if served
            else "It is not served: see git_repositories.",
        )

    def _find(self, repo: Repository, path: str) -> dict[str, str]:
        if not path or path.startswith("-") or "\x00" in path:
            raise InvalidArgument("path must name a worktree (git_worktrees lists them).")
        base = repo.work_tree or repo.path
        wanted = os.path.realpath(path if os.path.isabs(path) else base / path)
        records = self._records(repo)
        for index, record in enumerate(records):
            if os.path.realpath(record.get("worktree", "")) == wanted:
                if index == 0:
                    raise InvalidArgument("That is the main worktree; only linked worktrees are removed.")
                return record
        raise NotFound(f"No worktree of {repo.name} at {clip(path, 200)!r}.", next_step="Call git_worktrees.")

    def removal_plan(self, repo: Repository, path: str) -> RemovalPlan:
        record = self._find(repo, path)
        where = record["worktree"]
        if "locked" in record:
            raise Conflict(
                f"The worktree {where} is locked.",
                next_step="Ask the user to unlock it (git worktree unlock).",
            )
        if not self.repositories.allows(Path(where)):
            raise PermissionDenied(f"The worktree {where} is outside the folders this server may use.")
        dirty: list[str] = []
        git_dir = git_dir_of(Path(where))
        if git_dir is not None and os.path.isdir(where):
            status = self.plumbing.runner.run(
                git_dir,
                Path(where),
                ["status", "--porcelain", "-z", "--untracked-files=normal"],
                max_bytes=64_000,
            )
            dirty = [clip(entry[3:], 100) for entry in status.text.split("\x00") if len(entry) > 3][:10]
        return RemovalPlan(where, dirty)

    def remove(self, repo: Repository, plan: RemovalPlan) -> WorktreeResult:
        again = self.removal_plan(repo, plan.path)
        if again.dirty and not plan.dirty:
            raise Conflict(
                "The worktree changed while the user was asked.", next_step="Call git_worktree_remove again."
            )
        # --force once: git's own check would start a git on the worktree's git dir (see the module docstring);
        # the status was read above, and a dirty worktree reaches here only with the user's consent.
        self.plumbing.git(repo, "worktree", "remove", "--force", "--end-of-options", plan.path)
        self.repositories.repositories(refresh=True)
        return WorktreeResult(repository=str(repo.path), message=f"Removed the worktree {plan.path}.")

    def prune(self, repo: Repository) -> WorktreeResult:
        output = self.plumbing.git(repo, "worktree", "prune", "--verbose")
        lines = [line.strip() for line in (output.stderr + output.text).splitlines() if line.strip()]
        pruned = [clip(line, 300) for line in lines[:100]]
        self.repositories.repositories(refresh=True)
        return WorktreeResult(
            repository=str(repo.path),
            message=f"Pruned {len(lines)} stale worktree record(s)." if lines else "Nothing to prune.",
            pruned=pruned,
        )
