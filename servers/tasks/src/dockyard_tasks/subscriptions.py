"""Resource subscriptions in both protocol eras, fed by the change feed (``notify.py``), within bounds.

FastMCP 4.1 serves neither ``resources/subscribe`` nor ``subscriptions/listen``; the MCP SDK's low-level
server has both seams, so they are registered on it here:

* 2025-11-25: ``resources/subscribe`` / ``resources/unsubscribe`` record (session, URI); a change sends
  ``notifications/resources/updated`` to each subscribed session, and ``notifications/resources/
  list_changed`` when a project comes into existence (to every session that subscribed to anything);
* 2026-07-28: ``subscriptions/listen`` streams (the request's response is the stream): the stream is
  acknowledged, then carries ``ResourceUpdated`` for the URIs it asked for and ``ResourcesListChanged``
  if it asked for that, until the client hangs up.

Bounds (:class:`~dockyard_tasks.settings.SubscriptionLimits`, each refusal naming its flag): URIs per
stream or per session, open streams per client address and in all, and watched URIs in all. A change
is matched through :class:`~dockyard_tasks.interest.Interest` (URI → subscribers), so its cost on the
event loop is that of the subscribers it concerns. A stream whose client stops reading is ended once
its backlog is full (the client listens again and re-reads).

Changes arrive on any thread (a worker thread after a commit, the PostgreSQL listener thread); they are
handed to the event loop the first subscription was made on.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import Counter
from typing import Any

import anyio
import mcp.types as mt
from fastmcp import FastMCP
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import (
    SUBSCRIPTION_ID_META_KEY,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    event_to_notification,
)

from dockyard_shared.fastmcp_compat import lowlevel_server
from dockyard_shared.fastmcp_compat import session_connection as _connection
from dockyard_shared.http_sessions import client_key

from .interest import Interest
from .notify import SUMMARY_URI, ChangeFeed, ResourceChange
from .settings import SubscriptionLimits

__all__ = ["Subscriptions"]

log = logging.getLogger(__name__)

_SCHEMES = ("project://", "task://")
LIMIT_REACHED = -32000  # JSON-RPC's server-error range: the request was fine, the server is full
_BACKLOG_SPARE = 64  # events a stream may queue beyond one update per URI it watches


def _client_of(ctx: Any) -> str:
    """Who opened a listen stream, counted as --max-sessions-per-client counts (every loopback address is
    one client); over stdio or in memory, the one client."""
    client = getattr(getattr(ctx, "request", None), "client", None)
    host = getattr(client, "host", None)
    return client_key(host) if host else "local"


def _check_uri(uri: str) -> str:
    if not uri.startswith(_SCHEMES) or len(uri) > 200:
        raise MCPError(
            mt.INVALID_PARAMS,
            f"This server's resources are {SUMMARY_URI}, project://KEY and task://ID; cannot subscribe to {uri[:80]!r}.",
        )
    return uri


class _Stream:
    """One open ``subscriptions/listen`` stream."""

    __slots__ = ("client", "list_changed", "send")

    def __init__(self, client: str, list_changed: bool, send: Any) -> None:
        self.client = client
        self.list_changed = list_changed
        self.send = send


class _Session:
    """The subscriptions of one 2025-11-25 connection; forgotten when the connection is."""

    __slots__ = ("__weakref__", "connection")
    connection: weakref.ref[Any]  # set right after, with a callback that needs this object


class Subscriptions:
    def __init__(self, server: FastMCP, feed: ChangeFeed, limits: SubscriptionLimits | None = None) -> None:
        self.feed = feed
        self.limits = limits or SubscriptionLimits()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.interest: Interest[_Stream | _Session] = Interest()
        self.sessions: weakref.WeakKeyDictionary[Any, _Session] = weakref.WeakKeyDictionary()
        self.streams: set[_Stream] = set()
        self.streams_of: Counter[str] = Counter()
        self._unsubscribe_feed = None
        lowlevel = lowlevel_server(server)
        lowlevel.add_request_handler("resources/subscribe", mt.SubscribeRequestParams, self.on_subscribe)
        lowlevel.add_request_handler(
            "resources/unsubscribe", mt.UnsubscribeRequestParams, self.on_unsubscribe
        )
        lowlevel.add_request_handler(
            "subscriptions/listen", mt.SubscriptionsListenRequestParams, self.on_listen
        )

    def _attach(self) -> None:
        """Start hearing changes, on the first subscription (and from other replicas, on PostgreSQL)."""
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
            self._unsubscribe_feed = self.feed.subscribe(self._changed)
            self.feed.start()

    async def close(self) -> None:
        """The server stopped (its lifespan ended): stop hearing changes, so the LISTEN thread does not
        outlive the server (reconnecting to a database that may be gone). The next subscription, if the
        server starts again, attaches afresh."""
        if self._unsubscribe_feed is not None:
            self._unsubscribe_feed()
            self._unsubscribe_feed = None
        self.loop = None
        await asyncio.to_thread(self.feed.stop)

    def _check_room(self, adding: int) -> None:
        if self.interest.count + adding > self.limits.uris:
            raise MCPError(
                LIMIT_REACHED,
                f"This server already holds {self.interest.count:,} resource subscriptions, its limit is "
                f"{self.limits.uris:,} (--max-subscribed-uris). Retry later, or subscribe to fewer "
                f"resources: project://KEY is updated whenever any of its tasks changes.",
            )

    # -- 2025-11-25 ------------------------------------------------------------------------------

    async def on_subscribe(self, ctx: Any, params: mt.SubscribeRequestParams) -> mt.EmptyResult:
        uri = _check_uri(str(params.uri))
        self._attach()
        connection = _connection(ctx)
        session = self.sessions.get(connection)
        if session is None:
            session = self.sessions[connection] = _Session()
            session.connection = weakref.ref(connection, self._gone(session))
        if self.interest.watches(session, uri):
            return mt.EmptyResult()
        cap = self.limits.uris_per_subscriber
        if self.interest.size_of(session) >= cap:
            raise MCPError(
                mt.INVALID_PARAMS,
                f"This session already subscribes to {cap:,} resources, the most one session may "
                f"(--max-subscription-uris). Unsubscribe from some first, or subscribe to project://KEY, "
                f"which is updated whenever any of its tasks changes.",
            )
        self._check_room(1)
        self.interest.add(session, (uri,))
        return mt.EmptyResult()

    async def on_unsubscribe(self, ctx: Any, params: mt.UnsubscribeRequestParams) -> mt.EmptyResult:
        session = self.sessions.get(_connection(ctx))
        if session is not None:
            self.interest.discard(session, (str(params.uri),))
        return mt.EmptyResult()

    def _gone(self, session: _Session) -> Any:
        """The weakref callback for a session's connection: forget its subscriptions, on the loop
        (garbage collection may run on any thread, and in the middle of a delivery)."""
        ref = weakref.ref(session)

        def collected(_: Any) -> None:
            loop = self.loop
            if loop is not None and not loop.is_closed() and (entry := ref()) is not None:
                loop.call_soon_threadsafe(self.interest.remove, entry)

        return collected

    # -- 2026-07-28 ------------------------------------------------------------------------------

    async def on_listen(self, ctx: Any, params: mt.SubscriptionsListenRequestParams) -> Any:
        subscription_id = ctx.request_id
        if subscription_id is None:
            raise MCPError(mt.INVALID_REQUEST, "subscriptions/listen requires a request id")
        wanted = params.notifications
        requested = wanted.resource_subscriptions or []
        cap = self.limits.uris_per_subscriber
        if len(requested) > cap:  # refused before any per-URI work
            raise MCPError(
                mt.INVALID_PARAMS,
                f"subscriptions/listen names {len(requested):,} resources; one stream may subscribe to at "
                f"most {cap:,} (--max-subscription-uris). Subscribe to project://KEY (updated whenever "
                f"any of its tasks changes) or {SUMMARY_URI} instead of every task.",
            )
        uris = sorted({_check_uri(str(u)) for u in requested})
        client = _client_of(ctx)
        if self.streams_of[client] >= self.limits.streams_per_client:
            raise MCPError(
                LIMIT_REACHED,
                f"{client} already holds {self.streams_of[client]} subscriptions/listen streams, the most "
                f"one client may (--max-listen-streams-per-client). Close one (or put its URIs in one "
                f"stream) and listen again.",
            )
        if len(self.streams) >= self.limits.streams:
            raise MCPError(
                LIMIT_REACHED,
                f"This server holds {len(self.streams)} subscriptions/listen streams, its limit "
                f"(--max-listen-streams). Retry later; meanwhile changes_since tells what changed.",
            )
        self._check_room(len(uris))
        self._attach()
        send, receive = anyio.create_memory_object_stream[ServerEvent](len(uris) + _BACKLOG_SPARE)
        stream = _Stream(client, bool(wanted.resources_list_changed), send)
        self.streams.add(stream)
        self.streams_of[client] += 1
        self.interest.add(stream, uris)
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
        honored = mt.SubscriptionFilter(
            tools_list_changed=True if wanted.tools_list_changed else None,
            prompts_list_changed=True if wanted.prompts_list_changed else None,
            resources_list_changed=True if wanted.resources_list_changed else None,
            resource_subscriptions=uris or None,
        )
        try:
            # The acknowledgement is the stream's first frame; events published meanwhile wait in it.
            await ctx.session.send_notification(
                mt.SubscriptionsAcknowledgedNotification(
                    params=mt.SubscriptionsAcknowledgedNotificationParams(notifications=honored, _meta=meta)
                ),
                related_request_id=subscription_id,
            )
            async with receive:
                async for event in receive:
                    await ctx.session.send_notification(
                        event_to_notification(event, meta), related_request_id=subscription_id
                    )
        finally:
            self._end(stream)
        return mt.SubscriptionsListenResult(_meta=meta)

    def _end(self, stream: _Stream) -> None:
        if stream in self.streams:
            self.streams.discard(stream)
            self.streams_of[stream.client] -= 1
            if not self.streams_of[stream.client]:
                del self.streams_of[stream.client]
            self.interest.remove(stream)
        stream.send.close()

    def _push(self, stream: _Stream, event: ServerEvent) -> None:
        try:
            stream.send.send_nowait(event)
        except anyio.ClosedResourceError:
            pass
        except anyio.WouldBlock:
            log.warning("a subscriptions/listen stream's client stopped reading; ending the stream")
            self._end(stream)  # frees its slot now: its handler may be stuck writing to the client

    # -- delivery --------------------------------------------------------------------------------

    def _changed(self, change: ResourceChange) -> None:
        """Any thread: hand the change to the event loop."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(lambda: loop.create_task(self.deliver(change)))

    async def deliver(self, change: ResourceChange) -> None:
        matched = self.interest.matching(change)
        for subscriber, uris in matched.items():
            if isinstance(subscriber, _Stream):
                for uri in uris:
                    self._push(subscriber, ResourceUpdated(uri=uri))
        if change.list_changed:
            for stream in [s for s in self.streams if s.list_changed]:
                self._push(stream, ResourcesListChanged())
        sessions = [s for s in matched if isinstance(s, _Session)]
        if change.list_changed:  # to every session that subscribes to anything
            sessions = [s for s in self.interest if isinstance(s, _Session) and self.interest.size_of(s)]
        for session in sessions:
            connection = session.connection()
            if connection is None:
                self.interest.remove(session)
                continue
            try:
                for uri in matched.get(session, ()):
                    await connection.send_resource_updated(uri)
                if change.list_changed:
                    await connection.send_resource_list_changed()
            except Exception as error:  # the connection went away: forget the session
                log.debug("dropping a subscriber session: %s", error)
                self.interest.remove(session)
                self.sessions.pop(connection, None)
