"""What the git tools do, as plain functions over a :class:`~.repos.Repository` and a :class:`~.gitcmd.GitRunner`.

Every value a model supplies reaches git as data: revisions are verified (``rev-parse --verify
--end-of-options``) and then passed as commit ids, paths go after ``--`` under literal pathspecs, patterns
follow ``-e``, and author/grep/date filters are ``--opt=value``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import get_args
from urllib.parse import urlparse

from dockyard_shared import (
    Conflict,
    InvalidArgument,
    LimitExceeded,
    NotFound,
    Problem,
    bound_text,
    did_you_mean,
)

from .gitcmd import GitRunner
from .models import (
    COMMIT_FIELDS,
    DEFAULT_LOG_FIELDS,
    BlameLine,
    BlameResult,
    Branch,
    BranchList,
    Commit,
    CommitType,
    DiffFileStat,
    DiffResult,
    FileChange,
    GrepMatch,
    GrepResult,
    LogEntry,
    LogResult,
    RepositoryInfo,
    RepositoryList,
    ShowResult,
    StatusResult,
    Tag,
    TagList,
    WriteResult,
)
from .repos import Repository, RepositorySet, validate_revision_text
from .settings import Limits
from .worktree_links import LinkedFolders

__all__ = ["GitOperations", "github_slug"]

_FIELD, _RECORD = "\x1f", "\x1e"
_COMMIT_FORMAT = _FIELD.join(["%H", "%an", "%ae", "%aI", "%s", "%P"]) + _RECORD
# git_log's placeholders by field. The subject goes last in a record, so a subject holding the field
# separator stays whole (the record is split at most fields − 1 times).
_LOG_PLACEHOLDERS = {
    "sha": "%H",
    "date": "%aI",
    "author": "%an",
    "email": "%ae",
    "parents": "%P",
    "subject": "%s",
}
_CONVENTIONAL_TYPES: tuple[str, ...] = get_args(CommitType)


def _clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a visible mark when cut (one-line fields: subjects, names)."""
    return text if len(text) <= limit else text[:limit] + f"…[{len(text) - limit} more characters]"


def _log_fields(fields: Sequence[str] | None) -> list[str]:
    """The requested git_log fields in output order, sha first and subject last; unknown names refused."""
    wanted = set(fields or DEFAULT_LOG_FIELDS)
    unknown = sorted(wanted - set(COMMIT_FIELDS))
    if unknown:
        raise InvalidArgument(
            f"Unknown commit field(s): {', '.join(unknown)}.",
            next_step=f"Choose from {', '.join(COMMIT_FIELDS)}.",
        )
    ordered = ["sha", *(f for f in COMMIT_FIELDS if f in wanted and f not in ("sha", "subject"))]
    return [*ordered, "subject"] if "subject" in wanted else ordered


def _parse_log(text: str, fields: list[str], limits: Limits) -> list[LogEntry]:
    clipped = {"author", "email", "subject"} & set(fields)
    entries = []
    for record in text.split(_RECORD):
        record = record.strip("\n")
        if not record:
            continue
        values = record.split(_FIELD, len(fields) - 1)
        if len(values) != len(fields):
            continue
        entry: dict[str, object] = dict(zip(fields, values, strict=True))
        for name in clipped:
            entry[name] = _clip(entry[name], limits.max_subject_chars)  # type: ignore[arg-type]
        if "parents" in entry:
            entry["parents"] = entry["parents"].split()  # type: ignore[union-attr]
        # Values straight from git's fixed format: validating a thousand of them again would be waste.
        entries.append(LogEntry.model_construct(**entry))
    return entries


def _parse_commits(text: str, limits: Limits) -> list[Commit]:
    commits = []
    for record in text.split(_RECORD):
        record = record.strip("\n")
        if not record:
            continue
        fields = record.split(_FIELD)
        if len(fields) < 6:
            continue
        sha, author, email, date, subject, parents = fields[:6]
        commits.append(
            Commit(
                sha=sha,
                author=_clip(author, limits.max_subject_chars),
                email=_clip(email, limits.max_subject_chars),
                date=date,
                subject=_clip(subject, limits.max_subject_chars),
                parents=parents.split(),
            )
        )
    return commits


