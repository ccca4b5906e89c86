"""``dockyard_shared.opened.Opened``: opened once on first use, across threads; a failed open retried;
closed and forgotten. Also the shape dockyard-tasks' store handle needs (listeners subscribed by the opener,
a read that must not open)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from dockyard_shared.opened import Opened


class Resource:
    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


class AsyncResource:
    def __init__(self) -> None:
        self.closed = False

    async def aclose(self) -> None:
        self.closed = True


def test_nothing_is_opened_until_first_use_and_then_only_once():
    opens: list[Resource] = []

    def opener() -> Resource:
        opens.append(Resource())
        return opens[-1]

    handle = Opened(opener)
    assert not handle.is_open and handle.if_open() is None and opens == []
    first = handle.get()
    assert handle.is_open and handle.get() is first and handle.if_open() is first and len(opens) == 1


def test_threads_asking_at_once_share_one_open():
    started = threading.Event()
    release = threading.Event()
    opens = []

    def opener() -> Resource:
        opens.append(1)
        started.set()
        assert release.wait(30)
        return Resource()

    handle = Opened(opener)
    results: list[Resource] = []
    threads = [threading.Thread(target=lambda: results.append(handle.get())) for _ in range(8)]
    for thread in threads:
        thread.start()
    assert started.wait(30)
    release.set()
    for thread in threads:
        thread.join(30)
    assert len(opens) == 1 and len(results) == 8 and all(r is results[0] for r in results)


def test_a_failed_open_is_raised_to_its_caller_and_tried_again_by_the_next():
    attempts = []

    def opener() -> Resource:
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("disk not mounted")
        return Resource()

    handle = Opened(opener)
    with pytest.raises(OSError, match="disk not mounted"):
        handle.get()
    assert not handle.is_open
    assert isinstance(handle.get(), Resource) and len(attempts) == 2


def test_close_closes_what_was_opened_and_a_later_use_opens_anew():
    handle = Opened(Resource)
    handle.close()  # never opened: nothing to close
    first = handle.get()
    handle.close()
    assert first.closed == 1 and not handle.is_open
    second = handle.get()
    assert second is not first and second.closed == 0
    Opened(object).get()  # an object without close() is fine too
    plain = Opened(object)
    plain.get()
    plain.close()
    assert not plain.is_open


async def test_aclose_awaits_an_async_close():
    handle = Opened(AsyncResource)
    client = handle.get()
    await handle.aclose()
    assert client.closed and not handle.is_open
    sync = Opened(Resource)
    resource = sync.get()
    await sync.aclose()
    assert resource.closed == 1


def test_a_store_handle_keeps_its_listeners_beside_it():
    """What dockyard-tasks' LazyStore does: listeners added before the open hear the store once it is open;
    a read that must not open (on the event loop) gets None before."""

    class Store(Resource):
        def __init__(self) -> None:
            super().__init__()
            self.listeners: list[Callable[[str], None]] = []

        def subscribe(self, listener: Callable[[str], None]) -> None:
            self.listeners.append(listener)

        def change(self, event: str) -> None:
            for listener in self.listeners:
                listener(event)

    heard: list[str] = []
    listeners: list[Callable[[str], None]] = [heard.append]

    def open_store() -> Store:
        store = Store()
        store.subscribe(lambda event: [listener(event) for listener in listeners])
        return store

    handle = Opened(open_store)
    assert handle.if_open() is None
    handle.get().change("task created")
    assert heard == ["task created"]
