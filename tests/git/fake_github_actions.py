"""GitHub Actions in the loopback GitHub fake: workflow runs, jobs with steps, and job logs.

As documented for the REST API:

* ``GET /repos/{o}/{r}/actions/runs?head_sha=`` → ``{"total_count", "workflow_runs": [...]}``, paginated;
* ``GET /repos/{o}/{r}/actions/runs/{run_id}/jobs`` → ``{"total_count", "jobs": [...]}``, each job with
  its ``steps`` (``number``, ``name``, ``status``, ``conclusion``, ``started_at``, ``completed_at``);
* ``GET /repos/{o}/{r}/actions/jobs/{job_id}`` → the job;
* ``GET /repos/{o}/{r}/actions/jobs/{job_id}/logs`` → ``302 Found`` with a ``Location`` on another host
  that lasts about a minute; 410 when the logs are gone.

The download host (:class:`LogStorage`, a second loopback server, so another origin) serves the plain
text log, each line stamped ``2026-01-02T00:00:03.1234567Z``; like a pre-signed storage URL it refuses a
request that carries an ``Authorization`` header besides its signature, and an expired link.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

API = "https://api.github.com"
T0 = datetime(2026, 1, 2, tzinfo=UTC)


def at(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def stamp(seconds: float) -> str:
    """A log line's time stamp, as GitHub writes it (seven decimals)."""
    moment = T0 + timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond:06d}0Z"


def step(number: int, name: str, conclusion: str, start: float, end: float) -> dict[str, Any]:
    return {
        "name": name,
        "status": "completed",
        "conclusion": conclusion,
        "number": number,
        "started_at": at(start),
        "completed_at": at(end),
    }


def workflow_run(run_id: int, sha: str, conclusion: str, name: str = "CI") -> dict[str, Any]:
    base = f"{API}/repos/acme/widgets/actions/runs/{run_id}"
    return {
        "id": run_id,
        "name": name,
        "node_id": f"WFR_{run_id}",
        "head_branch": "feature",
        "head_sha": sha,
        "path": ".github/workflows/ci.yml",
        "display_title": "CI",
        "run_number": 1,
        "event": "pull_request",
        "status": "completed",
        "conclusion": conclusion,
        "workflow_id": 11,
        "url": base,
        "html_url": f"https://github.com/acme/widgets/actions/runs/{run_id}",
        "jobs_url": f"{base}/jobs",
        "logs_url": f"{base}/logs",
        "check_suite_url": f"{API}/repos/acme/widgets/check-suites/1",
        "created_at": at(0),
        "updated_at": at(100),
        "run_attempt": 1,
        "run_started_at": at(0),
    }


def job(
    job_id: int, run_id: int, sha: str, name: str, conclusion: str, steps: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "id": job_id,
        "run_id": run_id,
        "workflow_name": "CI",
        "head_branch": "feature",
        "run_url": f"{API}/repos/acme/widgets/actions/runs/{run_id}",
        "run_attempt": 1,
        "node_id": f"CR_{job_id}",
        "head_sha": sha,
        "url": f"{API}/repos/acme/widgets/actions/jobs/{job_id}",
        "html_url": f"https://github.com/acme/widgets/actions/runs/{run_id}/job/{job_id}",
        "status": "completed",
        "conclusion": conclusion,
        "created_at": at(0),
        "started_at": at(0),
        "completed_at": at(100),
        "name": name,
        "steps": steps,
        "check_run_url": f"{API}/repos/acme/widgets/check-runs/{job_id}",
        "labels": ["ubuntu-latest"],
        "runner_id": 1,
        "runner_name": "GitHub Actions 1",
        "runner_group_id": 1,
        "runner_group_name": "GitHub Actions",
    }


class LogStorage:
    """The host job logs are downloaded from: a second loopback server, its links signed and short-lived."""

    def __init__(self) -> None:
        self.logs: dict[int, bytes | Callable[[], Iterable[bytes]]] = {}
        self.requests: list[dict[str, Any]] = []
        self.lifetime = 60.0
        storage = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                storage.serve(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def link(self, job_id: int) -> str:
        return f"{self.url}/actions-results/job-logs/{job_id}.txt?sig=c2lnbmVk&se={time.time() + self.lifetime:.0f}"

    def serve(self, handler: BaseHTTPRequestHandler) -> None:
        parsed = urlparse(handler.path)
        query = parse_qs(parsed.query)
        self.requests.append({"path": parsed.path, "headers": dict(handler.headers)})
        job_id = parsed.path.rsplit("/", 1)[-1].removesuffix(".txt")
        if "Authorization" in handler.headers:
            self._error(
                handler,
                400,
                "InvalidAuthenticationInfo",
                "Authentication information is not given in the correct format.",
            )
            return
        if query.get("sig") != ["c2lnbmVk"] or float(query.get("se", ["0"])[0]) < time.time():
            self._error(
                handler, 403, "AuthenticationFailed", "Signature not valid in the specified time frame"
            )
            return
        log = self.logs.get(int(job_id)) if job_id.isdigit() else None
        if log is None:
            self._error(handler, 404, "BlobNotFound", "The specified blob does not exist.")
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain; charset=utf-8")
        if isinstance(log, bytes):
            handler.send_header("Content-Length", str(len(log)))
        handler.end_headers()
        try:
            for chunk in [log] if isinstance(log, bytes) else log():
                handler.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the reader stopped at its cap

    def _error(self, handler: BaseHTTPRequestHandler, code: int, kind: str, message: str) -> None:
        body = f'<?xml version="1.0" encoding="utf-8"?><Error><Code>{kind}</Code><Message>{message}</Message></Error>'.encode()
        handler.send_response(code)
        handler.send_header("Content-Type", "application/xml")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def serve_actions(handler: Any, fake: Any, rest: str, query: dict[str, list[str]], path: str) -> bool:
    """Answer an Actions request of the fake's REST handler; False when ``rest`` is not one."""
    import re

    if rest == "/actions/runs":
        runs = fake.workflow_runs
        if "head_sha" in query:
            runs = [r for r in runs if r["head_sha"] == query["head_sha"][0]]
        chunk, headers = handler._page_of(runs, query, path)
        handler._send(200, {"total_count": len(runs), "workflow_runs": chunk}, headers)
    elif m := re.fullmatch(r"/actions/runs/(\d+)/jobs", rest):
        jobs = fake.jobs.get(int(m.group(1)))
        if jobs is None:
            handler._error(404, "Not Found")
            return True
        chunk, headers = handler._page_of(jobs, query, path)
        handler._send(200, {"total_count": len(jobs), "jobs": chunk}, headers)
    elif m := re.fullmatch(r"/actions/jobs/(\d+)(/logs)?", rest):
        job_id = int(m.group(1))
        found = next((j for jobs in fake.jobs.values() for j in jobs if j["id"] == job_id), None)
        if found is None:
            handler._error(404, "Not Found")
        elif not m.group(2):
            handler._send(200, found)
        elif job_id in fake.logs_gone:
            handler._error(410, "Gone")
        else:
            handler.send_response(302)
            handler.send_header("Location", fake.storage.link(job_id))
            handler.send_header("Content-Length", "0")
            handler.end_headers()
    else:
        return False
    return True