def _submodule_note(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    return (
        f"Submodules ({shown}) are reported by the commit the superproject records for them (staged when "
        "it changed in the index); their own files and checked-out commits are never looked at."
    )


def _split_patch(text: str) -> list[tuple[str, str]]:
    """(path, section) for each file of a unified diff."""
    result = []
    for section in re.split(r"(?m)^(?=diff --git )", text):
        if not section.startswith("diff --git "):
            continue
        renamed = re.search(r"(?m)^rename to (.+)$", section)
        match = re.match(r"diff --git a/(.*?) b/(.*)$", section.split("\n", 1)[0])
        path = renamed.group(1) if renamed else (match.group(2) if match else "?")
        result.append((path, section))
    return result


class GitOperations:
    def __init__(self, repositories: RepositorySet, runner: GitRunner, limits: Limits | None = None) -> None:
        self.repositories = repositories
        self.runner = runner
        self.limits = limits or Limits()

    # -- plumbing -----------------------------------------------------------------------------

    def _git(
        self,
        repo: Repository,
        *args: str,
        max_bytes: int = 4_000_000,
        check: bool = True,
        magic: bool = False,
    ):
        return self.runner.run(
            repo.git_dir, repo.work_tree, args, max_bytes=max_bytes, check=check, magic_pathspecs=magic
        )

    def _gitlinks(self, repo: Repository, pathspec: Sequence[str]) -> list[str]:
        """The submodules (gitlinks in the index) under ``pathspec``.

        ``git add`` and ``git stash push`` ask every submodule they cover whether it is dirty by starting a
        git inside it, whatever the config says; the runner's gatekeeper stops that git, so these commands
        are given pathspecs that leave the submodules out.
        """
        output = self._git(repo, "ls-files", "-z", "--stage", "--", *pathspec, max_bytes=32_000_000)
        if output.truncated:
            raise LimitExceeded(
                "The index is too large to check for submodules before staging.",
                next_step="Name fewer or narrower paths.",
            )
        links = []
        for record in output.text.split("\x00"):
            info, _, path = record.partition("\t")
            if info.startswith("160000 "):
                links.append(path)
        return links

    def _submodules_left_out(
        self, repo: Repository, command: list[str], pathspec: Sequence[str]
    ) -> list[str]:
        """Run ``command`` on ``pathspec`` (literal paths, all by default) with the submodules left out;
        returns the submodules left out."""
        links = self._gitlinks(repo, pathspec)
        if not links:
            self._git(repo, *command, "--", *pathspec)
            return []
        magic = [f":(literal){path}" for path in pathspec or ["."]]
        magic += [f":(exclude,literal){link}" for link in links]
        self._git(repo, *command, "--", *magic, magic=True)
        return links

    def verify(self, repo: Repository, revision: str, what: str = "revision") -> str:
        """The commit id ``revision`` names, or a not-found error."""
        revision = validate_revision_text(revision, what)
        result = self._git(
            repo,
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            f"{revision}^{{commit}}",
            check=False,
        )
        sha = result.text.strip()
        if result.returncode != 0 or not re.fullmatch(r"[0-9a-f]{40,64}", sha):
            raise NotFound(
                f"{what} {revision!r} does not name a commit in {repo.name}.",
                next_step="Check it with git_branches, git_tags or git_log.",
            )
        return sha

    def _range(self, repo: Repository, revision_range: str) -> list[str]:
        """``A..B`` / ``A...B`` / ``REV`` with every end verified and replaced by its commit id."""
        for operator in ("...", ".."):
            if operator in revision_range:
                left, right = revision_range.split(operator, 1)
                left_sha = self.verify(repo, left or "HEAD")
                right_sha = self.verify(repo, right or "HEAD")
                return [f"{left_sha}{operator}{right_sha}"]
        return [self.verify(repo, revision_range)]

    def _paths(self, repo: Repository, paths: Sequence[str] | None) -> list[str]:
        return [self.repositories.relative_path(repo, p) for p in (paths or [])]

    def _head(self, repo: Repository) -> tuple[str | None, str | None]:
        head = self._git(repo, "rev-parse", "--verify", "--quiet", "HEAD", check=False).text.strip() or None
        branch = (
            self._git(repo, "symbolic-ref", "--quiet", "--short", "HEAD", check=False).text.strip() or None
        )
        return branch, head

    # -- read ---------------------------------------------------------------------------------

    def repository_list(self) -> RepositoryList:
        infos = []
        for repo in self.repositories.repositories(refresh=True):
            branch, _ = self._head(repo)
            dirty = False
            if not repo.bare:
                porcelain = self._git(
                    repo, "status", "--porcelain", "--untracked-files=normal", max_bytes=1, check=False
                )
                dirty = bool(porcelain.text.strip()) or porcelain.truncated
            infos.append(
                RepositoryInfo(
                    path=str(repo.path), name=repo.name, bare=repo.bare, branch=branch, dirty=dirty
                )
            )
        return RepositoryList(repositories=infos)

    def status(self, repo: Repository) -> StatusResult:
        if repo.bare:
            raise InvalidArgument(f"{repo.name} is a bare repository: it has no working tree to report on.")
        # dirty: a submodule counts by the commit recorded for it, never by its files (see _submodule_note).
        output = self._git(
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
        cap = self.limits.max_list
        truncated = output.truncated or any(len(x) > cap for x in (staged, unstaged, untracked, conflicted))
        notes = []
        if truncated:
            notes.append(
                f"Long lists cut to {cap} entries each. Narrow with git_diff(name_only=true, paths=[...])."
            )
        if submodules:
            notes.append(_submodule_note(submodules))
        note = " ".join(notes) or None
        return StatusResult(
            repository=str(repo.path),
            branch=branch,
            head=head,
            upstream=upstream,
            ahead=ahead,
            behind=behind,
            staged=staged[:cap],
            unstaged=unstaged[:cap],
            untracked=untracked[:cap],
            conflicted=conflicted[:cap],
            truncated=truncated,
            note=note,
        )

    def log(
        self,
        repo: Repository,
        *,
        max_count: int | None = None,
        skip: int = 0,
        revision_range: str | None = None,
        paths: Sequence[str] | None = None,
        author: str | None = None,
        since: str | None = None,
        until: str | None = None,
        grep: str | None = None,
        fields: Sequence[str] | None = None,
    ) -> LogResult:
        chosen = _log_fields(fields)
        requested = max_count if max_count is not None else self.limits.default_log
        capped = requested < 0 or requested > self.limits.max_log
        count = self.limits.max_log if capped else requested
        if skip < 0:
            raise InvalidArgument("skip must be 0 or more.")
        args = [
            "log",
            f"--format={_FIELD.join(_LOG_PLACEHOLDERS[f] for f in chosen)}{_RECORD}",
            f"--max-count={count + 1}",
            f"--skip={skip}",
            "--no-color",
        ]
        for flag, value in (("--author", author), ("--since", since), ("--until", until), ("--grep", grep)):
            if value:
                if "\x00" in value or "\n" in value:
                    raise InvalidArgument(f"{flag[2:]} may not contain NUL or newline characters.")
                args.append(f"{flag}={value}")
        args += ["--end-of-options"]
        args += self._range(repo, revision_range) if revision_range else []
        args += ["--", *self._paths(repo, paths)]
        # One git process: without a range, an empty repository is recognised from git's own refusal
        # rather than by asking for HEAD first (two more processes on every call).
        try:
            output = self._git(repo, *args, max_bytes=8_000_000)
        except Problem as error:
            if revision_range or "does not have any commits yet" not in error.what:
                raise
            return LogResult(
                repository=str(repo.path),
                commits=[],
                truncated=False,
                note="The repository has no commits yet.",
            )
        commits = _parse_log(output.text, chosen, self.limits)
        more = len(commits) > count or output.truncated
        commits = commits[:count]
        note = None
        if more:
            note = f"Showing {len(commits)} commits from {skip}. More match: call git_log again with skip={skip + len(commits)}"
            note += (
                f" (at most {self.limits.max_log} per call)."
                if capped
                else ", or narrow with a path, author or since."
            )
        return LogResult(
            repository=str(repo.path),
            commits=commits,
            truncated=more,
            next_skip=skip + len(commits) if more else None,
            note=note,
        )

    def _diff_target(self, repo: Repository, staged: bool, base: str | None, target: str | None) -> list[str]:
        if base and target:
            return [self.verify(repo, base, "base"), self.verify(repo, target, "target")]
        if base:
            return [self.verify(repo, base, "base")]
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
        pathspec = ["--", *self._paths(repo, paths)]
        common = ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M"]
        if where == ["--cached"] or (base and target):
            # No work tree involved: a submodule's change is its recorded commit ("Subproject commit …").
            # Against the work tree it would be the submodule's checked-out commit, which is never read.
            common.append("--ignore-submodules=dirty")
        files = self._diff_files(repo, common, where, pathspec, counts=mode == "stat")
        cap = self.limits.max_list
        if mode != "patch":
            truncated = len(files) > cap
            return DiffResult(
                repository=str(repo.path),
                mode=mode,  # type: ignore[arg-type]
                files=files[:cap],
                truncated=truncated,
                note=f"{len(files)} files changed; showing {cap}. Narrow with paths." if truncated else None,
            )
        patch, cut_files, omitted = self._patch(
            repo, [*common, f"--unified={context_lines}", *where], pathspec[1:], files
        )
        truncated = bool(cut_files or omitted)
        note = None
        if truncated:
            parts = []
            if cut_files:
                parts.append(
                    f"cut per file ({self.limits.max_file_patch_chars} characters each): {', '.join(cut_files[:10])}"
                )
            if omitted:
                parts.append(
                    f"{omitted} more file(s) not shown (the whole patch is limited to {self.limits.max_patch_chars} characters)"
                )
            note = (
                "Diff truncated — "
                + "; ".join(parts)
                + ". The files list is complete. To see more, call git_diff with paths=[one file], or mode='stat' first."
            )
        return DiffResult(
            repository=str(repo.path),
            mode="patch",
            files=files[:cap],
            patch=patch,
            truncated=truncated,
            note=note,
        )

    def _diff_files(
        self,
        repo: Repository,
        common: list[str],
        where: list[str],
        pathspec: list[str],
        *,
        counts: bool = True,
    ) -> list[DiffFileStat]:
        """The changed files with their status, from one git process.

        ``--raw`` needs only object ids, so it is cheap on any size of change; line counts
        (``--numstat``) need the content diffed, so they are asked for only when wanted.
        """
        extra = ["--raw", "--numstat"] if counts else ["--raw"]
        tokens = self._git(repo, *common, *extra, "-z", *where, *pathspec, max_bytes=8_000_000).text.split(
            "\x00"
        )
        files: dict[str, DiffFileStat] = {}
        i = 0
        while i < len(tokens):
            token = tokens[i]
            i += 1
            if not token:
                continue
            if token.startswith(":"):  # raw: ":mode mode sha sha STATUS" then one path, or two for R/C
                status = token.split()[-1][0]
                if status in "RC":
                    path, i = tokens[i + 1], i + 2
                else:
                    path, i = tokens[i], i + 1
                files[path] = DiffFileStat(path=path, status=status)
                continue
            added, deleted, path = ([*token.split("\t", 2), "", "", ""])[:3]
            if path == "":  # numstat of a rename: the old and new names follow
                path, i = (tokens[i + 1] if i + 1 < len(tokens) else ""), i + 2
            entry = files.setdefault(path, DiffFileStat(path=path))
            entry.additions = None if added == "-" else int(added or 0)
            entry.deletions = None if deleted == "-" else int(deleted or 0)
        return list(files.values())

    def _patch(
        self, repo: Repository, diff_args: list[str], paths: list[str], files: list[DiffFileStat]
    ) -> tuple[str, list[str], int]:
        """The patch for ``files``, each file cut at its own budget and the whole at the total budget.

        git streams the patch and is stopped once the reader's budget is spent. The files a stream did
        not reach are asked for in the next stream (by name, a batch at a time), so one huge file never
        hides the small ones after it, and a few git processes serve any size of change.
        """
        per_file, budget = self.limits.max_file_patch_chars, self.limits.max_patch_chars
        shown: dict[str, str] = {}
        cut_files: list[str] = []
        pending = [item.path for item in files]
        first = True
        total = 0
        for _ in range(6):
            if not pending or total >= budget:
                break
            batch = paths if first else pending[:64]
            first = False
            output = self._git(repo, *diff_args, "--", *batch, max_bytes=per_file + (budget - total) * 2)
            sections = _split_patch(output.text)
            for index, (name, section) in enumerate(sections):
                partial = output.truncated and index == len(sections) - 1
                if name in shown:
                    continue
                if partial or len(section) > per_file:
                    bounded = bound_text(section, per_file)
                    section = (
                        bounded.text.rstrip("\n")
                        + f"\n[… {name}: diff cut here; call git_diff with paths=['{name}'] and fewer "
                        "context_lines, or read the file with git_show]\n"
                    )
                    cut_files.append(name)
                shown[name] = section
                total += len(section)
            pending = [p for p in pending if p not in shown]
        kept: list[str] = []
        running = 0
        for item in files:
            section = shown.get(item.path)
            if section is None or (kept and running + len(section) > budget):
                continue
            if item.additions is None and item.path not in cut_files:
                body = [line for line in section.split("\n") if not line.startswith(("+++ ", "--- "))]
                item.additions = sum(1 for line in body if line.startswith("+"))
                item.deletions = sum(1 for line in body if line.startswith("-"))
            kept.append(section)
            running += len(section)
        omitted = len(files) - len(kept)
        return "".join(kept), [c for c in cut_files if shown.get(c) in kept], omitted

    def show(
        self, repo: Repository, *, revision: str = "HEAD", path: str | None = None, offset: int = 0
    ) -> ShowResult:
        if path is None and ":" in revision:
            revision, path = revision.split(":", 1)
        sha = self.verify(repo, revision or "HEAD")
        if path is not None:
            return self._show_file(repo, sha, path, offset)
        header = self._git(repo, "show", "-s", f"--format={_COMMIT_FORMAT}", sha).text
        (commit,) = _parse_commits(header, self.limits)
        common = ["show", "--no-color", "--no-ext-diff", "--no-textconv", "-M", "--format="]
        files = self._diff_files(repo, common, [sha], [], counts=False)
        patch, cut_files, omitted = self._patch(repo, [*common, "--patch", sha], [], files)
        truncated = bool(cut_files or omitted)
        note = (
            "Patch truncated (per file and in total); the files list is complete. Use git_diff with base="
            f"'{sha}^' target='{sha}' and paths=[…] for one file, or git_show with path for its content."
            if truncated
            else None
        )
        return ShowResult(
            repository=str(repo.path),
            kind="commit",
            commit=commit,
            files=files[: self.limits.max_list],
            patch=patch,
            truncated=truncated,
            note=note,
        )

    def _show_file(self, repo: Repository, sha: str, path: str, offset: int) -> ShowResult:
        relative = self.repositories.relative_path(repo, path)
        spec = f"{sha}:{relative}"
        kind = self._git(repo, "cat-file", "-t", spec, check=False)
        if kind.returncode != 0:
            raise NotFound(
                f"{relative} does not exist at {sha[:12]}.",
                next_step="List files with git_grep or check the path.",
            )
        if kind.text.strip() != "blob":
            raise InvalidArgument(f"{relative} is a {kind.text.strip()} at {sha[:12]}, not a file.")
        size = int(self._git(repo, "cat-file", "-s", spec).text.strip())
        # cat-file -p applies no filters and no textconv: the stored bytes, nothing a config can run.
        limit = offset + self.limits.max_file_chars * 4 + 1
        raw = self._git(repo, "cat-file", "-p", spec, max_bytes=limit)
        if "\x00" in raw.text[:8000]:
            return ShowResult(
                repository=str(repo.path),
                kind="file",
                size=size,
                binary=True,
                note="Binary file: content not shown.",
            )
        bounded = bound_text(
            raw.text,
            self.limits.max_file_chars,
            offset=min(offset, len(raw.text)),
            how_to_continue=lambda n: f"call git_show with offset={n}",
        )
        return ShowResult(
            repository=str(repo.path),
            kind="file",
            content=bounded.text,
            size=size,
            truncated=bounded.truncated,
            next_offset=bounded.next_offset,
            note=bounded.note,
        )

    def blame(
        self,
        repo: Repository,
        *,
        path: str,
        start: int | None = None,
        end: int | None = None,
        revision: str | None = None,
    ) -> BlameResult:
        relative = self.repositories.relative_path(repo, path)
        first = start or 1
        last = end or first + self.limits.max_blame_lines - 1
        if first < 1 or last < first:
            raise InvalidArgument("start must be ≥ 1 and end ≥ start.")
        truncated = last - first + 1 > self.limits.max_blame_lines
        last = min(last, first + self.limits.max_blame_lines - 1)
        args = ["blame", "--porcelain", "--no-textconv", f"-L{first},{last}"]
        if revision:
            args.append(self.verify(repo, revision))
        output = self._git(repo, *args, "--", relative, check=False)
        if output.returncode != 0 and not output.truncated:
            if "has only" in output.stderr:
                raise InvalidArgument(
                    f"{relative}: {output.stderr.strip().splitlines()[-1]}", next_step="Use a smaller start."
                )
            raise NotFound(
                f"Cannot blame {relative}: {output.stderr.strip()[:200]}",
                next_step="Check the path and revision.",
            )
        lines: list[BlameLine] = []
        info: dict[str, dict[str, str]] = {}
        current: dict[str, str] = {}
        sha = ""
        number = 0
        for raw in output.text.split("\n"):
            if raw.startswith("\t"):
                data = info.setdefault(sha, dict(current))
                lines.append(
                    BlameLine(
                        line=number,
                        sha=sha,
                        author=data.get("author", ""),
                        date=data.get("author-time", ""),
                        summary=_clip(data.get("summary", ""), self.limits.max_subject_chars),
                        text=_clip(raw[1:], self.limits.max_line_chars),
                    )
                )
                current = {}
            elif re.match(r"^[0-9a-f]{40} \d+ \d+", raw):
                parts = raw.split()
                sha, number = parts[0], int(parts[2])
                current = dict(info.get(sha, {}))
            elif " " in raw:
                key, value = raw.split(" ", 1)
                current[key] = value
        if output.truncated and lines:
            # git's output passed its byte budget (very long lines): stop at the last whole line read.
            lines.pop()
        shown_to = lines[-1].line if lines else first - 1
        truncated = truncated or output.truncated
        return BlameResult(
            repository=str(repo.path),
            path=relative,
            lines=lines,
            truncated=truncated,
            note=f"Lines {first}–{shown_to} shown; call again with start={shown_to + 1} for more."
            if truncated
            else None,
        )

    def branches(self, repo: Repository, *, kind: str = "local", contains: str | None = None) -> BranchList:
        refs = {"local": ["refs/heads"], "remote": ["refs/remotes"], "all": ["refs/heads", "refs/remotes"]}[
            kind
        ]
        fmt = _FIELD.join(
            ["%(refname)", "%(objectname)", "%(HEAD)", "%(upstream:short)", "%(contents:subject)"]
        )
        args = ["for-each-ref", f"--format={fmt}", f"--count={self.limits.max_list + 1}"]
        if contains:
            args.append(f"--contains={self.verify(repo, contains)}")
        output = self._git(repo, *args, *refs)
        branches = []
        for line in output.text.splitlines():
            refname, sha, head, upstream, subject = (line.split(_FIELD) + [""] * 5)[:5]
            if refname.endswith("/HEAD"):
                continue
            local = refname.startswith("refs/heads/")
            name = refname.removeprefix("refs/heads/") if local else refname.removeprefix("refs/remotes/")
            branches.append(
                Branch(
                    name=name,
                    kind="local" if local else "remote",
                    sha=sha,
                    current=head == "*",
                    upstream=upstream or None,
                    subject=_clip(subject, self.limits.max_subject_chars),
                )
            )
        truncated = len(branches) > self.limits.max_list
        return BranchList(
            repository=str(repo.path),
            branches=branches[: self.limits.max_list],
            truncated=truncated,
            note="More branches exist; narrow with kind or contains." if truncated else None,
        )

    def tags(self, repo: Repository) -> TagList:
        fmt = _FIELD.join(
            [
                "%(refname:short)",
                "%(*objectname)",
                "%(objectname)",
                "%(creatordate:iso-strict)",
                "%(contents:subject)",
            ]
        )
        output = self._git(
            repo,
            "for-each-ref",
            "--sort=-creatordate",
            f"--format={fmt}",
            f"--count={self.limits.max_list + 1}",
            "refs/tags",
        )
        tags = []
        for line in output.text.splitlines():
            name, peeled, sha, date, subject = (line.split(_FIELD) + [""] * 5)[:5]
            tags.append(
                Tag(
                    name=name,
                    sha=peeled or sha,
                    date=date or None,
                    subject=_clip(subject, self.limits.max_subject_chars),
                )
            )
        truncated = len(tags) > self.limits.max_list
        return TagList(
            repository=str(repo.path),
            tags=tags[: self.limits.max_list],
            truncated=truncated,
            note=f"Newest {self.limits.max_list} tags shown." if truncated else None,
        )

    def grep(
        self,
        repo: Repository,
        *,
        pattern: str,
        paths: Sequence[str] | None = None,
        revision: str | None = None,
        ignore_case: bool = False,
        max_matches: int | None = None,
    ) -> GrepResult:
        if not pattern or "\x00" in pattern or "\n" in pattern:
            raise InvalidArgument("pattern must be a non-empty single line.")
        limit = min(max_matches or self.limits.default_grep_matches, self.limits.max_grep_matches)
        args = ["grep", "-n", "-I", "--no-color", "--full-name", "-E", "--null"]
        if ignore_case:
            args.append("-i")
        args += ["-e", pattern]
        if revision:
            args.append(self.verify(repo, revision))
        elif repo.bare:
            args.append(self.verify(repo, "HEAD"))
        pathspec = self._paths(repo, paths)
        links = LinkedFolders(str(repo.work_tree)) if repo.work_tree and not revision else None
        linked = self._linked_folders(repo, links, pathspec) if links else []
        if linked:
            # git would open the tracked files behind them through the link: leave those folders out.
            magic = [f":(literal){path}" for path in pathspec or ["."]]
            magic += [f":(exclude,literal){folder}" for folder in linked]
            output = self._git(repo, *args, "--", *magic, max_bytes=400_000, check=False, magic=True)
        else:
            output = self._git(repo, *args, "--", *pathspec, max_bytes=400_000, check=False)
        if output.returncode not in (0, 1) and not output.truncated:
            raise InvalidArgument(
                f"git grep failed: {output.stderr.strip()[:300]}",
                next_step="Check the pattern (extended regular expression).",
            )
        matches = []
        dropped: set[str] = set()
        for line in output.text.split("\n"):
            if not line:
                continue
            parts = line.split("\x00")
            if len(parts) < 3:
                continue
            path, number, text = parts[0], parts[1], "\x00".join(parts[2:])
            if revision or repo.bare:
                path = path.split(":", 1)[-1]
            elif links and links.behind_link(path):
                dropped.add(path)  # a folder became a link after the check above
                continue
            matches.append(GrepMatch(path=path, line=int(number) if number.isdigit() else 0, text=text[:500]))
        truncated = len(matches) > limit or output.truncated
        notes = []
        if truncated:
            notes.append(f"More than {limit} matches; narrow with paths or a more specific pattern.")
        if linked or dropped:
            folders = [f"{folder}/" for folder in linked] + sorted(dropped)
            notes.append(
                f"Not searched: tracked files behind a symbolic link in the work tree ({', '.join(folders[:10])}"
                f"{' …' if len(folders) > 10 else ''}); git status reports them deleted. Pass revision='HEAD' "
                "to search their committed content."
            )
        return GrepResult(
            repository=str(repo.path),
            matches=matches[:limit],
            truncated=truncated,
            note=" ".join(notes) or None,
        )

    def _linked_folders(self, repo: Repository, links: LinkedFolders, pathspec: Sequence[str]) -> list[str]:
        """The work-tree folders that are links with tracked paths under ``pathspec`` behind them."""
        output = self._git(repo, "ls-files", "-z", "--", *pathspec, max_bytes=32_000_000)
        if output.truncated:
            raise LimitExceeded(
                "Too many tracked files to check the work tree for linked folders before searching it.",
                next_step="Narrow with paths, or pass revision='HEAD' to search the committed content.",
            )
        return links.topmost(path for path in output.text.split("\x00") if path)

    # -- write --------------------------------------------------------------------------------

    def _work_tree(self, repo: Repository) -> None:
        if repo.bare:
            raise InvalidArgument(f"{repo.name} is a bare repository: it has no working tree.")

    def add(self, repo: Repository, paths: Sequence[str]) -> WriteResult:
        self._work_tree(repo)
        if not paths:
            raise InvalidArgument(
                "Name the files to stage.",
                next_step="Pass paths, e.g. ['src/app.py'] or ['.'] for everything.",
            )
        left_out = self._submodules_left_out(repo, ["add"], self._paths(repo, paths))
        message = f"Staged {len(paths)} path(s)."
        if left_out:
            message += f" Submodules left out (never staged here): {', '.join(left_out[:10])}."
        return WriteResult(repository=str(repo.path), message=message, status=self.status(repo))

    def unstage(self, repo: Repository, paths: Sequence[str]) -> WriteResult:
        self._work_tree(repo)
        relative = self._paths(repo, paths) or ["."]
        if self._head(repo)[1] is None:
            self._git(repo, "rm", "--cached", "-r", "-q", "--", *relative)
        else:
            self._git(repo, "reset", "-q", "HEAD", "--", *relative)
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
        self._work_tree(repo)
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
        identity = self._git(repo, "config", "--get", "user.email", check=False).text.strip()
        if not identity:
            raise Conflict(
                "The repository has no committer identity (user.name / user.email in its config).",
                next_step="Ask the user to set them: git config user.name '…' && git config user.email '…'.",
            )
        self.runner.run(
            repo.git_dir,
            repo.work_tree,
            ["commit", "--no-verify", "--no-gpg-sign", "--cleanup=strip", "--file=-"],
            stdin=text.encode(),
        )
        header = self._git(repo, "show", "-s", f"--format={_COMMIT_FORMAT}", "HEAD").text
        return WriteResult(
            repository=str(repo.path),
            message="Committed.",
            commit=_parse_commits(header, self.limits)[0],
            status=self.status(repo),
        )

    def create_branch(
        self, repo: Repository, *, name: str, start_point: str | None = None, switch: bool = False
    ) -> WriteResult:
        validate_revision_text(name, "branch name")
        check = self._git(repo, "check-ref-format", "--branch", name, check=False)
        if check.returncode != 0:
            raise InvalidArgument(
                f"{name!r} is not a valid branch name.",
                next_step="Use letters, digits, '-', '_', '/' (no spaces, '..', '~', '^', ':').",
            )
        start = self.verify(repo, start_point or "HEAD", "start_point")
        existing = self._git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{name}", check=False)
        if existing.returncode == 0:
            raise Conflict(
                f"A branch named {name!r} already exists.",
                next_step="Pick another name, or switch to it with git_checkout.",
            )
        self._git(repo, "branch", "--no-track", "--end-of-options", name, start)
        if switch:
            return self.checkout(repo, branch=name)
        return WriteResult(repository=str(repo.path), message=f"Created branch {name} at {start[:12]}.")

    def checkout(self, repo: Repository, *, branch: str) -> WriteResult:
        self._work_tree(repo)
        validate_revision_text(branch, "branch")
        exists = self._git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False)
        if exists.returncode != 0:
            names = [b.name for b in self.branches(repo, kind="local").branches]
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
        self._git(repo, "switch", "--no-guess", "--end-of-options", branch)
        return WriteResult(
            repository=str(repo.path), message=f"Switched to {branch}.", status=self.status(repo)
        )

    def stash(self, repo: Repository, *, action: str, message: str | None = None) -> WriteResult:
        self._work_tree(repo)
        if action == "list":
            output = self._git(repo, "stash", "list", "--format=%gd%x1f%s")
            entries = [line.replace(_FIELD, ": ", 1) for line in output.text.splitlines()][
                : self.limits.max_list
            ]
            return WriteResult(
                repository=str(repo.path), message=f"{len(entries)} stash entries.", stashes=entries
            )
        if action == "push":
            status = self.status(repo)
            if not (status.staged or status.unstaged):
                raise Conflict("There are no changes to stash.", next_step="Nothing to do.")
            args = ["stash", "push"] + ([f"--message={message}"] if message else [])
            left_out = self._submodules_left_out(repo, args, [])
            text = "Changes stashed." + (
                f" Submodules left out: {', '.join(left_out[:10])}." if left_out else ""
            )
            return WriteResult(repository=str(repo.path), message=text, status=self.status(repo))
        if action == "pop":
            # --quiet: otherwise pop runs its own `git status` as a child, which reads the config the pop
            # has just rewritten before our overrides could be recomputed for it.
            output = self._git(repo, "stash", "pop", "--quiet", check=False)
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

    def tracked_paths(self, repo: Repository, prefix: str, limit: int = 50) -> list[str]:
        """Tracked paths starting with ``prefix`` (for completions)."""
        output = self._git(repo, "ls-files", "-z", max_bytes=2_000_000, check=False)
        return [p for p in output.text.split("\x00") if p and p.startswith(prefix)][:limit]

    def github_remote(self, repo: Repository, extra_hosts: Collection[str] = ()) -> str:
        """``owner/name`` of the repository's first remote on github.com (or one of ``extra_hosts``:
        GitHub Enterprise), or a not-found problem."""
        remotes = self._git(repo, "config", "--get-regexp", r"^remote\..*\.url$", check=False)
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
