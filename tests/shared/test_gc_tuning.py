"""The runner's garbage-collector tuning: paused while a server starts, tuned in the warm-up."""

from __future__ import annotations

import gc

import pytest

from dockyard_shared.gc_tuning import start_up_without_collections, tune_garbage_collector


def test_start_up_objects_are_frozen_and_young_collections_are_rarer():
    threshold = gc.get_threshold()
    try:
        gc.unfreeze()
        tune_garbage_collector()
        assert gc.get_freeze_count() > 1_000  # modules, classes, schemas built so far
        young, older, oldest = gc.get_threshold()
        assert young > threshold[0] and (older, oldest) == threshold[1:]
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_garbage_cycles_made_after_tuning_are_still_collected():
    threshold = gc.get_threshold()
    try:
        tune_garbage_collector()
        assert gc.isenabled()
        gc.collect()  # a fresh count, so no automatic collection runs among the 4,000 allocations below

        class Node:
            pass

        for _ in range(1_000):
            first, second = Node(), Node()
            first.other, second.other = second, first
        del first, second
        assert gc.collect() >= 2_000  # the cycles are found: tuning did not switch collection off
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_start_up_pauses_collection_and_resumes_it_even_when_building_fails():
    threshold = gc.get_threshold()
    try:
        with pytest.raises(RuntimeError), start_up_without_collections():
            assert not gc.isenabled()
            raise RuntimeError("a bad flag found while building")
        assert gc.isenabled()
        assert gc.get_threshold()[0] > threshold[0]
        # What start-up built is out of the collector's view: the first young collection stays young.
        assert gc.get_freeze_count() > 1_000
    finally:
        gc.unfreeze()
        gc.enable()
        gc.set_threshold(*threshold)
