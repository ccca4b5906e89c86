"""The working tree: the served repositories' state, status and diffs, and the writes (stage, commit,
branch, switch, stash). Nothing here discards work."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import get_args

from dockyard_shared import (
    Conflict,
    InvalidArgument,
    NotFound,
    did_you_mean,
)
from dockyard_shared.words import plural

from ..bounds import take
from ..models import (
    CommitType,
    DiffResult,
    FileChange,
    RepositoryInfo,
    RepositoryList,
    StatusResult,
    WriteResult,
)
from ..repos import Repository, validate_revision_text
from .history import History
from .plumbing import COMMIT_FORMAT, FIELD, Plumbing, clip, parse_commits, submodule_note

__all__ = ["Worktree"]

_CONVENTIONAL_TYPES: tuple[str, ...] = get_args(CommitType)


class Worktree:
    """The working tree and the index: the repository list, status and diff, and every write tool."""

    def __init__(self, plumbing: Plumbing, history: History) -> None:
        self.plumbing = plumbing
        self.history = history
        self.limits = plumbing.limits

    def repository_list(self) -> RepositoryList:
        infos = []
        for repo in self.plumbing.repositories.repositories(refresh=True):
            branch, _ = self.plumbing.head(repo)
            dirty = False
            if not repo.bare:
                porcelain = self.plumbing.git(
                    repo, "status", "--porcelain", "--untracked-files=normal", max_bytes=1, check=False
                )
                dirty = bool(porcelain.text.strip()) or porcelain.truncated
            infos.append(
                RepositoryInfo(
                    path=str(repo.path), name=repo.name, bare=repo.bare, branch=branch, dirty=dirty
                )
            )
        if not infos:
            empty = self.plumbing.repositories.none_found()
            return RepositoryList(repositories=[], note=f"{empty.what} {empty.next_step}")
        listed, more, _ = take(infos, max_items=len(infos), max_chars=self.limits.max_reply_chars)
        return RepositoryList(
            repositories=listed,
            truncated=more,
            note=f"{len(listed)} of {len(infos)} repositories listed (a reply's size limit); name another "
            "by its path with repo_path."
            if more
            else None,
        )

    def status(self, repo: Repository) -> StatusResult:
        if repo.bare:
            raise InvalidArgument(
                f"{repo.name} is a bare repository: it has no working tree to report on.",
                next_step="Read its history instead (git_log, git_show, git_branches).",
            )
        # dirty: a submodule counts by the commit recorded for it, never by its files (see submodule_note).
        output = self.plumbing.git(
            repo,
            "status",
            "--porcelain=v2",
            "--branch",
            "-z",
            "--untracked-files=normal",
            "--ignore-submodules=dirty",
            max_bytes=2_000_000,
        )
        branch = head = upstream = None
        ahead = behind = None
        staged: list[FileChange] = []
        unstaged: list[FileChange] = []
        untracked: list[str] = []
        conflicted: list[str] = []
        submodules: list[str] = []
        entries = output.text.split("\x00")
        index = 0
        while index < len(entries):
            entry = entries[index]
            index += 1
            if entry.startswith("# branch.head "):
                value = entry.removeprefix("# branch.head ")
                branch = None if value == "(detached)" else value
            elif entry.startswith("# branch.oid "):
                value = entry.removeprefix("# branch.oid ")
                head = None if value == "(initial)" else value
            elif entry.startswith("# branch.upstream "):
                upstream = entry.removeprefix("# branch.upstream ")
            elif entry.startswith("# branch.ab "):
                plus, minus = entry.removeprefix("# branch.ab ").split()
                ahead, behind = int(plus), int(minus.lstrip("-"))
            elif entry.startswith(("1 ", "2 ")):
                parts = entry.split(" ", 8 if entry[0] == "1" else 9)
                xy, path = parts[1], parts[-1]
                original = None
                if entry[0] == "2":
                    original = entries[index]
                    index += 1
                submodule = parts[2].startswith("S")
                if submodule:
                    # The work-tree side would be the submodule's own checked-out commit: never reported.
                    submodules.append(path)
                if xy[0] != ".":
                    staged.append(
                        FileChange(
                            path=path, status=xy[0], original_path=original, submodule=submodule or None
                        )
                    )
                if xy[1] != "." and not submodule:
                    unstaged.append(FileChange(path=path, status=xy[1]))
            elif entry.startswith("u "):
                conflicted.append(entry.split(" ", 10)[-1])
            elif entry.startswith("? "):
                untracked.append(entry[2:])
        # The lists share one reply: each takes what the ones before it left.
        room = self.limits.max_reply_chars
        lists: dict[str, list] = {}
        cut = output.truncated
        for name, items in (
            ("staged", staged),
            ("unstaged", unstaged),
            ("conflicted", conflicted),
            ("untracked", untracked),
        ):
            lists[name], more, used = take(items, max_items=self.limits.max_list, max_chars=max(room, 1))
            room -= used
            cut = cut or more
        notes = []
        if cut:
            notes.append(
                f"Lists cut (at most {self.limits.max_list} entries each, and a reply's size). Narrow with "
                "git_diff(mode='name_only', paths=[...])."
            )
        if submodules:
            notes.append(submodule_note(submodules))
        note = " ".join(notes) or None
        return StatusResult(
            repository=str(repo.path),
            branch=branch,
            head=head,
            upstream=upstream,
            ahead=ahead,
            behind=behind,
            **lists,
            truncated=cut,
            note=note,
        )

    def _diff_target(self, repo: Repository, staged: bool, base: str | None, target: str | None) -> list[str]:
        if base and target:
            return [self.plumbing.verify(repo, base, "base"), self.plumbing.verify(repo, target, "target")]
        if base:
            return [self.plumbing.verify(repo, base, "base")]
        if target:
            raise InvalidArgument(
                "target needs a base too.", next_step="Pass base (and target) to compare two revisions."
            )
        return ["--cached"] if staged else []

    def diff(
        self,
        repo: Repository,
        *,
        staged: bool = False,
        base: str | None = None,
        target: str | None = None,
        paths: Sequence[str] | None = None,
        context_lines: int = 3,
        mode: str = "patch",
    ) -> DiffResult:
        if repo.bare and not base:
            raise InvalidArgument(f"{repo.name} is bare: pass base (and target) to compare revisions.")
        if not 0 <= context_lines <= 50:
            raise InvalidArgument("context_lines must be between 0 and 50.")
        where = self._diff_target(repo, staged, base, target)
        pathspec = ["--", *self.plumbing.pathspec(repo, paths)]
        common = ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M"]
        if where == ["--cached"] or (base and target):
            # No work tree involved: a submodule's change is its recorded commit ("Subproject commit …").
            # Against the work tree it would be the submodule's checked-out commit, which is never read.
            common.append("--ignore-submodules=dirty")
        files = self.plumbing.diff_files(repo, common, where, pathspec, counts=mode == "stat")
        if mode != "patch":
            listed, more, _ = take(
                files, max_items=self.limits.max_list, max_chars=self.limits.max_reply_chars
            )
            return DiffResult(
                mode=mode,  # type: ignore[arg-type]
                files=listed,
                truncated=more,
                note=f"{len(files)} files changed; {len(listed)} listed. Narrow with paths."
                if more
                else None,
            )
        patch, cut_files, omitted = self.plumbing.patch(
            repo, [*common, f"--unified={context_lines}", *where], pathspec[1:], files
        )
        listed, more, _ = take(
            files, max_items=self.limits.max_list, max_chars=self.limits.max_patch_files_chars
        )
        parts = []
        if cut_files:
            names = ", ".join(clip(name, 100) for name in cut_files[:10])
            parts.append(f"cut per file ({self.limits.max_file_patch_chars:,} characters each): {names}")
        if omitted:
            parts.append(
                f"{plural(omitted, 'more file', 'more files')} not shown (the whole patch is limited to "
                f"{self.limits.max_patch_chars:,} characters)"
            )
        if more:
            parts.append(f"{len(listed)} of the {len(files)} changed files listed")
        note = None
        if parts:
            note = (
                "Diff truncated — "
                + "; ".join(parts)
                + ". To see more, call git_diff with paths=[one file], or mode='stat' first."
            )
        return DiffResult(
            mode="patch",
            files=listed,
            patch=patch,
            truncated=bool(parts),
            note=note,
        )

    def add(self, repo: Repository, paths: Sequence[str]) -> WriteResult:
        self.plumbing.require_work_tree(repo)
        if not paths:
            raise InvalidArgument(
                "Name the files to stage.",
                next_step="Pass paths, e.g. ['src/app.py'] or ['.'] for everything.",
            )
        left_out = self.plumbing.submodules_left_out(repo, ["add"], self.plumbing.pathspec(repo, paths))
        message = f"Staged {plural(len(paths), 'path')}."
        if left_out:
            message += f" Submodules left out (never staged here): {', '.join(left_out[:10])}."
        return WriteResult(repository=str(repo.path), message=message, status=self.status(repo))

    def unstage(self, repo: Repository, paths: Sequence[str]) -> WriteResult:
        self.plumbing.require_work_tree(repo)
        relative = self.plumbing.pathspec(repo, paths) or ["."]
        if self.plumbing.head(repo)[1] is None:
            self.plumbing.git(repo, "rm", "--cached", "-r", "-q", "--", *relative)
        else:
            self.plumbing.git(repo, "reset", "-q", "HEAD", "--", *relative)
        return WriteResult(repository=str(repo.path), message="Unstaged.", status=self.status(repo))

    def commit(
        self,
        repo: Repository,
        *,
        message: str,
        type: CommitType | None = None,
        scope: str | None = None,
        breaking: bool = False,
    ) -> WriteResult:
        self.plumbing.require_work_tree(repo)
        text = message.strip()
        if not text:
            raise InvalidArgument("The commit message is empty.")
        if type:
            if type not in _CONVENTIONAL_TYPES:
                raise InvalidArgument(
                    f"Unknown conventional-commit type {type!r}.",
                    next_step=f"Use one of: {', '.join(_CONVENTIONAL_TYPES)}.",
                )
            if scope and not re.fullmatch(r"[\w./-]{1,40}", scope):
                raise InvalidArgument("scope must be a short word (letters, digits, . / - _).")
            text = f"{type}{f'({scope})' if scope else ''}{'!' if breaking else ''}: {text}"
        status = self.status(repo)
        if not status.staged:
            raise Conflict(
                "Nothing is staged, so there is nothing to commit.",
                next_step="Stage changes with git_add first.",
            )
        identity = self.plumbing.git(repo, "config", "--get", "user.email", check=False).text.strip()
        if not identity:
            raise Conflict(
                "The repository has no committer identity (user.name / user.email in its config).",
                next_step="Ask the user to set them: git config user.name '…' && git config user.email '…'.",
            )
        self.plumbing.runner.run(
            repo.git_dir,
            repo.work_tree,
            ["commit", "--no-verify", "--no-gpg-sign", "--cleanup=strip", "--file=-"],
            stdin=text.encode(),
        )
        header = self.plumbing.git(repo, "show", "-s", f"--format={COMMIT_FORMAT}", "HEAD").text
        return WriteResult(
            repository=str(repo.path),
            message="Committed.",
            commit=parse_commits(header, self.limits)[0],
            status=self.status(repo),
        )

    def create_branch(
        self, repo: Repository, *, name: str, start_point: str | None = None, switch: bool = False
    ) -> WriteResult:
        validate_revision_text(name, "branch name")
        check = self.plumbing.git(repo, "check-ref-format", "--branch", name, check=False)
        if check.returncode != 0:
            raise InvalidArgument(
                f"{name!r} is not a valid branch name.",
                next_step="Use letters, digits, '-', '_', '/' (no spaces, '..', '~', '^', ':').",
            )
        start = self.plumbing.verify(repo, start_point or "HEAD", "start_point")
        existing = self.plumbing.git(
            repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{name}", check=False
        )
        if existing.returncode == 0:
            raise Conflict(
                f"A branch named {name!r} already exists.",
                next_step="Pick another name, or switch to it with git_checkout.",
            )
        self.plumbing.git(repo, "branch", "--no-track", "--end-of-options", name, start)
        if switch:
            return self.checkout(repo, branch=name)
        return WriteResult(repository=str(repo.path), message=f"Created branch {name} at {start[:12]}.")

    def checkout(self, repo: Repository, *, branch: str) -> WriteResult:
        self.plumbing.require_work_tree(repo)
        validate_revision_text(branch, "branch")
        exists = self.plumbing.git(
            repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False
        )
        if exists.returncode != 0:
            names = [b.name for b in self.history.branches(repo, kind="local").branches]
            raise NotFound(
                f"There is no local branch {branch!r}.", next_step=did_you_mean(branch, names, kind="branch")
            )
        status = self.status(repo)
        if status.staged or status.unstaged or status.conflicted:
            changed = [c.path for c in status.staged + status.unstaged][:10]
            raise Conflict(
                f"The working tree has uncommitted changes ({', '.join(changed)}); switching branches could discard them.",
                next_step="Commit them (git_add, git_commit) or set them aside with git_stash(action='push'), then switch.",
            )
        self.plumbing.git(repo, "switch", "--no-guess", "--end-of-options", branch)
        return WriteResult(
            repository=str(repo.path), message=f"Switched to {branch}.", status=self.status(repo)
        )

    def stash(self, repo: Repository, *, action: str, message: str | None = None) -> WriteResult:
        self.plumbing.require_work_tree(repo)
        if action == "list":
            output = self.plumbing.git(repo, "stash", "list", "--format=%gd%x1f%s")
            found = [
                clip(line.replace(FIELD, ": ", 1), self.limits.max_subject_chars)
                for line in output.text.splitlines()
            ]
            entries, more, _ = take(
                found, max_items=self.limits.max_list, max_chars=self.limits.max_reply_chars
            )
            message = f"{len(found)} stash entries" + (
                f"; the newest {len(entries)} listed." if more else "."
            )
            return WriteResult(repository=str(repo.path), message=message, stashes=entries)
        if action == "push":
            status = self.status(repo)
            if not (status.staged or status.unstaged):
                raise Conflict("There are no changes to stash.", next_step="Nothing to do.")
            args = ["stash", "push"] + ([f"--message={message}"] if message else [])
            left_out = self.plumbing.submodules_left_out(repo, args, [])
            text = "Changes stashed." + (
                f" Submodules left out: {', '.join(left_out[:10])}." if left_out else ""
            )
            return WriteResult(repository=str(repo.path), message=text, status=self.status(repo))
        if action == "pop":
            # --quiet: otherwise pop runs its own `git status` as a child, which reads the config the pop
            # has just rewritten before our overrides could be recomputed for it.
            output = self.plumbing.git(repo, "stash", "pop", "--quiet", check=False)
            if output.returncode != 0:
                text = (output.stderr or output.text).strip()
                if "No stash entries" in text:
                    raise NotFound(
                        "There is no stash entry to pop.", next_step="Check with git_stash(action='list')."
                    )
                raise Conflict(
                    f"The stash could not be applied cleanly: {text[-300:]}",
                    next_step="Resolve the conflicts shown by git_status; the stash entry was kept.",
                )
            return WriteResult(
                repository=str(repo.path), message="Stash applied and dropped.", status=self.status(repo)
            )
        raise InvalidArgument(f"Unknown stash action {action!r}.", next_step="Use push, pop or list.")
