"""What the GitHub toolset returns: pydantic models, so every result has an output schema.

Apart from :mod:`.models` because that toolset is served only with a GitHub token: without one, a start
does not build these classes (nor import the untrusted-text helpers their descriptions quote).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from dockyard_shared.untrusted import UNTRUSTED_NAME, UNTRUSTED_TEXT

from ..settings import MAX_BODY_CHARS, MAX_LABELS, MAX_LABELS_IN_LIST, MAX_PATCH_CHARS, MAX_PATCHES_CHARS


class PullSummary(BaseModel):
    number: int
    title: str = Field(description=UNTRUSTED_TEXT)
    state: str
    draft: bool
    author: str | None = Field(description="Login. " + UNTRUSTED_NAME)
    head: str = Field(description="Source branch. " + UNTRUSTED_NAME)
    base: str = Field(description="Target branch. " + UNTRUSTED_NAME)
    created_at: str | None
    updated_at: str | None
    url: str


class IssueSummary(BaseModel):
    number: int
    title: str = Field(description=UNTRUSTED_TEXT)
    state: str
    author: str | None = Field(description="Login. " + UNTRUSTED_NAME)
    labels: list[str] = Field(description=f"Up to {MAX_LABELS_IN_LIST}. " + UNTRUSTED_NAME)
    labels_not_shown: int = Field(0, description="Labels beyond those listed (see url).")
    comments: int
    created_at: str | None
    updated_at: str | None
    url: str


class Page(BaseModel):
    repository: str = Field(description="owner/name on GitHub")
    page: int
    per_page: int
    has_more: bool
    note: str | None = None


class PullList(Page):
    pull_requests: list[PullSummary]


class IssueList(Page):
    issues: list[IssueSummary]


class CheckResult(BaseModel):
    name: str = Field(description="Status context or check run name. " + UNTRUSTED_NAME)
    status: str
    conclusion: str | None


class ChangedFile(BaseModel):
    filename: str = Field(description="Path. " + UNTRUSTED_NAME)
    status: str
    additions: int
    deletions: int
    patch: str | None = Field(
        description=f"{UNTRUSTED_TEXT} At most {MAX_PATCH_CHARS:,} characters; all patches in a reply "
        f"share {MAX_PATCHES_CHARS:,}. A cut is marked after the fence."
    )


class PullDetail(BaseModel):
    repository: str
    number: int
    title: str = Field(description=UNTRUSTED_TEXT)
    body: str = Field(description=f"{UNTRUSTED_TEXT} Cut at {MAX_BODY_CHARS:,} characters (marked).")
    state: str
    merged: bool
    draft: bool
    author: str | None = Field(description="Login. " + UNTRUSTED_NAME)
    head: str = Field(description="Source branch. " + UNTRUSTED_NAME)
    base: str = Field(description="Target branch. " + UNTRUSTED_NAME)
    head_sha: str
    url: str = ""
    combined_status: str | None
    checks: list[CheckResult]
    checks_truncated: bool = False
    changed_files: int = Field(0, description="Files the pull request changes in all.")
    files_page: int = 1
    files: list[ChangedFile]
    files_truncated: bool = Field(description="More files exist than this reply shows.")
    note: str | None = None


class Comment(BaseModel):
    author: str | None = Field(description="Login. " + UNTRUSTED_NAME)
    created_at: str | None
    url: str = ""
    body: str = Field(description=f"{UNTRUSTED_TEXT} Cut when long (marked, with where to read it).")


class IssueDetail(BaseModel):
    repository: str
    number: int
    title: str = Field(description=UNTRUSTED_TEXT)
    body: str = Field(description=f"{UNTRUSTED_TEXT} Cut at {MAX_BODY_CHARS:,} characters (marked).")
    state: str
    author: str | None = Field(description="Login. " + UNTRUSTED_NAME)
    url: str = ""
    labels: list[str] = Field(description=f"Up to {MAX_LABELS}. " + UNTRUSTED_NAME)
    labels_not_shown: int = 0
    comments: list[Comment]
    comments_page: int
    total_comments: int = 0
    has_more_comments: bool
    note: str | None = None


# -- review threads, CI logs, where a line comes from (github toolset) -------------------------------


class ThreadComment(BaseModel):
    author: str | None = Field(description="Login. " + UNTRUSTED_NAME)
    created_at: str | None
    url: str = ""
    body: str = Field(description=f"{UNTRUSTED_TEXT} Cut when long (marked).")


class ReviewThread(BaseModel):
    id: str = Field(description="Thread id for github_reply_to_thread / github_resolve_thread.")
    path: str | None = Field(description="File. " + UNTRUSTED_NAME)
    line: int | None
    start_line: int | None = None
    resolved: bool
    outdated: bool
    resolved_by: str | None = None
    total_comments: int
    comments: list[ThreadComment]


class ReviewThreads(BaseModel):
    repository: str
    number: int
    url: str = ""
    total_threads: int
    threads: list[ReviewThread]
    hidden_resolved: int = Field(0, description="Resolved threads on this page left out.")
    next_cursor: str | None = Field(None, description="Pass as after for the next page.")
    note: str | None = None


class JobStep(BaseModel):
    number: int
    name: str = Field(description=UNTRUSTED_NAME)
    conclusion: str | None


class FailedJob(BaseModel):
    id: int
    name: str = Field(description=UNTRUSTED_NAME)
    workflow: str | None = Field(None, description=UNTRUSTED_NAME)
    conclusion: str | None
    url: str = ""


class JobLog(BaseModel):
    repository: str
    number: int
    head_sha: str
    job: FailedJob | None = Field(description="The job shown; null when none failed.")
    step: JobStep | None = Field(None, description="The step whose log is shown.")
    steps: list[JobStep] = []
    errors: str | None = Field(None, description=f"##[error] lines of the whole log. {UNTRUSTED_TEXT}")
    log: str | None = Field(None, description=f"The step's lines, timestamps dropped. {UNTRUSTED_TEXT}")
    log_lines: int = Field(0, description="Lines the step has in all.")
    shown_lines: str | None = Field(None, description="Which of them are shown, e.g. 1-15,900-1200.")
    other_failed_jobs: list[FailedJob] = []
    note: str | None = None


class LinkedIssue(BaseModel):
    number: int
    title: str = Field(description=UNTRUSTED_TEXT)
    state: str | None
    url: str = ""
    how: str = Field(description="'closes' (GitHub's link) or 'named in body' (a closing keyword).")
    body: str | None = Field(None, description=f"{UNTRUSTED_TEXT} Cut (marked).")


class OriginPull(BaseModel):
    number: int
    title: str = Field(description=UNTRUSTED_TEXT)
    state: str | None
    merged_at: str | None
    author: str | None = Field(description="Login. " + UNTRUSTED_NAME)
    url: str = ""
    body: str | None = Field(None, description=f"{UNTRUSTED_TEXT} Cut (marked).")
    issues: list[LinkedIssue]


class CommitOrigin(BaseModel):
    sha: str
    lines: list[int]
    summary: str = Field(description="Commit subject (from the local repository).")
    author: str
    date: str = Field(description="Unix time.")
    on_github: bool = Field(description="GitHub knows the commit (it was pushed).")
    pull_requests: list[OriginPull]


class LineOrigin(BaseModel):
    repository: str
    path: str
    commits: list[CommitOrigin]
    note: str | None = None


class Posted(BaseModel):
    """What a github_write tool did."""

    repository: str
    done: str = Field(description="What was done, in the server's words.")
    url: str = ""
    thread_id: str | None = None
    resolved: bool | None = None
