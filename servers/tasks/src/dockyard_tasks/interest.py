"""Who watches which resource: an index from URI to subscribers, so a change costs what it concerns.

No MCP here. ``subscriptions.py`` registers each listen stream and each 2025-11-25 session with the
URIs it watches; :meth:`Interest.matching` answers which subscribers a
:class:`~dockyard_tasks.notify.ResourceChange` concerns by looking up the change's own URIs (and, for a
change too large to name its tasks, the watched tasks of its projects), never by walking every watched
URI: a change to one task costs a few dictionary lookups however many URIs are watched.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

from .notify import ResourceChange, task_project

__all__ = ["Interest"]

Subscriber = TypeVar("Subscriber")


class Interest(Generic[Subscriber]):
    """URI → subscribers, and project key → the watched ``task://`` URIs of that project."""

    def __init__(self) -> None:
        self._by_uri: dict[str, set[Subscriber]] = {}
        self._tasks_of: dict[str, set[str]] = {}
        self._of: dict[Subscriber, set[str]] = {}
        self.count = 0  # (subscriber, URI) pairs held

    def __len__(self) -> int:
        return len(self._of)

    def __iter__(self) -> Iterator[Subscriber]:
        return iter(list(self._of))

    def watches(self, subscriber: Subscriber, uri: str) -> bool:
        return uri in self._of.get(subscriber, ())

    def size_of(self, subscriber: Subscriber) -> int:
        """How many URIs ``subscriber`` watches."""
        return len(self._of.get(subscriber, ()))

    def add(self, subscriber: Subscriber, uris: Iterable[str]) -> None:
        mine = self._of.setdefault(subscriber, set())
        for uri in uris:
            if uri in mine:
                continue
            mine.add(uri)
            self.count += 1
            self._by_uri.setdefault(uri, set()).add(subscriber)
            if (key := task_project(uri)) is not None:
                self._tasks_of.setdefault(key, set()).add(uri)

    def discard(self, subscriber: Subscriber, uris: Iterable[str]) -> None:
        mine = self._of.get(subscriber)
        if mine is None:
            return
        for uri in list(uris):
            if uri not in mine:
                continue
            mine.discard(uri)
            self.count -= 1
            watchers = self._by_uri[uri]
            watchers.discard(subscriber)
            if not watchers:
                del self._by_uri[uri]
                if (key := task_project(uri)) is not None:
                    tasks = self._tasks_of[key]
                    tasks.discard(uri)
                    if not tasks:
                        del self._tasks_of[key]

    def remove(self, subscriber: Subscriber) -> None:
        """Forget ``subscriber`` and everything it watched."""
        self.discard(subscriber, self._of.get(subscriber, ()))
        self._of.pop(subscriber, None)

    def matching(self, change: ResourceChange) -> dict[Subscriber, list[str]]:
        """The subscribers ``change`` concerns, each with the URIs it watches that changed (sorted)."""
        if change.everything:
            return {s: sorted(uris) for s, uris in self._of.items() if uris}
        found: dict[Subscriber, list[str]] = {}

        def hit(uri: str) -> None:
            for subscriber in self._by_uri.get(uri, ()):
                found.setdefault(subscriber, []).append(uri)

        # Walk whichever is smaller: the change's URIs or the watched ones.
        if len(change.uris) <= len(self._by_uri):
            for uri in change.uris:
                hit(uri)
        else:
            for uri in [u for u in self._by_uri if u in change.uris]:
                hit(uri)
        for key in change.all_tasks_of:
            for uri in self._tasks_of.get(key, ()):
                if uri not in change.uris:
                    hit(uri)
        for uris in found.values():
            uris.sort()
        return found
