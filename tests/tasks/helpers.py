"""Helpers the tasks tests import: where the test databases live and how to make a store on one."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import anyio
import mcp.types as mt
from mcp import ClientSession
from mcp.client.subscriptions import ResourcesListChanged, ResourceUpdated, listen
from mcp.shared.exceptions import MCPDeprecationWarning

from dockyard_tasks.store import StoreLimits, TaskStore
from tests.harness import LEGACY, Launch, Session

BACKENDS = ("sqlite", "postgresql")


class Clock:
    """A settable clock, so dates such as 'overdue' do not depend on the day the tests run."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def make_store(url: str, **limits) -> TaskStore:
    return TaskStore(url, limits=StoreLimits(**limits) if limits else None)


# -- servers and sessions --------------------------------------------------------------------------------


def make_server(url: str, *, actor: str = "ann", demo: bool = False, **exposure):
    """The server with every toolset on unless ``toolsets`` is given (the manage toolset is off by default;
    test_tools.py checks the default set by name)."""
    from dockyard_shared.toolsets import Exposure
    from dockyard_tasks.server import create_server
    from dockyard_tasks.settings import Settings

    exposure.setdefault("toolsets", ("all",))
    return create_server(Settings(database_url=url, actor=actor, demo=demo, exposure=Exposure(**exposure)))


def tasks_launch(url: str, *args: str, data_dir=None) -> Launch:
    """The console script on ``url``, every toolset on unless ``args`` choose them."""
    env = {"XDG_DATA_HOME": str(data_dir)} if data_dir else {}
    every = () if "--toolsets" in args else ("--toolsets", "all")
    return Launch("dockyard-tasks", ("--database-url", url, *every, *args), env=env)


class Inbox:
    """What a client heard: resource URIs updated and list changes, in either protocol era.

    Pass ``inbox.handle`` as ``open_session(message_handler=...)``; ``subscribe`` then uses
    ``resources/subscribe`` (2025-11-25) or a ``subscriptions/listen`` stream (2026-07-28).
    """

    def __init__(self) -> None:
        self.updated: list[str] = []
        self.list_changed = 0
        self._changed = anyio.Event()

    def _heard(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def handle(self, message: Any) -> None:
        if isinstance(message, mt.ResourceUpdatedNotification):
            self.updated.append(str(message.params.uri))
            self._heard()
        elif isinstance(message, mt.ResourceListChangedNotification):
            self.list_changed += 1
            self._heard()

    @asynccontextmanager
    async def subscribed(self, session: Session, uris: list[str]) -> AsyncIterator[Inbox]:
        raw = session.raw if isinstance(session.raw, ClientSession) else session.raw.session
        if session.era == LEGACY:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)  # removed only in the 2026 era
                for uri in uris:
                    await raw.subscribe_resource(uri)
            yield self
            return
        async with (
            listen(raw, resource_subscriptions=uris, resources_list_changed=True) as stream,
            anyio.create_task_group() as group,
        ):

            async def pump() -> None:
                async for event in stream:
                    if isinstance(event, ResourceUpdated):
                        self.updated.append(event.uri)
                    elif isinstance(event, ResourcesListChanged):
                        self.list_changed += 1
                    self._heard()

            group.start_soon(pump)
            yield self
            group.cancel_scope.cancel()

    async def wait_for(self, *uris: str, list_changed: int = 0, timeout: float = 15) -> None:
        """Until every URI was heard (and at least ``list_changed`` list changes); fails after ``timeout``."""
        with anyio.fail_after(timeout):
            while not (set(uris) <= set(self.updated) and self.list_changed >= list_changed):
                await self._changed.wait()
