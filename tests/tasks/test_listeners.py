"""Listeners: each callback hears each event, a failing one does not silence the others, and removing
one callback removes only that one."""

from __future__ import annotations

import logging

from dockyard_tasks.listeners import Listeners


def test_each_callback_hears_each_event_and_a_failing_one_is_logged_not_raised(caplog):
    listeners: Listeners[int] = Listeners()
    heard: list[tuple[str, int]] = []

    def broken(event: int) -> None:
        raise RuntimeError("broken listener")

    listeners.add(broken)
    listeners.add(lambda event: heard.append(("a", event)))
    with caplog.at_level(logging.ERROR):
        listeners.call(1)
    assert heard == [("a", 1)] and "change listener failed" in caplog.text


def test_the_same_callback_added_twice_is_called_twice_and_removed_once():
    listeners: Listeners[int] = Listeners()
    heard: list[int] = []
    remove_first = listeners.add(heard.append)
    listeners.add(heard.append)
    listeners.call(1)
    remove_first()
    remove_first()  # removing again changes nothing
    listeners.call(2)
    assert heard == [1, 1, 2]
