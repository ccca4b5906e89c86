"""A repository's pull requests, read from GitHub: one page of them, or one with its checks and
changed files (their patches sharing what the reply leaves)."""

from __future__ import annotations

from typing import Any

from dockyard_shared.words import plural

from ..settings import (
    FILES_PER_REPLY,
    GITHUB_MAX_LISTED_FILES,
    MAX_CHECKS,
    MAX_PATCH_CHARS,
    MAX_PATCHES_CHARS,
    MAX_PATH_CHARS,
    PER_PAGE,
    REPLY_BUDGET,
)
from .client import GitHubClient, check_page, translated
from .fields import (
    at,
    fitting,
    iso,
    join_notes,
    json_size,
    largest_fitting,
    listed_title,
    login_field,
    name_field,
    next_page,
    shared_out,
    title_and_body,
    url_of,
)
from .models import ChangedFile, CheckResult, PullDetail, PullList, PullSummary

__all__ = ["PullRequestReading"]


class PullRequestReading:
    """The pull request half of :class:`.GitHubReader`."""

    def __init__(self, client: GitHubClient) -> None:
        self.client = client

    @translated("the pull requests")
    def pull_requests(
        self, slug: str, *, state: str, base: str | None, head: str | None, page: int
    ) -> PullList:
        check_page(page)
        kwargs: dict[str, Any] = {"state": state}
        if base:
            kwargs["base"] = base
        if head:
            kwargs["head"] = head

        def fetch() -> list[Any]:
            pulls = self.client.repo(slug).get_pulls(**kwargs)
            return list(pulls.get_page(page - 1))

        items = self.client.call("the pull requests", fetch)
        summaries = []
        for p in items:
            n, url, title = listed_title(p, "pull request")
            summaries.append(
                PullSummary(
                    number=n,
                    title=title,
                    state=p.state,
                    draft=bool(p.draft),
                    author=login_field(p.user, f"author of pull request #{n}", where=at(url)),
                    head=name_field(p.head.ref, f"head branch of pull request #{n}", where=at(url)) or "",
                    base=name_field(p.base.ref, f"base branch of pull request #{n}", where=at(url)) or "",
                    created_at=iso(p.created_at),
                    updated_at=iso(p.updated_at),
                    url=url,
                )
            )
        more, notes = next_page(len(items), page)
        summaries = fitting(summaries, "pull requests", notes)
        return PullList(
            repository=slug,
            page=page,
            per_page=PER_PAGE,
            has_more=more,
            pull_requests=summaries,
            note=join_notes(notes),
        )

    @translated("pull request #{number}")
    def pull_request(self, slug: str, number: int, *, files_page: int | None = None) -> PullDetail:
        """One pull request. ``files_page`` pages the changed files (:data:`FILES_PER_REPLY` each);
        ``None`` means the calling tool has no such argument, so notes point at the web page only."""
        page = files_page or 1
        check_page(page)
        pull = self.client.call(f"pull request #{number}", lambda: self.client.repo(slug).get_pull(number))
        head_sha = str(pull.head.sha)
        url = url_of(pull.html_url)
        notes: list[str] = []

        title, body = title_and_body(pull, f"pull request #{number}", url, notes)

        def statuses() -> tuple[str | None, list[CheckResult], int]:
            commit = self.client.repo(slug).get_commit(head_sha)
            combined = commit.get_combined_status()
            listed = list(combined.statuses)
            runs = commit.get_check_runs()
            first_runs = list(runs.get_page(0))
            total = max(int(combined.total_count or 0), len(listed)) + max(
                int(runs.totalCount or 0), len(first_runs)
            )
            # Share the room between commit statuses and check runs, so neither crowds the other out.
            runs_shown = first_runs[: max(MAX_CHECKS // 2, MAX_CHECKS - len(listed))]
            found = [(s.context, s.state, s.state) for s in listed[: MAX_CHECKS - len(runs_shown)]]
            found += [(c.name, c.status, c.conclusion) for c in runs_shown]
            checks = [
                CheckResult(
                    name=name_field(
                        name, f"name of check {i} of pull request #{number}", where=at(url, "/checks")
                    )
                    or "",
                    status=status,
                    conclusion=conclusion,
                )
                for i, (name, status, conclusion) in enumerate(found, 1)
            ]
            return combined.state, checks, total

        combined_state, checks, total_checks = self.client.call(
            f"the checks of pull request #{number}", statuses
        )
        checks_cut = total_checks > len(checks)
        if checks_cut:
            notes.append(
                f"Only {len(checks)} of {total_checks} checks are listed; see them all {at(url, '/checks')}."
            )

        # changed_files is documented on a single pull request; if absent, page fullness decides.
        known = pull.changed_files
        changed = int(known) if isinstance(known, int) else None
        listed_total = (
            min(changed, GITHUB_MAX_LISTED_FILES) if changed is not None else GITHUB_MAX_LISTED_FILES
        )
        first = (page - 1) * FILES_PER_REPLY
        last_page_full = False

        def fetch_files() -> list[Any]:
            nonlocal last_page_full
            listing = pull.get_files()
            found: list[Any] = []
            for github_page in range(first // PER_PAGE, (first + FILES_PER_REPLY) // PER_PAGE):
                if github_page * PER_PAGE >= listed_total:
                    break
                batch = list(listing.get_page(github_page))
                found += batch
                last_page_full = len(batch) >= PER_PAGE
                if not last_page_full:
                    break
            return found[:FILES_PER_REPLY]

        raw_files = (
            self.client.call(f"the files of pull request #{number}", fetch_files)
            if first < listed_total
            else []
        )

        def with_patches(budget: int) -> tuple[list[ChangedFile], int]:
            """The files, their patches sharing ``budget`` characters fairly; and how many were cut."""
            patches, cut_patches = shared_out(
                [f.patch or "" for f in raw_files],
                budget,
                MAX_PATCH_CHARS,
                source=lambda i: f"patch of file {first + 1 + i} of pull request #{number}",
                rest=lambda i: (
                    f"patch cut; see the file with git_diff on the checked-out branch or {at(url, '/files')}"
                ),
            )
            files = [
                ChangedFile(
                    filename=name_field(
                        f.filename,
                        f"name of file {index} of pull request #{number}",
                        where=f"in git_diff on the checked-out branch or {at(url, '/files')}",
                        cap=MAX_PATH_CHARS,
                    )
                    or "",
                    status=f.status,
                    additions=f.additions,
                    deletions=f.deletions,
                    patch=patch if f.patch is not None else None,
                )
                for index, (f, patch) in enumerate(zip(raw_files, patches, strict=True), first + 1)
            ]
            return files, cut_patches

        files = [f.model_copy(update={"patch": None}) for f in with_patches(0)[0]]
        shown_to = first + len(files)
        if changed is not None:
            more_files = shown_to < listed_total
            of = f"of {changed}"
        else:
            more_files = len(files) == FILES_PER_REPLY and last_page_full
            of = "of more"
        if more_files:
            how = (
                f"call again with files_page={page + 1}, or see them "
                if files_page is not None
                else "see them "
            )
            notes.append(
                f"Files {first + 1}–{shown_to} {of} are listed; for the rest {how}{at(url, '/files')}."
            )
        elif files_page is not None and not files and page > 1:
            notes.append(f"files_page={page} is past the last file ({changed or 'no'} files changed).")
        beyond_listing = changed is not None and changed > GITHUB_MAX_LISTED_FILES
        if beyond_listing and not more_files:
            notes.append(
                f"GitHub lists only the first {GITHUB_MAX_LISTED_FILES:,} of {changed:,} files; "
                "check out the branch and use git_diff for the others."
            )

        def reply(files: list[ChangedFile], notes: list[str]) -> PullDetail:
            return PullDetail(
                repository=slug,
                number=int(pull.number),
                title=title,
                body=body,
                state=pull.state,
                merged=bool(pull.merged),
                draft=bool(pull.draft),
                author=login_field(pull.user, f"author of pull request #{number}", where=at(url)),
                head=name_field(pull.head.ref, f"head branch of pull request #{number}", where=at(url)) or "",
                base=name_field(pull.base.ref, f"base branch of pull request #{number}", where=at(url)) or "",
                head_sha=head_sha,
                url=url,
                combined_status=combined_state,
                checks=checks,
                checks_truncated=checks_cut,
                changed_files=changed if changed is not None else shown_to,
                files_page=page,
                files=files,
                files_truncated=more_files or beyond_listing,
                note=join_notes(notes),
            )

        # The patches share what the rest of the reply leaves (up to MAX_PATCHES_CHARS), measured as the
        # reply travels: names and text written by others may take more characters as JSON than as text.
        fences = 300 * sum(f.patch is not None for f in raw_files)  # each patch's fence and cut mark

        def reply_with(budget: int) -> PullDetail:
            files, cut_patches = with_patches(budget)
            cut = [
                f"{plural(cut_patches, 'patch', 'patches')} cut (each at most {MAX_PATCH_CHARS:,} characters, {budget:,} in "
                f"all); the full diff is {at(url, '/files')} or from git_diff on the checked-out branch."
            ]
            return reply(files, [*notes, *cut] if cut_patches else notes)

        return largest_fitting(
            reply_with, min(MAX_PATCHES_CHARS, REPLY_BUDGET - json_size(reply(files, notes)) - fences)
        )
