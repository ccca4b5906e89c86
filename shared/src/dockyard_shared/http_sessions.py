"""Who may hold how many Streamable HTTP sessions (the 2025-11-25 era), and for how long.

The SDK keeps a session until it has been idle for ``session_idle_timeout`` and admits up to 10,000 of
them per server, from anyone: one client that only ever POSTs ``initialize`` fills that in seconds
and locks every other 2025-11-25 client out for the whole idle timeout. :class:`SessionGuard` sits in
front of one server's MCP endpoint (inside the Host/Origin and bearer-token checks) and:

* closes a session that sent no request after its ``initialize`` (not even ``notifications/initialized``)
  within ``init_timeout`` seconds; every client that means to use its session sends one at once;
* lets one client hold at most ``per_client`` sessions. At that cap a new ``initialize`` pushes out the
  oldest of that client's sessions that were never used; if all are in use it is refused with HTTP 429
  and a JSON-RPC error saying why and what to do. A client is its address as :func:`client_key` counts
  it: every loopback address (127.0.0.0/8, ::1, IPv4-mapped) is one client, since any local process may
  use them all; an IPv6 address counts by its /64, the block one host is usually given;
* forgets a session when its client deletes it, when the SDK answers 404 for it, or when it has been
  idle for ``idle_timeout`` (the SDK's own idle timeout, the same value, stays as the backstop).

A session is closed the way a client closes it: a DELETE with its ``Mcp-Session-Id``, sent straight to
the inner app. The 2026-07-28 era has no sessions and passes through untouched.
"""

from __future__ import annotations

import ipaddress
import logging
from collections import Counter
from dataclasses import dataclass

import anyio
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .http_connections import Throttle

__all__ = ["SessionGuard", "client_key"]

log = logging.getLogger("dockyard.http")

SESSION_HEADER = b"mcp-session-id"
_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode()
REFUSAL_LOG_INTERVAL = 60.0


@dataclass
class _Session:
    client: str
    idle_since: float
    in_flight: int = 1  # its initialize is still being answered
    used: bool = False


LOOPBACK = "this machine (any loopback address)"


def client_key(host: str | None) -> str:
    """Whose sessions these are, for the per-client cap: the peer's address, except that every loopback
    address is the same client (a local process can bind 127.0.0.2, 127.0.0.3… at will) and an IPv6
    address counts by its /64 (a host is commonly given a whole /64)."""
    if not host:
        return "unknown"
    try:
        address = ipaddress.ip_address(host.partition("%")[0])  # without a zone index (fe80::1%eth0)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback:
        return LOOPBACK
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def _route_path(scope: Scope) -> str:
    """The path below the mount point (``/mcp`` for ``/sqlite/mcp`` under ``Mount("/sqlite")``)."""
    path, root = scope["path"], scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def _header(scope: Scope, name: bytes) -> str | None:
    return next((v.decode("latin-1") for k, v in scope.get("headers") or () if k.lower() == name), None)


