"""``/board`` on ``dockyard-tasks --transport http``: the board view as a plain web page, for a person with a
browser and no assistant.

* ``GET /board`` — the same HTML as ``ui://tasks/board`` (one file, no data in it), with a Content Security
  Policy that allows exactly its own inline script and style and requests to this server;
* ``GET /board/data?project=KEY`` — the board as JSON (without ``project``: the projects to choose from);
* ``POST /board/status`` — ``{task_id, new_status, expected_version}``: a status change.

Who may do what: reading needs what the MCP endpoint needs (nothing on an open loopback server; a token it
accepts under ``--actors`` or ``--auth jwt``, with the read or write scope), so the page never shows what
the endpoint guards. Writing needs an actor's token always (a bearer token in ``Authorization``, never a
cookie, so another site cannot make a browser write): it goes through the store's own rules, as a tool call
does — ``expected_version`` required, the write toolset served, ``--max-writes-per-minute``, the history
recording the token's actor. The app's Host/Origin guard and ``--auth-token`` cover these paths as they
cover the MCP endpoint (dockyard_shared.http)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from dockyard_shared import InvalidArgument, LimitExceeded, Problem
from dockyard_shared.offload import run_in_thread
from dockyard_shared.operator_endpoints import bearer_of

from .board import PER_COLUMN, PER_COLUMN_MAX
from .rules import STATUSES, parse_project_key, parse_task_id

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from .store import TaskStore

__all__ = ["BoardPage", "content_security_policy"]

MAX_BODY = 4_096  # a status change is ~100 bytes
WRITE_TOOL = "update_task_status"
STATUS_CODES = {
    "invalid_argument": 400,
    "permission_denied": 403,
    "not_found": 404,
    "conflict": 409,
    "limit_exceeded": 429,
    "upstream_unavailable": 503,
}
NO_STORE = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _hashes(html: str, tag: str) -> str:
    blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", html, flags=re.DOTALL)
    return " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(block.encode()).digest()).decode() + "'"
        for block in blocks
    )


def content_security_policy(html: str) -> str:
    """Only the page's own inline script and style blocks (by hash), requests to this server, no frames."""
    return (
        f"default-src 'none'; script-src {_hashes(html, 'script')}; style-src {_hashes(html, 'style')}; "
        "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


@dataclass(frozen=True)
class Caller:
    actor: str | None  # None: no token (or one naming nobody): read-only
    scopes: tuple[str, ...] = ()


def _error(status: int, error: str, message: str, **headers: str) -> JSONResponse:
    return JSONResponse(
        {"error": error, "message": message}, status_code=status, headers={**NO_STORE, **headers}
    )


def _problem(problem: Problem) -> JSONResponse:
    category = problem.category.value
    headers = {}
    if isinstance(problem, LimitExceeded) and problem.retryable:
        found = re.search(r"retry_after_seconds=(\d+)", problem.next_step or "")
        if found:
            headers["Retry-After"] = found.group(1)
    return _error(STATUS_CODES.get(category, 500), category, problem.for_model(), **headers)


class BoardPage:
    def __init__(
        self,
        server: FastMCP,
        store: TaskStore,
        html: str,
        *,
        served: Collection[str],
        signed_in: bool,
        scopes: tuple[str, str],
        writes_per_minute: int,
    ) -> None:
        self.server = server
        self.store = store
        self.html = html
        self.csp = content_security_policy(html)
        self.writable = WRITE_TOOL in served
        self.signed_in = signed_in
        self.read_scope, self.write_scope = scopes
        self.writes_per_minute = writes_per_minute

    def add_routes(self) -> None:
        self.server.custom_route("/board", methods=["GET"])(self.page)
        self.server.custom_route("/board/data", methods=["GET"])(self.data)
        self.server.custom_route("/board/status", methods=["POST"])(self.status)

    async def caller(self, request: Request) -> Caller | JSONResponse:
        """Who the request acts as, or the 401 that says why it may not read."""
        token = bearer_of(request)
        verifier = self.server.auth
        if verifier is None:
            return Caller(None)  # an open endpoint: no actor tokens exist, anyone here may read
        access = await verifier.verify_token(token) if token else None
        if access is None:
            return _error(
                401,
                "invalid_token",
                "This tracker needs a token to be read: sign in with an actor's token (the one its "
                "--actors file or sign-in gives you).",
                **{"WWW-Authenticate": 'Bearer realm="dockyard", error="invalid_token"'},
            )
        scopes = tuple(access.scopes or ())
        if self.signed_in and self.read_scope not in scopes and self.write_scope not in scopes:
            return _error(403, "insufficient_scope", f"This sign-in lacks the scope {self.read_scope!r}.")
        return Caller(access.client_id or None, scopes)

    def may_write(self, caller: Caller) -> bool:
        if not self.writable or caller.actor is None:
            return False
        return not self.signed_in or self.write_scope in caller.scopes

    async def page(self, request: Request) -> Response:
        headers = {**NO_STORE, "Content-Security-Policy": self.csp, "X-Frame-Options": "DENY"}
        return HTMLResponse(self.html, headers=headers)

    async def data(self, request: Request) -> Response:
        caller = await self.caller(request)
        if isinstance(caller, JSONResponse):
            return caller
        can_write = self.may_write(caller)
        project = request.query_params.get("project", "")
        try:
            if not project:
                projects = await run_in_thread(lambda: self.store.list_projects())
                listed = [{"key": p.key, "name": p.name} for p in projects.projects]
                return JSONResponse({"projects": listed, "can_write": can_write}, headers=NO_STORE)
            key = parse_project_key(project[:20])
            per_column = _per_column(request.query_params.get("per_column", ""))
            board = await run_in_thread(lambda: self.store.board(key, per_column))
        except Problem as problem:
            return _problem(problem)
        body = {"board": board.model_dump(), "can_write": can_write, "actor": caller.actor}
        return JSONResponse(body, headers=NO_STORE)

    async def status(self, request: Request) -> Response:
        caller = await self.caller(request)
        if isinstance(caller, JSONResponse):
            return caller
        if caller.actor is None:
            return _error(
                401,
                "invalid_token",
                "/board is read-only without an actor's token: nothing was changed.",
                **{"WWW-Authenticate": 'Bearer realm="dockyard", error="invalid_token"'},
            )
        if not self.may_write(caller):
            why = (
                f"this server does not serve {WRITE_TOOL} (read-only, or its write toolset is off)"
                if not self.writable
                else f"this sign-in lacks the scope {self.write_scope!r}"
            )
            return _error(403, "permission_denied", f"Not changed: {why}.")
        try:
            task_id, new_status, expected = await _change_of(request)
            if self.writes_per_minute:
                await self._take_write_token(caller.actor)
            result = await run_in_thread(
                lambda: self.store.set_status(
                    task_id, new_status, actor=caller.actor, expected_version=expected
                )
            )
        except Problem as problem:
            return _problem(problem)
        return JSONResponse(result.model_dump(exclude_none=True), headers=NO_STORE)

    async def _take_write_token(self, actor: str) -> None:
        from .store.budget import take_write_token
        from .write_limits import refusal

        wait = await run_in_thread(
            lambda: take_write_token(
                self.store.engine, actor, self.writes_per_minute, timeout_s=self.store.statement_timeout_s
            )
        )
        if wait is not None:
            raise refusal(actor, self.writes_per_minute, wait)


def _per_column(value: str) -> int:
    if not value:
        return PER_COLUMN
    if not value.isdigit() or len(value) > 3 or not 1 <= int(value) <= PER_COLUMN_MAX:
        raise InvalidArgument(f"per_column must be a whole number from 1 to {PER_COLUMN_MAX}.")
    return int(value)


async def _change_of(request: Request) -> tuple[str, str, int]:
    """The body's (task_id, new_status, expected_version), each checked; InvalidArgument otherwise."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise InvalidArgument("Send the change as application/json.")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise InvalidArgument(f"The request body is over {MAX_BODY} bytes; a status change is ~100.")
    try:
        change: Any = json.loads(body)
    except ValueError:
        raise InvalidArgument("The request body is not JSON.") from None
    if not isinstance(change, dict):
        raise InvalidArgument("Send {task_id, new_status, expected_version}.")
    task_id, new_status, expected = (change.get(k) for k in ("task_id", "new_status", "expected_version"))
    parse_task_id(task_id)
    if new_status not in STATUSES:
        raise InvalidArgument(f"new_status must be one of {', '.join(STATUSES)}.")
    if not isinstance(expected, int) or isinstance(expected, bool) or expected < 1:
        raise InvalidArgument(
            "expected_version (the version the board showed, a whole number ≥ 1) is required: "
            "without it a change made meanwhile would be overwritten unseen."
        )
    return task_id, new_status, expected
