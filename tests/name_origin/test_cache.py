"""The prediction cache on SQLite and on the local PostgreSQL: round trip, TTL, overwrite, refusals."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dockyard_name_origin.cache import PredictionCache, safe_url
from dockyard_name_origin.models import Answer
from dockyard_shared import InvalidArgument
from tests.name_origin.helpers import sqlite_url

DAY = 86_400.0


class WallClock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def fetched(name: str, count: int, clock: WallClock, *countries: tuple[str, float]) -> Answer:
    return Answer(name, count, countries, datetime.fromtimestamp(clock.now, UTC))


@pytest.fixture(params=["sqlite", "postgresql"])
def cache_url(request, tmp_path):
    if request.param == "sqlite":
        return sqlite_url(tmp_path / "nested" / "folder")  # folders are created on open
    return request.getfixturevalue("postgres_url")


def test_answers_come_back_as_stored_and_marked_cached(cache_url):
    clock = WallClock()
    cache = PredictionCache.open(cache_url, ttl_days=30, clock=clock)
    cache.put_many([fetched("michael", 120, clock, ("US", 0.25), ("IE", 0.125)), fetched("zzq", 0, clock)])
    found = cache.get_many(["michael", "zzq", "absent"])
    assert found["michael"] == Answer(
        "michael", 120, (("US", 0.25), ("IE", 0.125)), datetime.fromtimestamp(clock.now, UTC), cached=True
    )
    assert found["zzq"].count == 0 and not found["zzq"].known
    assert "absent" not in found
    assert (cache.hits, cache.misses) == (2, 1)
    assert cache.size() == 2
    cache.close()


def test_an_answer_older_than_the_ttl_counts_as_absent_and_is_overwritten(cache_url):
    clock = WallClock()
    cache = PredictionCache.open(cache_url, ttl_days=2, clock=clock)
    cache.put_many([fetched("anna", 5, clock, ("SE", 0.5))])
    clock.now += 2 * DAY + 1
    assert cache.get_many(["anna"]) == {} and cache.size() == 0
    cache.put_many([fetched("anna", 7, clock, ("FI", 0.5))])
    assert cache.get_many(["anna"])["anna"].count == 7
    clock.now += 3 * DAY
    assert cache.purge_expired() == 1
    cache.close()


def test_two_caches_on_one_database_share_their_answers(cache_url):
    """Replicas pointed at one --cache-url: what one fetched, the other finds."""
    clock = WallClock()
    first = PredictionCache.open(cache_url, ttl_days=30, clock=clock)
    second = PredictionCache.open(cache_url, ttl_days=30, clock=clock)
    first.put_many([fetched(f"name{i}", i + 1, clock) for i in range(600)])  # more than one IN (...) chunk
    assert len(second.get_many([f"name{i}" for i in range(600)])) == 600
    first.close()
    second.close()


def test_a_plain_postgresql_url_uses_the_installed_driver(postgres_url):
    plain = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    cache = PredictionCache.open(plain, ttl_days=1)
    assert cache.backend == "postgresql"
    cache.close()


def test_an_unreachable_database_is_refused_without_its_password():
    with pytest.raises(InvalidArgument) as refused:
        PredictionCache.open("postgresql://user:hunter2@127.0.0.1:1/nowhere", ttl_days=1)
    assert "hunter2" not in str(refused.value) and "--no-cache" in str(refused.value)
    assert "***" in safe_url("postgresql://user:hunter2@host/db")


def test_a_url_that_is_no_database_url_is_refused():
    with pytest.raises(InvalidArgument, match="not a database URL"):
        PredictionCache.open("not a url", ttl_days=1)


def test_concurrent_writers_of_one_process_take_turns_instead_of_meeting_the_sqlite_lock(tmp_path, caplog):
    """Cold lookups run in threads; on SQLite a write that finds another's write lock does not wait for its
    release but sleeps in the busy handler (1, 2, 5, 10… ms), which made concurrent cold lookups slower
    than one at a time. With no busy wait allowed at all, any such meeting is a failed write: none may
    happen between writers of one process."""
    import threading

    clock = WallClock()
    cache = PredictionCache.open(sqlite_url(tmp_path), ttl_days=30, clock=clock, busy_timeout_s=0)
    threads, rounds = 8, 40
    start = threading.Barrier(threads)

    def writer(index: int) -> None:
        start.wait()
        for round_ in range(rounds):
            name = f"w{index}r{round_}"
            assert cache.claim([name], f"owner{index}", 60) == {name}
            cache.put_many([fetched(name, round_, clock, ("US", 0.5))])
            cache.release([name], f"owner{index}")

    with caplog.at_level("WARNING", logger="dockyard.name_origin"):
        workers = [threading.Thread(target=writer, args=(i,)) for i in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    assert not [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert cache.size() == threads * rounds
    cache.close()


def test_a_sqlite_look_up_runs_its_query_and_no_ping(tmp_path):
    """A pooled SQLite connection cannot drop as a server's can: pinging it before every look-up was one
    more statement per cache access (four per cold name)."""
    from sqlalchemy import event
    from sqlalchemy.pool import Pool

    statements: list[str] = []

    def trace(dbapi_connection, _record) -> None:
        dbapi_connection.set_trace_callback(statements.append)

    event.listen(Pool, "connect", trace)
    try:
        clock = WallClock()
        cache = PredictionCache.open(sqlite_url(tmp_path), ttl_days=30, clock=clock)
        cache.put_many([fetched("michael", 120, clock, ("US", 0.25))])
        statements.clear()
        for _ in range(5):
            assert "michael" in cache.get_many(["michael"])
        cache.close()
    finally:
        event.remove(Pool, "connect", trace)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 5 and all("name_origin_predictions" in s for s in selects), statements
