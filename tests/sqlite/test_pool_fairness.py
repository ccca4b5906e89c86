"""The SQLite worker pool serves calls in the order they came: a worker freed while calls wait goes to the
one that waited longest, never to a call that arrived just then (which, repeated under load, could keep
an early call waiting until it failed as "workers busy")."""

from __future__ import annotations

import threading
import time

from dockyard_sqlite.database.connection import worker_limits
from dockyard_sqlite.settings import Limits
from dockyard_sqlite.workers.pool import WorkerPool

SPEC = ("main", "/nonexistent.db")  # which database a call is for: only a preference when choosing


def wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.001)


def test_a_freed_worker_goes_to_the_call_that_waited_not_to_one_arriving_then():
    pool = WorkerPool(worker_limits(Limits(workers=1)))
    try:
        held = pool.lease(SPEC, time.monotonic() + 30)
        served: list[str] = []

        def waiter() -> None:
            lease = pool.lease(SPEC, time.monotonic() + 30)
            served.append("waiter")
            lease.give_back()

        thread = threading.Thread(target=waiter)
        thread.start()
        wait_for(lambda: pool.waiting == 1)
        held.give_back()
        newcomer = pool.lease(SPEC, time.monotonic() + 30)  # arrives as the worker comes back
        served.append("newcomer")
        newcomer.give_back()
        thread.join(30)
        assert served == ["waiter", "newcomer"]
    finally:
        pool.close()


def test_waiting_calls_are_served_in_arrival_order():
    pool = WorkerPool(worker_limits(Limits(workers=1)))
    try:
        held = pool.lease(SPEC, time.monotonic() + 30)
        served: list[int] = []

        def call(index: int) -> None:
            lease = pool.lease(SPEC, time.monotonic() + 30)
            served.append(index)
            lease.give_back()

        threads = []
        for index in range(6):
            thread = threading.Thread(target=call, args=(index,))
            thread.start()
            threads.append(thread)
            wait_for(lambda index=index: pool.waiting == index + 1)
        held.give_back()
        for thread in threads:
            thread.join(30)
        assert served == list(range(6))
    finally:
        pool.close()
