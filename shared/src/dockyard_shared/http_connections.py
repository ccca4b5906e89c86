"""Bounds on the HTTP connections a server holds, enforced before any request reaches the app (and so
before the bearer token is checked).

uvicorn's h11 protocol waits for a request head without any time limit (its keep-alive timer runs only
after a first response), and it counts connections without capping them: ``limit_concurrency`` answers
503 to *new* requests, so a pile of half-open sockets would lock healthy clients out instead of the
other way round. Once a process runs out of file descriptors, asyncio's accept loop logs a traceback
every second and no new client gets in, ``/health`` included. So:

* a connection that is not being served (no request yet, part of a head, or the rest of a request the
  app answered early, such as a 401 before its body) must finish its request head within
  ``header_timeout`` seconds or is closed;
* once a request head is complete (and has passed the token check, or there is no token), its body
  must arrive within ``body_timeout`` seconds of it, however it trickles in, or the connection is
  answered 408 (if no response has started) and closed;
* at most ``limit`` connections are open; one more closes the oldest connection that is not being
  served or whose client still owes part of its request (head or body) before any response began,
  then the oldest idle keep-alive one, so the newest client gets in; only when every connection is
  serving a request it has received is the new one closed instead;
* long-lived event streams (a 2026-07-28 ``subscriptions/listen`` POST, a 2025-11-25 ``GET`` event
  stream) hold at most half of ``limit`` between them: one more is answered 429 and closed, so
  streams cannot take every connection and lock other clients' requests out;
* the file-descriptor soft limit is raised to the hard limit at start, and ``limit`` stays a tenth
  below it, so connections cannot starve the server's own files and pipes;
* reaching the limit, or running out of descriptors anyway, is logged in one line, at most once per
  :data:`WARN_INTERVAL` seconds, never as a traceback per connection.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

from .fastmcp_compat import guarded_h11_base

__all__ = [
    "ConnectionGuard",
    "Throttle",
    "guarded_protocol",
    "quiet_accept_errors",
    "raise_open_files_limit",
]

log = logging.getLogger("dockyard.http")

WARN_INTERVAL = 300.0
ACCEPT_OUT_OF_RESOURCES = "socket.accept() out of system resource"  # asyncio's message for EMFILE


class Throttle:
    """Says yes at most once per ``interval`` seconds: one log line for a burst of the same event."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._next = 0.0

    def ready(self) -> bool:
        now = time.monotonic()
        if now < self._next:
            return False
        self._next = now + self.interval
        return True


def raise_open_files_limit() -> int | None:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard limit; returns the soft limit now in force (None:
    unlimited or unknown). Many systems start processes at 1,024 while allowing far more."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return None if soft == resource.RLIM_INFINITY else soft


