"""Concurrent lookups of the same names pay for each name once: within one replica (claims in the
process) and across replicas sharing a cache (claim rows in SQLite or PostgreSQL). Requests are counted
at the loopback fake."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest

from dockyard_name_origin.cache import PredictionCache
from tests.harness import ERAS, open_session
from tests.name_origin.fake_nationalize import FakeNationalize, RunningFake
from tests.name_origin.helpers import known_name, launch, make_server, sqlite_url, status

KEY_LIMIT = 100_000


def fake_with_latency() -> RunningFake:
    # Latency makes the calls overlap however the machine is loaded; a large quota keeps it out of the way.
    return RunningFake(FakeNationalize(free_limit=KEY_LIMIT, latency=0.1))


async def both(first, second) -> list:
    results: list = [None, None]

    async def run(index, job) -> None:
        results[index] = await job()

    async with anyio.create_task_group() as group:
        group.start_soon(run, 0, first)
        group.start_soon(run, 1, second)
    return results


@pytest.mark.parametrize("cached", [True, False], ids=["sqlite-cache", "no-cache"])
async def test_two_concurrent_batches_on_one_replica_fetch_each_name_once(tmp_path, era, cached):
    names = [known_name(i * 50) for i in range(200)]
    with fake_with_latency() as nationalize:
        server = make_server(nationalize.url, cache_url=sqlite_url(tmp_path) if cached else None)
        async with open_session(server, era=era) as session:

            async def call():
                return (await session.call_ok("batch_predict", {"names": names})).data

            results = await both(call, call)
        asked = nationalize.fake.names_asked()
    assert sorted(asked) == sorted(names)  # every name once: 20 requests, not 40
    assert nationalize.fake.request_count == 20
    for result in results:
        assert {status(item) for item in result["results"]} <= {"ok", "unknown"}
        assert len(result["results"]) == 200


async def test_single_lookups_wait_for_a_batch_fetching_the_same_name(tmp_path):
    names = [known_name(i * 50) for i in range(40)]
    with fake_with_latency() as nationalize:
        server = make_server(nationalize.url, cache_url=sqlite_url(tmp_path), concurrency=1)
        async with open_session(server) as session:
            outcomes: list = []

            async def batch() -> None:
                await session.call_ok("batch_predict", {"names": names})

            async def single(name: str) -> None:
                await anyio.sleep(0)  # let the batch claim its names first
                outcomes.append(await session.call_ok("predict_origin", {"name": name}))

            async with anyio.create_task_group() as group:
                group.start_soon(batch)
                for name in names[30:]:
                    group.start_soon(single, name)
        asked = nationalize.fake.names_asked()
    assert sorted(asked) == sorted(names) and len(outcomes) == 10


# -- across replicas --------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["batch_predict", "predict_origin"])
async def test_a_replica_whose_cache_read_predates_another_replicas_fetch_does_not_fetch_again(
    tmp_path, monkeypatch, era, tool
):
    # The window, held open on purpose: replica B reads the cache (every name missing), then replica A
    # claims, fetches, stores and releases every name before B claims. B's claims all succeed, so only a
    # look at the cache after claiming tells B that the names are answered now.
    names = [known_name(i * 50) for i in range(30)]
    read_done, go_on = threading.Event(), threading.Event()
    held_once = threading.Lock()
    original = PredictionCache.get_many

    def get_many(cache, wanted, *, counted=True):
        found = original(cache, wanted, counted=counted)
        if counted and held_once.acquire(blocking=False):  # the first lookup of a call: replica B's
            read_done.set()
            assert go_on.wait(30), "replica A did not finish"
        return found

    monkeypatch.setattr(PredictionCache, "get_many", get_many)
    arguments = {"names": names} if tool == "batch_predict" else {"name": names[0]}
    with fake_with_latency() as nationalize:
        replica_a = make_server(nationalize.url, cache_url=sqlite_url(tmp_path))
        replica_b = make_server(nationalize.url, cache_url=sqlite_url(tmp_path))
        async with open_session(replica_a, era=era) as a, open_session(replica_b, era=era) as b:
            late: list = []

            async def call_b() -> None:
                late.append((await b.call_ok(tool, arguments)).data)

            async with anyio.create_task_group() as group:
                group.start_soon(call_b)
                try:
                    assert await anyio.to_thread.run_sync(read_done.wait, 30)
                    first = (await a.call_ok("batch_predict", {"names": names})).data
                    requests_of_a = nationalize.fake.request_count
                finally:
                    go_on.set()
        asked = nationalize.fake.names_asked()
    assert sorted(asked) == sorted(names)  # each name once: replica A's 3 requests, not 3 more (or 1)
    assert requests_of_a == nationalize.fake.request_count == 3
    assert {status(item) for item in first["results"]} <= {"ok", "unknown"} and len(first["results"]) == 30
    (answer,) = late
    if tool == "batch_predict":
        assert len(answer["results"]) == 30
        assert [item["count"] for item in answer["results"]] == [item["count"] for item in first["results"]]
    else:
        assert answer["cached"] is True and answer["count"] == first["results"][0]["count"]


async def _two_replicas_at_once(nationalize: RunningFake, cache_url: str, tmp_path: Path, names: list[str]):
    replicas = [launch(nationalize.url, tmp_path / f"data{i}", "--cache-url", cache_url) for i in (0, 1)]
    results: list = []
    async with (
        open_session(replicas[0], era=ERAS[0]) as first,
        open_session(replicas[1], era=ERAS[1]) as second,
    ):
        # Both are up before either call goes, so the calls overlap.
        assert await first.ping() and await second.ping()

        async def call(session):
            results.append((await session.call_ok("batch_predict", {"names": names})).data)

        async with anyio.create_task_group() as group:
            group.start_soon(call, first)
            group.start_soon(call, second)
    return results


@pytest.mark.slow
async def test_two_replicas_on_one_sqlite_file_fetch_each_name_once(tmp_path):
    names = [known_name(i * 50) for i in range(300)]
    with fake_with_latency() as nationalize:
        results = await _two_replicas_at_once(nationalize, sqlite_url(tmp_path), tmp_path, names)
        asked = nationalize.fake.names_asked()
    assert sorted(asked) == sorted(names)  # 30 requests, not 60
    for result in results:
        assert {status(item) for item in result["results"]} <= {"ok", "unknown"}
        assert len(result["results"]) == 300


@pytest.mark.slow
async def test_two_replicas_on_one_postgresql_fetch_each_name_once(tmp_path, postgres_url):
    names = [known_name(i * 50) for i in range(300)]
    with fake_with_latency() as nationalize:
        results = await _two_replicas_at_once(nationalize, postgres_url, tmp_path, names)
        asked = nationalize.fake.names_asked()
    assert sorted(asked) == sorted(names)
    for result in results:
        assert {status(item) for item in result["results"]} <= {"ok", "unknown"}
        assert len(result["results"]) == 300
