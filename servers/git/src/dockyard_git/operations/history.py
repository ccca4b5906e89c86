"""Reading history: log, show, blame, branches, tags, grep, and the repository's GitHub remote."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

from dockyard_shared import (
    InvalidArgument,
    LimitExceeded,
    NotFound,
    Problem,
    bound_text,
)

from ..bounds import fit, take
from ..models import (
    COMMIT_FIELDS,
    DEFAULT_LOG_FIELDS,
    BlameLine,
    BlameResult,
    Branch,
    BranchList,
    GrepMatch,
    GrepResult,
    LogEntry,
    LogResult,
    ShowResult,
    Tag,
    TagList,
)
from ..repos import Repository
from ..settings import Limits
from .patterns import check_pattern
from .plumbing import COMMIT_FORMAT, FIELD, RECORD, Plumbing, clip, parse_commits
from .worktree_links import LinkedFolders

__all__ = ["History"]

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


def _parse_log(text: str, fields: list[str], limits: Limits) -> list[dict[str, object]]:
    clipped = {"author", "email", "subject"} & set(fields)
    entries = []
    for record in text.split(RECORD):
        record = record.strip("\n")
        if not record:
            continue
        values = record.split(FIELD, len(fields) - 1)
        if len(values) != len(fields):
            continue
        entry: dict[str, object] = dict(zip(fields, values, strict=True))
        for name in clipped:
            entry[name] = clip(entry[name], limits.max_subject_chars)  # type: ignore[arg-type]
        if "parents" in entry:
            entry["parents"] = entry["parents"].split()  # type: ignore[union-attr]
        entries.append(entry)
    return entries


class History:
    """What the history tools read: log, show, blame, branches, tags, grep (nothing here writes)."""

    def __init__(self, plumbing: Plumbing) -> None:
        self.plumbing = plumbing
        self.limits = plumbing.limits

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
            f"--format={FIELD.join(_LOG_PLACEHOLDERS[f] for f in chosen)}{RECORD}",
            f"--max-count={count + 1}",
            f"--skip={skip}",
            "--no-color",
        ]
        for flag, value in (("--author", author), ("--since", since), ("--until", until), ("--grep", grep)):
            if value:
                if "\x00" in value or "\n" in value:
                    raise InvalidArgument(f"{flag[2:]} may not contain NUL or newline characters.")
                if flag in ("--author", "--grep"):
                    check_pattern(value, what=flag[2:], extended=False)
                args.append(f"{flag}={value}")
        if author or grep:
            args.append("--basic-regexp")  # what check_pattern checked, whatever a config chooses
        args += ["--end-of-options"]
        args += self.plumbing.range_args(repo, revision_range) if revision_range else []
        args += ["--", *self.plumbing.pathspec(repo, paths)]
        # One git process: without a range, an empty repository is recognised from git's own refusal
        # rather than by asking for HEAD first (two more processes on every call).
        try:
            output = self.plumbing.git(repo, *args, max_bytes=8_000_000)
        except Problem as error:
            if revision_range or "does not have any commits yet" not in error.what:
                raise
            return LogResult(commits=[], note="The repository has no commits yet.")
        rows, cut, _ = take(
            _parse_log(output.text, chosen, self.limits),
            max_items=count,
            max_chars=self.limits.max_reply_chars,
        )
        more = cut or output.truncated
        # Values straight from git's fixed format: validating a thousand of them again would be waste.
        commits = [LogEntry.model_construct(**row) for row in rows]
        # next_skip alone says more match (its schema says what to do with it); a note only when the
        # count asked for was cut to the limit.
        return LogResult(
            commits=commits,
            next_skip=skip + len(commits) if more else None,
            note=f"{self.limits.max_log} commits at most per call." if more and capped else None,
        )

    def show(
        self,
        repo: Repository,
        *,
        revision: str = "HEAD",
        path: str | None = None,
        offset: int = 0,
        max_chars: int | None = None,
    ) -> ShowResult:
        """``max_chars``: of a file's content (default: a tool page, ``max_file_chars``)."""
        if path is None and ":" in revision:
            revision, path = revision.split(":", 1)
        sha = self.plumbing.verify(repo, revision or "HEAD")
        if path is not None:
            return self._show_file(repo, sha, path, offset, max_chars or self.limits.max_file_chars)
        header = self.plumbing.git(repo, "show", "-s", f"--format={COMMIT_FORMAT}", sha).text
        (commit,) = parse_commits(header, self.limits)
        common = ["show", "--no-color", "--no-ext-diff", "--no-textconv", "-M", "--format="]
        files = self.plumbing.diff_files(repo, common, [sha], [], counts=False)
        patch, cut_files, omitted = self.plumbing.patch(repo, [*common, "--patch", sha], [], files)
        listed, more, _ = take(
            files, max_items=self.limits.max_list, max_chars=self.limits.max_patch_files_chars
        )
        truncated = bool(cut_files or omitted or more)
        note = (
            f"Patch truncated (per file and in total); {len(listed)} of {len(files)} files listed. Use "
            f"git_diff with base='{sha}^' target='{sha}' and paths=[…] for one file, or git_show with path "
            "for its content."
            if truncated
            else None
        )
        return ShowResult(
            kind="commit",
            commit=commit,
            # A whole patch names every file, its status and its lines: the list would repeat it.
            files=listed if truncated else [],
            patch=patch,
            truncated=truncated,
            note=note,
        )

    def _show_file(self, repo: Repository, sha: str, path: str, offset: int, max_chars: int) -> ShowResult:
        relative = self.plumbing.repositories.relative_path(repo, path)
        spec = f"{sha}:{relative}"
        kind = self.plumbing.git(repo, "cat-file", "-t", spec, check=False)
        if kind.returncode != 0:
            raise NotFound(
                f"{relative} does not exist at {sha[:12]}.",
                next_step="Check the path: relative to the repository top, as of that revision.",
            )
        if kind.text.strip() != "blob":
            raise InvalidArgument(f"{relative} is a {kind.text.strip()} at {sha[:12]}, not a file.")
        size = int(self.plumbing.git(repo, "cat-file", "-s", spec).text.strip())
        # cat-file -p applies no filters and no textconv: the stored bytes, nothing a config can run.
        limit = offset + max_chars * 4 + 1
        raw = self.plumbing.git(repo, "cat-file", "-p", spec, max_bytes=limit)
        if "\x00" in raw.text[:8000]:
            return ShowResult(
                kind="file",
                size=size,
                binary=True,
                note="Binary file: content not shown.",
            )
        start = min(offset, len(raw.text))
        # As many characters as take max_file_chars as JSON (fewer when the text is full of escapes).
        room = len(fit(raw.text[start : start + max_chars], max_chars))
        bounded = bound_text(
            raw.text,
            max(room, 1),
            offset=start,
            how_to_continue=lambda n: f"call git_show with offset={n}",
        )
        return ShowResult(
            kind="file",
            path=relative,
            revision_sha=sha,
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
        relative = self.plumbing.repositories.relative_path(repo, path)
        first = start or 1
        last = end or first + self.limits.max_blame_lines - 1
        if first < 1 or last < first:
            raise InvalidArgument(
                "start must be ≥ 1 and end ≥ start.", next_step="Pass a line range such as start=10, end=40."
            )
        truncated = last - first + 1 > self.limits.max_blame_lines
        last = min(last, first + self.limits.max_blame_lines - 1)
        args = ["blame", "--porcelain", "--no-textconv", f"-L{first},{last}"]
        if revision:
            args.append(self.plumbing.verify(repo, revision))
        output = self.plumbing.git(repo, *args, "--", relative, check=False)
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
                        author=clip(data.get("author", ""), self.limits.max_subject_chars),
                        date=_iso_date(data.get("author-time", ""), data.get("author-tz", "")),
                        summary=clip(data.get("summary", ""), self.limits.max_subject_chars),
                        text=clip(raw[1:], self.limits.max_line_chars),
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
        lines, cut, _ = take(lines, max_items=len(lines), max_chars=self.limits.max_reply_chars)
        shown_to = lines[-1].line if lines else first - 1
        truncated = truncated or output.truncated or cut
        return BlameResult(
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
        fmt = FIELD.join(
            ["%(refname)", "%(objectname)", "%(HEAD)", "%(upstream:short)", "%(contents:subject)"]
        )
        args = ["for-each-ref", f"--format={fmt}", f"--count={self.limits.max_list + 1}"]
        if contains:
            args.append(f"--contains={self.plumbing.verify(repo, contains)}")
        output = self.plumbing.git(repo, *args, *refs)
        branches = []
        for line in output.text.splitlines():
            refname, sha, head, upstream, subject = (line.split(FIELD) + [""] * 5)[:5]
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
                    subject=clip(subject, self.limits.max_subject_chars),
                )
            )
        branches, truncated, _ = take(
            branches, max_items=self.limits.max_list, max_chars=self.limits.max_reply_chars
        )
        return BranchList(
            branches=branches,
            truncated=truncated,
            note="More branches exist; narrow with kind or contains." if truncated else None,
        )

    def tags(self, repo: Repository) -> TagList:
        fmt = FIELD.join(
            [
                "%(refname:short)",
                "%(*objectname)",
                "%(objectname)",
                "%(creatordate:iso-strict)",
                "%(contents:subject)",
            ]
        )
        output = self.plumbing.git(
            repo,
            "for-each-ref",
            "--sort=-creatordate",
            f"--format={fmt}",
            f"--count={self.limits.max_list + 1}",
            "refs/tags",
        )
        tags = []
        for line in output.text.splitlines():
            name, peeled, sha, date, subject = (line.split(FIELD) + [""] * 5)[:5]
            tags.append(
                Tag(
                    name=name,
                    sha=peeled or sha,
                    date=date or None,
                    subject=clip(subject, self.limits.max_subject_chars),
                )
            )
        tags, truncated, _ = take(tags, max_items=self.limits.max_list, max_chars=self.limits.max_reply_chars)
        return TagList(
            tags=tags,
            truncated=truncated,
            note=f"The newest {len(tags)} tags shown." if truncated else None,
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
        check_pattern(pattern, what="pattern", extended=True)
        limit = min(max_matches or self.limits.default_grep_matches, self.limits.max_grep_matches)
        args = ["grep", "-n", "-I", "--no-color", "--full-name", "-E", "--null"]
        if ignore_case:
            args.append("-i")
        args += ["-e", pattern]
        if revision:
            args.append(self.plumbing.verify(repo, revision))
        elif repo.bare:
            args.append(self.plumbing.verify(repo, "HEAD"))
        pathspec = self.plumbing.pathspec(repo, paths)
        links = LinkedFolders(str(repo.work_tree)) if repo.work_tree and not revision else None
        linked = self._linked_folders(repo, links, pathspec) if links else []
        if linked:
            # git would open the tracked files behind them through the link: leave those folders out.
            magic = [f":(literal){path}" for path in pathspec or ["."]]
            magic += [f":(exclude,literal){folder}" for folder in linked]
            output = self.plumbing.git(repo, *args, "--", *magic, max_bytes=400_000, check=False, magic=True)
        else:
            output = self.plumbing.git(repo, *args, "--", *pathspec, max_bytes=400_000, check=False)
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
        matches, cut, _ = take(matches, max_items=limit, max_chars=self.limits.max_reply_chars)
        truncated = cut or output.truncated
        notes = []
        if truncated:
            notes.append(f"More than {len(matches)} matches; narrow with paths or a more specific pattern.")
        if linked or dropped:
            folders = [clip(f"{folder}/", 100) for folder in linked] + [clip(p, 100) for p in sorted(dropped)]
            notes.append(
                f"Not searched: tracked files behind a symbolic link in the work tree ({', '.join(folders[:10])}"
                f"{' …' if len(folders) > 10 else ''}); git status reports them deleted. Pass revision='HEAD' "
                "to search their committed content."
            )
        return GrepResult(
            matches=matches,
            truncated=truncated,
            note=" ".join(notes) or None,
        )

    def _linked_folders(self, repo: Repository, links: LinkedFolders, pathspec: Sequence[str]) -> list[str]:
        """The work-tree folders that are links with tracked paths under ``pathspec`` behind them."""
        output = self.plumbing.git(repo, "ls-files", "-z", "--", *pathspec, max_bytes=32_000_000)
        if output.truncated:
            raise LimitExceeded(
                "Too many tracked files to check the work tree for linked folders before searching it.",
                next_step="Narrow with paths, or pass revision='HEAD' to search the committed content.",
            )
        return links.topmost(path for path in output.text.split("\x00") if path)

    def tracked_paths(self, repo: Repository, prefix: str, limit: int = 50) -> list[str]:
        """Tracked paths starting with ``prefix`` (for completions)."""
        output = self.plumbing.git(repo, "ls-files", "-z", max_bytes=2_000_000, check=False)
        return [p for p in output.text.split("\x00") if p and p.startswith(prefix)][:limit]


def _iso_date(epoch: str, zone: str) -> str:
    """git blame's author-time and author-tz (``1700000000``, ``+0100``) as git log's ``%aI`` writes the same
    moment (``2023-11-14T23:13:20+01:00``), so every tool gives dates in one form; '' when git gave none."""
    if not epoch.isdigit():
        return ""
    offset = timedelta(0)
    if re.fullmatch(r"[+-]\d{4}", zone):
        sign = -1 if zone[0] == "-" else 1
        offset = sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[3:5]))
    try:
        return datetime.fromtimestamp(int(epoch), timezone(offset)).isoformat()
    except (OverflowError, OSError, ValueError):
        return ""
