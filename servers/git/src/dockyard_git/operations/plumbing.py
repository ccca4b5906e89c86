"""The plumbing every git operation shares: running git on a repository, verifying revisions and paths,
and reading a diff as a bounded patch."""

from __future__ import annotations

import re
from collections.abc import Sequence

from dockyard_shared import (
    InvalidArgument,
    LimitExceeded,
    NotFound,
)

from ..bounds import fit, json_chars
from ..gitcmd import GitRunner
from ..models import (
    Commit,
    DiffFileStat,
)
from ..repos import Repository, RepositorySet, validate_revision_text
from ..settings import Limits

__all__ = ["COMMIT_FORMAT", "FIELD", "RECORD", "Plumbing", "clip", "parse_commits", "submodule_note"]

FIELD, RECORD = "\x1f", "\x1e"
# No email: the name says who; git_log with fields=[email] gives it when it is wanted.
COMMIT_FORMAT = FIELD.join(["%H", "%an", "%aI", "%s", "%P"]) + RECORD


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a visible mark when cut (one-line fields: subjects, names)."""
    return text if len(text) <= limit else text[:limit] + f"…[{len(text) - limit} more characters]"


def parse_commits(text: str, limits: Limits) -> list[Commit]:
    commits = []
    for record in text.split(RECORD):
        record = record.strip("\n")
        if not record:
            continue
        fields = record.split(FIELD)
        if len(fields) < 5:
            continue
        sha, author, date, subject, parents = fields[:5]
        commits.append(
            Commit(
                sha=sha,
                author=clip(author, limits.max_subject_chars),
                date=date,
                subject=clip(subject, limits.max_subject_chars),
                parents=parents.split(),
            )
        )
    return commits


def submodule_note(paths: Sequence[str]) -> str:
    shown = ", ".join(clip(path, 100) for path in paths[:5]) + (
        f" and {len(paths) - 5} more" if len(paths) > 5 else ""
    )
    return (
        f"Submodules ({shown}) are reported by the commit the superproject records for them (staged when "
        "it changed in the index); their own files and checked-out commits are never looked at."
    )


def _cut_section(name: str, section: str, max_chars: int) -> str:
    """One file's part of a patch cut to ``max_chars`` (JSON characters, at a line end when one is near),
    marked with how to see the rest."""
    target = f"paths=['{name}']" if len(name) <= 200 else "paths=[its path]"
    mark = (
        f"\n[… {clip(name, 200)}: diff cut here; call git_diff with {target} and fewer context_lines, "
        "or read the file with git_show]\n"
    )
    kept = fit(section, max_chars - json_chars(mark))
    line_end = kept.rfind("\n")
    if line_end >= len(kept) // 2:
        kept = kept[: line_end + 1]
    return kept.rstrip("\n") + mark


def _lean_header(section: str) -> str:
    """One file's part of a patch without what the file list beside it already says: the ``index`` line
    (blob ids), and the ``diff --git`` line of a plain content change, whose ``---``/``+++`` lines name the
    file. ``git apply`` still takes the result; a rename, copy, mode change or binary file keeps its
    ``diff --git`` header, which carries what ``---``/``+++`` cannot."""
    head, at, body = section.partition("\n@@")
    lines = [line for line in head.split("\n") if not line.startswith("index ")]
    if len(lines) >= 3 and lines[0].startswith("diff --git ") and lines[1].startswith("--- a/"):
        lines = lines[1:]
    return "\n".join(lines) + at + body


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


class Plumbing:
    def __init__(self, repositories: RepositorySet, runner: GitRunner, limits: Limits | None = None) -> None:
        self.repositories = repositories
        self.runner = runner
        self.limits = limits or Limits()

    def git(
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

    def gitlinks(self, repo: Repository, pathspec: Sequence[str]) -> list[str]:
        """The submodules (gitlinks in the index) under ``pathspec``.

        ``git add`` and ``git stash push`` ask every submodule they cover whether it is dirty by starting a
        git inside it, whatever the config says; the runner's gatekeeper stops that git, so these commands
        are given pathspecs that leave the submodules out.
        """
        output = self.git(repo, "ls-files", "-z", "--stage", "--", *pathspec, max_bytes=32_000_000)
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

    def submodules_left_out(self, repo: Repository, command: list[str], pathspec: Sequence[str]) -> list[str]:
        """Run ``command`` on ``pathspec`` (literal paths, all by default) with the submodules left out;
        returns the submodules left out."""
        links = self.gitlinks(repo, pathspec)
        if not links:
            self.git(repo, *command, "--", *pathspec)
            return []
        magic = [f":(literal){path}" for path in pathspec or ["."]]
        magic += [f":(exclude,literal){link}" for link in links]
        self.git(repo, *command, "--", *magic, magic=True)
        return links

    def verify(self, repo: Repository, revision: str, what: str = "revision") -> str:
        """The commit id ``revision`` names, or a not-found error."""
        revision = validate_revision_text(revision, what)
        result = self.git(
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
                next_step="Check it with git_branches or git_log.",
            )
        return sha

    def range_args(self, repo: Repository, revision_range: str) -> list[str]:
        """``A..B`` / ``A...B`` / ``REV`` with every end verified and replaced by its commit id."""
        for operator in ("...", ".."):
            if operator in revision_range:
                left, right = revision_range.split(operator, 1)
                left_sha = self.verify(repo, left or "HEAD")
                right_sha = self.verify(repo, right or "HEAD")
                return [f"{left_sha}{operator}{right_sha}"]
        return [self.verify(repo, revision_range)]

    def pathspec(self, repo: Repository, paths: Sequence[str] | None) -> list[str]:
        return [self.repositories.relative_path(repo, p) for p in (paths or [])]

    def head(self, repo: Repository) -> tuple[str | None, str | None]:
        head = self.git(repo, "rev-parse", "--verify", "--quiet", "HEAD", check=False).text.strip() or None
        branch = (
            self.git(repo, "symbolic-ref", "--quiet", "--short", "HEAD", check=False).text.strip() or None
        )
        return branch, head

    def require_work_tree(self, repo: Repository) -> None:
        if repo.bare:
            raise InvalidArgument(
                f"{repo.name} is a bare repository: it has no working tree.",
                next_step="Read its history instead (git_log, git_show, git_diff with base and target).",
            )

    def diff_files(
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
        tokens = self.git(repo, *common, *extra, "-z", *where, *pathspec, max_bytes=8_000_000).text.split(
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

    def patch(
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
            output = self.git(repo, *diff_args, "--", *batch, max_bytes=per_file + (budget - total) * 2)
            sections = _split_patch(output.text)
            for index, (name, section) in enumerate(sections):
                partial = output.truncated and index == len(sections) - 1
                if name in shown:
                    continue
                if partial or json_chars(section) > per_file:
                    section = _cut_section(name, section, per_file)
                    cut_files.append(name)
                shown[name] = section
                total += json_chars(section)
            pending = [p for p in pending if p not in shown]
        kept: list[str] = []
        kept_paths: set[str] = set()
        running = 0
        for item in files:
            section = shown.get(item.path)
            size = json_chars(section) if section is not None else 0
            if section is None or (kept and running + size > budget):
                continue
            if item.additions is None and item.path not in cut_files:
                body = [line for line in section.split("\n") if not line.startswith(("+++ ", "--- "))]
                item.additions = sum(1 for line in body if line.startswith("+"))
                item.deletions = sum(1 for line in body if line.startswith("-"))
            kept.append(_lean_header(section))
            kept_paths.add(item.path)
            running += size
        omitted = len(files) - len(kept)
        return "".join(kept), [c for c in cut_files if c in kept_paths], omitted