class ConnectionGuard:
    """The open connections of one uvicorn server, oldest first, and the bounds on them."""

    def __init__(
        self,
        *,
        header_timeout: float,
        body_timeout: float,
        max_connections: int,
        open_files: int | None,
    ) -> None:
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.max_connections = max_connections
        self.open_files = open_files
        self.limit = max_connections
        if open_files is not None:
            # A tenth of the descriptors (at least 64) stays for the server's files, pipes and children.
            self.limit = max(1, min(max_connections, open_files - max(64, open_files // 10)))
        self._open: dict[GuardedH11Protocol, None] = {}  # insertion order: oldest first
        self._warning = Throttle(WARN_INTERVAL)
        self.stream_limit = max(1, self.limit // 2)
        self._streams: set[GuardedH11Protocol] = set()  # serving a long-lived event stream

    @property
    def open_streams(self) -> int:
        """Long-lived event streams being served now (``/metrics``)."""
        return len(self._streams)

    def describe(self) -> str:
        files = f", file-descriptor limit {self.open_files}" if self.open_files is not None else ""
        return f"{self.limit} (--max-connections {self.max_connections}{files})"

    def admit(self, protocol: GuardedH11Protocol) -> None:
        self._open[protocol] = None
        if len(self._open) <= self.limit:
            return
        self._warn(
            f"HTTP connections reached the connection limit {self.describe()}: closing the oldest that "
            f"are not being served"
        )
        victim = self._oldest_not_served() or protocol
        self.release(victim)  # now: its connection_lost comes a loop iteration later
        victim.close()

    def release(self, protocol: GuardedH11Protocol) -> None:
        self._open.pop(protocol, None)
        self._streams.discard(protocol)

    def admit_stream(self, protocol: GuardedH11Protocol) -> bool:
        """May ``protocol`` serve the long-lived event stream it was just asked for?"""
        if len(self._streams) >= self.stream_limit:
            self._warn(
                f"HTTP event streams reached their share of the connection limit, {self.stream_limit} "
                f"(half of {self.describe()}): refusing new ones with 429"
            )
            return False
        self._streams.add(protocol)
        return True

    def stream_ended(self, protocol: GuardedH11Protocol) -> None:
        self._streams.discard(protocol)

    def out_of_file_descriptors(self) -> None:
        # Typically a burst: asyncio accepts many sockets before any reaches admit(), which then
        # brings the count back to the limit; accepting resumes a second later.
        self._warn(
            f"HTTP ran out of file descriptors accepting connections, below the connection limit "
            f"{self.describe()}: accepting again in 1 s"
        )

    def _oldest_not_served(self) -> GuardedH11Protocol | None:
        idle = None
        for protocol in self._open:
            if protocol.waiting_for_client() or protocol.owes_body():
                return protocol
            if idle is None and not protocol.serving():
                idle = protocol
        return idle

    def _warn(self, what: str) -> None:
        if self._warning.ready():
            log.warning("%s (%d open; reported at most every %d s)", what, len(self._open), WARN_INTERVAL)


class GuardedH11Protocol(guarded_h11_base()):  # type: ignore[misc]
    """uvicorn's h11 protocol with request-head and request-body deadlines, under a
    :class:`ConnectionGuard`. What it reads of uvicorn's protocol is in
    :func:`dockyard_shared.fastmcp_compat.guarded_h11_base`."""

    guard: ConnectionGuard  # set on the subclass guarded_protocol() makes
    _head_deadline: asyncio.TimerHandle | None = None
    _body_deadline: asyncio.TimerHandle | None = None
    _body_request: object = None  # the request the body deadline is for (pipelining starts others)
    _stream_request: object = None  # the last request checked against the stream share

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_head_clock()
        self.guard.admit(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_clock()
        self._stop_body_clock()
        self.guard.release(self)
        super().connection_lost(exc)

    def owes_body(self) -> bool:
        """Receiving a body before any response started: the client, not the app, holds it up."""
        return self.receiving_body() and not self.response_started()

    def before_response_complete(self) -> None:
        self.guard.stream_ended(self)

    def after_event(self) -> None:
        """Data arrived or a response completed: count a new event stream against the stream share,
        then set the deadlines for what the connection waits on. (An idle keep-alive connection has
        none: uvicorn's keep-alive timeout closes it.)"""
        self._check_stream()
        if self.receiving_body():
            self._stop_head_clock()
            if self._body_request is not self.current_request():
                self._stop_body_clock()
                self._body_request = self.current_request()
                self._body_deadline = self.call_later(self.guard.body_timeout, self._body_timed_out)
            return
        self._stop_body_clock()
        if self.waiting_for_client():
            self._start_head_clock()
        else:
            self._stop_head_clock()

    def _check_stream(self) -> None:
        """Count a new request that opens a long-lived event stream against the guard's stream share,
        or refuse it. Runs before the app task the request started has run, so the app only reads a
        disconnect."""
        request = self.current_request()
        if request is None or request is self._stream_request or self.response_started():
            return
        self._stream_request = request
        if not _opens_stream(self.request_scope()) or self.guard.admit_stream(self):
            return
        message = (
            f"Too many event streams are open on this server ({self.guard.stream_limit}: "
            f"subscriptions/listen and GET streams may hold half of its connections). Close a stream you "
            f"no longer need, or retry later; meanwhile ordinary requests are served."
        )
        # A JSON-RPC error body: MCP clients show its message (the request's id is not read yet).
        error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}
        self.answer_and_close(429, json.dumps(error).encode(), content_type=b"application/json")

    def _stop_body_clock(self) -> None:
        if self._body_deadline is not None:
            self._body_deadline.cancel()
            self._body_deadline = None

    def _body_timed_out(self) -> None:
        self._body_deadline = None
        if self.closing() or not self.receiving_body():
            return
        log.debug("closing %s: request body not complete within %g s", self.peer(), self.guard.body_timeout)
        if self.response_started():
            self.close()  # the app reads a disconnect
        else:
            self.answer_and_close(408, b"The request body did not arrive in time.")

    def _start_head_clock(self) -> None:
        if self._head_deadline is None and not self.closing():
            self._head_deadline = self.call_later(self.guard.header_timeout, self._head_timed_out)

    def _stop_head_clock(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_timed_out(self) -> None:
        self._head_deadline = None
        if self.waiting_for_client() and not self.closing():
            log.debug(
                "closing %s: no complete request head within %g s", self.peer(), self.guard.header_timeout
            )
            self.close()


def guarded_protocol(guard: ConnectionGuard) -> type[GuardedH11Protocol]:
    """The protocol class to hand uvicorn (``Config(http=...)``) for connections under ``guard``."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"guard": guard})


def quiet_accept_errors(loop: asyncio.AbstractEventLoop, guard: ConnectionGuard) -> None:
    """Report asyncio's "out of file descriptors" accept failures through ``guard`` (one throttled
    line) instead of a traceback a second; anything else goes to the handler that was there."""
    previous = loop.get_exception_handler()

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") == ACCEPT_OUT_OF_RESOURCES:
            guard.out_of_file_descriptors()
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handle)


def _opens_stream(scope: dict[str, Any]) -> bool:
    """A request whose response is a long-lived event stream: a 2026-07-28 ``subscriptions/listen``
    (its ``Mcp-Method`` header must match the body, the SDK checks) or a ``GET`` asking for
    ``text/event-stream`` (a 2025-11-25 session's stream). uvicorn lowercases header names."""
    headers = scope.get("headers") or ()
    if scope.get("method") == "POST":
        return any(k == b"mcp-method" and v.strip() == b"subscriptions/listen" for k, v in headers)
    return scope.get("method") == "GET" and any(
        k == b"accept" and b"text/event-stream" in v.lower() for k, v in headers
    )