class SessionGuard:
    """ASGI middleware around one FastMCP app whose MCP endpoint is ``endpoint``."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        endpoint: str,
        init_timeout: float,
        idle_timeout: float,
        per_client: int,
    ) -> None:
        self.app = app
        self.endpoint = endpoint
        self.init_timeout = init_timeout
        self.idle_timeout = idle_timeout
        self.per_client = per_client
        self._sessions: dict[str, _Session] = {}  # insertion order: oldest first
        self._per_client: Counter[str] = Counter()  # sessions held plus sessions being opened
        self._refusals = Throttle(REFUSAL_LOG_INTERVAL)

    @property
    def open_sessions(self) -> int:
        """Sessions open now (``/metrics``)."""
        return len(self._sessions)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _route_path(scope) != self.endpoint:
            await self.app(scope, receive, send)
            return
        era = _header(scope, _VERSION_HEADER)
        if era is not None and era not in HANDSHAKE_PROTOCOL_VERSIONS:
            await self.app(scope, receive, send)  # 2026-07-28: no sessions
            return
        session_id = _header(scope, SESSION_HEADER)
        if session_id is None:
            await self._open(scope, receive, send)
        elif (session := self._sessions.get(session_id)) is not None:
            await self._serve(session_id, session, scope, receive, send)
        else:
            await self._unknown(scope, receive, send)

    async def run(self) -> None:
        """Close sessions past their deadline, until cancelled (run it in the app's lifespan)."""
        tick = min(1.0, max(0.05, min(self.init_timeout, self.idle_timeout) / 4))
        while True:
            await anyio.sleep(tick)
            now = anyio.current_time()
            for session_id, session in list(self._sessions.items()):
                if session.in_flight or self._sessions.get(session_id) is not session:
                    continue  # busy, or ended while an earlier one was being closed
                if not session.used and now - session.idle_since >= self.init_timeout:
                    await self._close(
                        session_id, f"no request followed its initialize within {self.init_timeout:g} s"
                    )
                elif now - session.idle_since >= self.idle_timeout:
                    await self._close(session_id, f"idle for {self.idle_timeout:g} s")

    async def _open(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = client_key(scope["client"][0] if scope.get("client") else None)
        if self._per_client[client] >= self.per_client:
            unused = next(
                (
                    sid
                    for sid, s in self._sessions.items()
                    if s.client == client and not s.used and not s.in_flight
                ),
                None,
            )
            if unused is None:
                await self._refuse(client, scope, receive, send)
                return
            await self._close(unused, "pushed out, never used, by a newer session from the same client")
        self._per_client[client] += 1
        opened: str | None = None

        async def watch(message: Message) -> None:
            nonlocal opened
            if message["type"] == "http.response.start" and message["status"] < 400:
                session_id = next(
                    (v.decode() for k, v in message.get("headers", ()) if k == SESSION_HEADER), None
                )
                if session_id is not None:
                    opened = session_id
                    self._sessions[session_id] = _Session(client, idle_since=anyio.current_time())
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if opened is None:
                self._release_slot(client)  # the SDK refused or failed it: nothing was opened
            elif (session := self._sessions.get(opened)) is not None:
                session.in_flight -= 1
                session.idle_since = anyio.current_time()

    async def _serve(
        self, session_id: str, session: _Session, scope: Scope, receive: Receive, send: Send
    ) -> None:
        session.used = True
        session.in_flight += 1
        status: int | None = None

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            session.in_flight -= 1
            session.idle_since = anyio.current_time()
            if status == 404 or (scope["method"] == "DELETE" and status is not None and status < 300):
                self._forget(session_id)

    def _forget(self, session_id: str) -> None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            self._release_slot(session.client)

    def _release_slot(self, client: str) -> None:
        self._per_client[client] -= 1
        if not self._per_client[client]:
            del self._per_client[client]

    async def _close(self, session_id: str, why: str) -> None:
        """Forget the session now (its slot is free at once) and end it in the SDK as a client would."""
        self._forget(session_id)
        log.info("closed HTTP session %s…: %s", session_id[:8], why)
        scope: Scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": "DELETE",
            "scheme": "http",
            "server": None,
            "client": None,
            "root_path": "",
            "path": self.endpoint,
            "raw_path": self.endpoint.encode(),
            "query_string": b"",
            "headers": [(SESSION_HEADER, session_id.encode()), (_VERSION_HEADER, b"2025-11-25")],
            "state": {},
        }
        messages = [{"type": "http.request", "body": b"", "more_body": False}]

        async def receive() -> Message:
            return messages.pop() if messages else {"type": "http.disconnect"}

        async def discard(message: Message) -> None:
            pass

        with anyio.CancelScope(shield=True):
            try:
                await self.app(scope, receive, discard)
            except Exception:  # the reaper must outlive one session's failure to end
                log.exception("ending HTTP session %s… failed", session_id[:8])

    async def _unknown(self, scope: Scope, receive: Receive, send: Send) -> None:
        """404 for a session this process does not hold, as the SDK answers it (which the client takes as
        its cue to initialize again), in words that say why: behind a load balancer, the usual cause is
        that the replica holding it stopped."""
        message = (
            "Session not found: no session with this Mcp-Session-Id is open on this server. It was closed "
            "(by its client, or idle too long), or it lived in another server process (a replica behind "
            "a load balancer) that has stopped: a 2025-11-25 session lives in one process and ends with "
            "it. Start a new session: initialize again without Mcp-Session-Id."
        )
        body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
        await JSONResponse(body, status_code=404)(scope, receive, send)

    async def _refuse(self, client: str, scope: Scope, receive: Receive, send: Send) -> None:
        if self._refusals.ready():
            log.warning(
                "refusing new HTTP sessions from %s: it holds %d in use (--max-sessions-per-client); "
                "reported at most every %d s",
                client,
                self.per_client,
                REFUSAL_LOG_INTERVAL,
            )
        message = (
            f"Too many open sessions from {client}: {self.per_client} sessions in use, the most one client "
            f"may hold on this server (--max-sessions-per-client; every loopback address counts as one "
            f"client, an IPv6 address by its /64). Close one you no longer need "
            f"(HTTP DELETE with its Mcp-Session-Id) or wait until one has been idle for "
            f"{self.idle_timeout:g} s, then initialize again."
        )
        body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}
        await JSONResponse(body, status_code=429)(scope, receive, send)
