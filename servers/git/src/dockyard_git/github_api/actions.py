"""The log of a pull request's failed GitHub Actions job, the failing step first.

The workflow runs of the pull request's head commit (``GET /actions/runs?head_sha=``) give the failed
runs, their jobs (``GET /actions/runs/{id}/jobs``) the failed jobs and each job's steps. A job's log
(``GET /actions/jobs/{id}/logs``) is a redirect to a short-lived download link on another host: PyGithub
reads only the redirect (the token never leaves it), and the log is then streamed from the link without
any credential, over https (plain http only when the API itself is), through at most three more
redirects, and read no further than MAX_LOG_DOWNLOAD_BYTES or LOG_DOWNLOAD_SECONDS. The step's lines are
cut from it as it streams (:mod:`.joblog`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urljoin, urlparse

import httpx
from github import GithubException

from dockyard_shared import InvalidArgument, NotFound, UpstreamUnavailable

from ..settings import (
    LOG_DOWNLOAD_SECONDS,
    LOG_HEAD_LINES,
    MAX_ERROR_LINES,
    MAX_FAILED_JOBS,
    MAX_LOG_CHARS,
    MAX_LOG_DOWNLOAD_BYTES,
    MAX_LOG_LINE_CHARS,
)
from .client import GitHubClient, translated
from .fields import at, fenced, join_notes, name_field, url_of
from .joblog import StepCut, cut_step
from .models import FailedJob, JobLog, JobStep

__all__ = ["ActionsReading"]

FAILED = {"failure", "timed_out", "startup_failure"}
_MAX_RUNS = 5  # failed workflow runs whose jobs are listed
_MAX_STEPS = 60


class ActionsReading:
    def __init__(self, client: GitHubClient) -> None:
        self.client = client

    @translated("the failed jobs of pull request #{number}")
    def failed_job_log(
        self,
        slug: str,
        number: int,
        *,
        job_id: int | None = None,
        step: int | None = None,
        from_line: int | None = None,
    ) -> JobLog:
        repo = self.client.repo(slug)
        pull = self.client.call(f"pull request #{number}", lambda: repo.get_pull(number))
        head_sha = self.client.call(f"pull request #{number}", lambda: str(pull.head.sha))

        def failed_jobs() -> list[tuple[Any, str | None]]:
            runs = list(repo.get_workflow_runs(head_sha=head_sha).get_page(0))
            found: list[tuple[Any, str | None]] = []
            for run in [r for r in runs if r.conclusion in FAILED][:_MAX_RUNS]:
                found += [(job, run.name) for job in run.jobs().get_page(0) if job.conclusion in FAILED]
            return found

        failed = self.client.call(f"the workflow runs of pull request #{number}", failed_jobs)
        if job_id is not None:
            chosen = self.client.call(f"job {job_id}", lambda: _loaded(repo.get_workflow_job(job_id)))
            workflow = next((w for j, w in failed if j.id == job_id), None)
        elif failed:
            chosen, workflow = failed[0]
        else:
            return JobLog(
                repository=slug,
                number=number,
                head_sha=head_sha,
                job=None,
                note=f"No GitHub Actions job failed on the head commit {head_sha[:12]} of pull request "
                f"#{number} (or its runs are still going). Other CI systems' results are among the "
                "checks of github_pull_request.",
            )
        job = _job(chosen, workflow)
        others = [_job(j, w) for j, w in failed if j.id != job.id]
        notes: list[str] = []
        if len(others) > MAX_FAILED_JOBS:
            notes.append(f"{len(others)} other jobs failed; {MAX_FAILED_JOBS} are listed.")
            others = others[:MAX_FAILED_JOBS]
        steps_raw = list(chosen.steps or [])
        steps = [
            JobStep(
                number=int(s.number),
                name=name_field(s.name, f"name of step {s.number}", where=at(job.url)) or "",
                conclusion=s.conclusion,
            )
            for s in steps_raw[:_MAX_STEPS]
        ]
        target = _target_step(steps_raw, step)
        window = None
        if target is not None and target.started_at and target.completed_at:
            window = (target.started_at.timestamp(), target.completed_at.timestamp())
        location = self.client.call(f"the log of job {job.id}", lambda: _log_location(chosen))
        cut = StepCut(
            window=window,
            from_line=from_line,
            max_chars=MAX_LOG_CHARS,
            max_line_chars=MAX_LOG_LINE_CHARS,
            head_lines=LOG_HEAD_LINES,
            max_errors=MAX_ERROR_LINES,
        )
        stream = _LogStream(location, self.client.api_url, self.client.timeout)
        cut_step(stream.chunks(), cut)
        step_model = next((s for s in steps if target is not None and s.number == target.number), None)
        shown = cut.shown()
        label = f"step {target.number}" if target is not None else "the job"
        log, _ = fenced(
            "\n".join(text for _, text in shown),
            f"log of {label} of job {job.id}",
            cap=MAX_LOG_CHARS + 1_000,
            rest=f"the whole log is {at(job.url)}",
        )
        errors = None
        if cut.errors:
            errors, _ = fenced(
                "\n".join(cut.errors), f"error lines of job {job.id}", cap=20_000, rest=f"see {at(job.url)}"
            )
            if cut.error_count > len(cut.errors):
                notes.append(f"{cut.error_count} error lines in all; the first {len(cut.errors)} are shown.")
        numbers = [n for n, _ in shown]
        if target is None:
            notes.append("No step failed (or the job has no steps): the end of the whole log is shown.")
        elif cut.lines == 0 and window is not None:
            notes.append(
                f"No line of the log is stamped within step {target.number}'s time: the end of the whole "
                "log is shown instead."
            )
        elif numbers and (numbers[0] > 1 or len(numbers) < cut.lines):
            gap = _first_gap(numbers, cut.lines)
            if gap is not None:
                notes.append(
                    f"{len(numbers)} of the step's {cut.lines:,} lines are shown; for more call again with "
                    f"job_id={job.id}, step={target.number}, from_line={gap}."
                )
        if stream.stopped:
            notes.append(
                f"Only the first {stream.read:,} bytes of the log were read ({stream.stopped}); later lines "
                f"are not included. The whole log is {at(job.url)}."
            )
        return JobLog(
            repository=slug,
            number=number,
            head_sha=head_sha,
            job=job,
            step=step_model,
            steps=steps,
            errors=errors,
            log=log,
            log_lines=cut.lines if cut.lines or window is None else cut.all_lines,
            shown_lines=_ranges(numbers),
            other_failed_jobs=others,
            note=join_notes(notes),
        )


def _loaded(job: Any) -> Any:
    _ = job.name  # a lazy job is fetched here, so a 404 is reported as reading the job
    return job


def _job(job: Any, workflow: str | None) -> FailedJob:
    url = url_of(job.html_url)
    return FailedJob(
        id=int(job.id),
        name=name_field(job.name, f"name of job {job.id}", where=at(url)) or "",
        workflow=name_field(workflow, f"workflow of job {job.id}", where=at(url)),
        conclusion=job.conclusion,
        url=url,
    )


def _target_step(steps: list[Any], wanted: int | None) -> Any:
    if wanted is not None:
        found = next((s for s in steps if s.number == wanted), None)
        if found is None:
            raise InvalidArgument(
                f"The job has no step {wanted}.",
                next_step=f"Steps: {', '.join(str(s.number) for s in steps[:_MAX_STEPS]) or 'none'}.",
            )
        return found
    return next((s for s in steps if s.conclusion in FAILED), None)


def _log_location(job: Any) -> str:
    try:
        return str(job.logs_url())
    except KeyError:
        raise UpstreamUnavailable(
            "GitHub answered the job log request without a download link.", retryable=False
        ) from None
    except GithubException as error:
        if error.status == 410:
            raise NotFound(
                f"GitHub no longer keeps the log of job {job.id} (410 Gone): logs expire after the "
                "repository's retention period.",
                next_step="Re-run the job on GitHub to get a new log.",
            ) from None
        raise


def _first_gap(numbers: list[int], total: int) -> int | None:
    expected = 1
    for n in numbers:
        if n != expected:
            return expected
        expected += 1
    return expected if expected <= total else None


def _ranges(numbers: list[int]) -> str | None:
    if not numbers:
        return None
    parts, start, previous = [], numbers[0], numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == previous + 1:
            previous = n
            continue
        parts.append(f"{start}-{previous}" if previous != start else str(start))
        if n is not None:
            start = previous = n
    return ",".join(parts)


class _LogStream:
    """The log behind a download link, as chunks: no credential sent, redirects checked, bytes and time
    bounded; ``stopped`` says why reading ended early."""

    def __init__(self, location: str, api_url: str, timeout: float) -> None:
        self.location = location
        self.plain_http = urlparse(api_url).scheme == "http"
        self.timeout = timeout
        self.read = 0
        self.stopped: str | None = None

    def _check(self, url: str) -> str:
        parsed = urlparse(url)
        allowed = {"https", "http"} if self.plain_http else {"https"}
        if parsed.scheme not in allowed or not parsed.hostname or parsed.username or parsed.password:
            raise UpstreamUnavailable(
                "GitHub's job log link is not a plain https URL; it was not followed.", retryable=False
            )
        return url

    def chunks(self) -> Iterator[bytes]:
        deadline = time.monotonic() + LOG_DOWNLOAD_SECONDS
        url = self._check(self.location)
        try:
            with httpx.Client(follow_redirects=False, timeout=self.timeout) as http:
                for _ in range(4):
                    with http.stream("GET", url) as response:
                        if response.is_redirect and "location" in response.headers:
                            url = self._check(urljoin(url, response.headers["location"]))
                            continue
                        if response.status_code != 200:
                            raise UpstreamUnavailable(
                                f"The job log download answered {response.status_code} (its link lasts "
                                "about a minute).",
                                retryable=True,
                                next_step="Call again for a fresh link.",
                            )
                        for chunk in response.iter_bytes():
                            room = MAX_LOG_DOWNLOAD_BYTES - self.read
                            self.read += min(len(chunk), room)
                            yield chunk[:room]
                            if self.read >= MAX_LOG_DOWNLOAD_BYTES:
                                self.stopped = f"the cap is {MAX_LOG_DOWNLOAD_BYTES:,} bytes"
                                return
                            if time.monotonic() > deadline:
                                self.stopped = f"reading took over {LOG_DOWNLOAD_SECONDS:.0f} s"
                                return
                        return
                raise UpstreamUnavailable("The job log link redirected too many times.", retryable=False)
        except httpx.HTTPError as error:
            raise UpstreamUnavailable(
                f"The job log could not be downloaded ({type(error).__name__}).",
                retryable=True,
                next_step="Retry shortly.",
            ) from None
