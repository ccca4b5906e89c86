"""Resource subscriptions in both protocol eras, fed by the change feed (``notify.py``).

FastMCP 4.1 serves neither ``resources/subscribe`` nor ``subscriptions/listen``; the MCP SDK's low-level
server has both seams, so they are registered on it here:

* 2025-11-25: ``resources/subscribe`` / ``resources/unsubscribe`` record (session, URI); a change sends
  ``notifications/resources/updated`` to each subscribed session, and ``notifications/resources/
  list_changed`` when a project comes into existence (to every session that subscribed to anything);
* 2026-07-28: ``subscriptions/listen`` streams, served by the SDK's ``ListenHandler`` over an in-process
  bus; a change publishes ``ResourceUpdated`` for the URIs some open stream asked for, and
  ``ResourcesListChanged``.

Changes arrive on any thread (a worker thread after a commit, the PostgreSQL listener thread); they are
handed to the event loop the first subscription was made on.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import Counter
from typing import Any

import mcp.types as mt
from fastmcp import FastMCP
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ResourcesListChanged,
    ResourceUpdated,
)
from mcp.shared.exceptions import MCPError

from dockyard_shared.fastmcp_compat import lowlevel_server
from dockyard_shared.fastmcp_compat import session_connection as _connection

from .notify import SUMMARY_URI, ChangeFeed, ResourceChange

__all__ = ["Subscriptions"]

log = logging.getLogger(__name__)

MAX_PER_SESSION = 1_000  # subscriptions one session may hold
_SCHEMES = ("project://", "task://")


def _check_uri(uri: str) -> str:
    if not uri.startswith(_SCHEMES) or len(uri) > 200:
        raise MCPError(
            mt.INVALID_PARAMS,
            f"This server's resources are {SUMMARY_URI}, project://KEY and task://ID; cannot subscribe to {uri[:80]!r}.",
        )
    return uri


class Subscriptions:
    def __init__(self, server: FastMCP, feed: ChangeFeed) -> None:
        self.feed = feed
        self.loop: asyncio.AbstractEventLoop | None = None
        # 2025-11-25: the URIs each live connection subscribed to (forgotten with the connection).
        self.sessions: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
        # 2026-07-28: listen streams, and how many open streams asked for each URI.
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        self.wanted: Counter[str] = Counter()
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

    async def on_subscribe(self, ctx: Any, params: mt.SubscribeRequestParams) -> mt.EmptyResult:
        uri = _check_uri(str(params.uri))
        self._attach()
        uris = self.sessions.setdefault(_connection(ctx), set())
        if len(uris) >= MAX_PER_SESSION and uri not in uris:
            raise MCPError(mt.INVALID_PARAMS, f"At most {MAX_PER_SESSION} subscriptions per session.")
        uris.add(uri)
        return mt.EmptyResult()

    async def on_unsubscribe(self, ctx: Any, params: mt.UnsubscribeRequestParams) -> mt.EmptyResult:
        self.sessions.get(_connection(ctx), set()).discard(str(params.uri))
        return mt.EmptyResult()

    async def on_listen(self, ctx: Any, params: mt.SubscriptionsListenRequestParams) -> Any:
        uris = [_check_uri(str(u)) for u in (params.notifications.resource_subscriptions or [])]
        self._attach()
        self.wanted.update(uris)
        try:
            return await self.listen(ctx, params)
        finally:
            self.wanted.subtract(uris)
            self.wanted += Counter()  # drop the zeros

    # -- delivery --------------------------------------------------------------------------------

    def _changed(self, change: ResourceChange) -> None:
        """Any thread: hand the change to the event loop."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(lambda: loop.create_task(self.deliver(change)))

    async def deliver(self, change: ResourceChange) -> None:
        for session, uris in list(self.sessions.items()):
            try:
                for uri in sorted(uris):
                    if change.touches(uri):
                        await session.send_resource_updated(uri)
                if change.list_changed and uris:
                    await session.send_resource_list_changed()
            except Exception as error:  # the connection went away: forget the session
                log.debug("dropping a subscriber session: %s", error)
                self.sessions.pop(session, None)
        for uri in [u for u in self.wanted if change.touches(u)]:
            await self.bus.publish(ResourceUpdated(uri=uri))
        if change.list_changed:
            await self.bus.publish(ResourcesListChanged())
