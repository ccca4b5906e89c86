"""The cyclic garbage collector, tuned for a long-running server that builds large replies: no collections
while start-up imports and builds, what start-up built frozen, rarer young collections (the runner calls
these; measured figures in each docstring)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["raise_young_threshold", "start_up_without_collections", "tune_garbage_collector"]


def tune_garbage_collector() -> None:
    """Make the cyclic garbage collector cheap for a long-running server that builds large replies.

    A reply of 10,000 rows allocates a few hundred thousand containers; with CPython's default
    thresholds each 700 allocations start a young collection, and the older generations are walked
    together with the tens of thousands of objects start-up left behind (modules, pydantic schemas).
    Measured on the sqlite server, that was more than half of its CPU for such a reply (51 ms of 55).
    Freezing what start-up built removes it from every later collection, and a higher first
    threshold makes young collections rarer; reference counting still frees nearly everything at
    once, so memory does not grow.

    The full collection this needs takes ~90 ms on a freshly started server, so the runner does it in
    the warm-up, once ``initialize`` has been answered and no request is in flight
    (:mod:`dockyard_shared.warmup`). What start-up froze unseen (:func:`start_up_without_collections`)
    is unfrozen first, so its garbage is found and freed before everything still alive is frozen again.
    """
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    raise_young_threshold()


def raise_young_threshold() -> None:
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(_YOUNG_GC_THRESHOLD, older, oldest)


_YOUNG_GC_THRESHOLD = 10_000  # allocations between young collections (CPython default: 700)


@contextmanager
def start_up_without_collections() -> Iterator[None]:
    """No cyclic garbage collection while the server's modules are imported and its tools built.

    Importing FastMCP, the MCP SDK and a server allocates a few hundred thousand objects that all stay
    alive, and at CPython's default thresholds that start ~300 young and 2 full collections which find
    almost nothing: ~15% of a server's start-up CPU (measured with bench/startup). Collection resumes,
    with the higher young threshold, before the first message is read, and what start-up built is frozen
    first (instant, and nothing is scanned): otherwise all of it would still be in the young generation,
    and the first young collection — during the first request that allocates 10,000 objects — would
    walk the whole heap (~90 ms, measured on a git_status sent straight after tools/list). The one full
    collection that pays off runs in the warm-up (:func:`tune_garbage_collector`).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        raise_young_threshold()
        if was_enabled:
            gc.enable()
