"""Replicas on one API key and one PostgreSQL cache share the quota ledger and the circuit: together they
never send more names than the quota left, and an outage one of them sees pauses both. Two server objects,
each with its own engine, against the loopback fake; what was sent is counted by the fake itself."""

from __future__ import annotations

import anyio
import psycopg

from dockyard_name_origin.replies import QUOTA as QUOTA_STATUS
from tests.harness import ERAS, open_session
from tests.name_origin.fake_nationalize import API_KEY, FakeNationalize, Fault, RunningFake
from tests.name_origin.helpers import known_name, make_server
from tests.postgres import libpq_url

QUOTA = 25


def _replicas(url: str, postgres_url: str, **limits):
    return [make_server(url, cache_url=postgres_url, api_key=API_KEY, **limits) for _ in range(2)]


async def test_two_replicas_never_send_more_than_the_shared_quota(postgres_url):
    fake = FakeNationalize(keys={API_KEY: QUOTA}, latency=0.05)
    with RunningFake(fake) as nationalize:
        first, second = _replicas(nationalize.url, postgres_url)
        async with open_session(first, era=ERAS[0]) as one, open_session(second, era=ERAS[1]) as two:
            await one.call_ok("predict_origin", {"name": known_name(0)})  # the quota is known from here
            status = (await two.call_ok("quota_status", {})).data
            assert status["remaining"] == QUOTA - 1  # told by the other replica's answer, through the row
            results: list = []

            async def batch(session, start: int) -> None:
                names = [known_name(start + i * 50) for i in range(40)]
                results.append((await session.call_ok("batch_predict", {"names": names})).data)

            async with anyio.create_task_group() as group:
                group.start_soon(batch, one, 10_000)
                group.start_soon(batch, two, 50_000)
            statuses = [(await s.call_ok("quota_status", {})).data for s in (one, two)]
    asked = fake.names_asked()
    assert len(asked) <= QUOTA  # every name sent fitted: no batch was refused with 429 for overshooting
    assert fake.quotas[API_KEY].used == QUOTA  # and the quota was used to the last name
    assert sum(len(r["results"]) - r.get("statuses", {}).get(QUOTA_STATUS, 0) for r in results) == QUOTA - 1
    assert sum(r.get("statuses", {}).get(QUOTA_STATUS, 0) for r in results) == 80 - (
        QUOTA - 1
    )  # said per name
    for status in statuses:  # both replicas know the quota is spent
        assert status["remaining"] == 0


async def test_an_outage_seen_by_one_replica_pauses_both(postgres_url):
    fake = FakeNationalize(persistent=Fault("status", status=503))
    with RunningFake(fake) as nationalize:
        first, second = _replicas(nationalize.url, postgres_url, breaker_threshold=2, max_attempts=2)
        async with open_session(first, era=ERAS[0]) as one, open_session(second, era=ERAS[1]) as two:
            failed = await one.call("predict_origin", {"name": known_name(0)})
            assert failed.is_error
            sent = fake.request_count
            assert sent == 2  # two attempts, then the circuit opened
            status = (await two.call_ok("quota_status", {})).data
            assert status["circuit"].startswith("open")  # the other replica sees it open
            paused = await two.call("predict_origin", {"name": known_name(100)})
            assert paused.is_error and "circuit open" in paused.text and "HTTP 503" in paused.text
            assert fake.request_count == sent  # and sent nothing
    with psycopg.connect(libpq_url(postgres_url)) as connection:  # the row names the key by a hash only
        rows = connection.execute("SELECT key_fingerprint, cause FROM name_origin_limits").fetchall()
    assert len(rows) == 1 and API_KEY not in repr(rows) and "503" in rows[0][1]


async def test_concurrent_reservations_on_two_engines_never_grant_more_than_is_left(postgres_url):
    from datetime import UTC, datetime, timedelta

    from dockyard_name_origin.cache import PredictionCache
    from dockyard_name_origin.shared_limits import SharedQuotaLedger, key_fingerprint
    from dockyard_name_origin.upstream_values import Rate

    caches = [PredictionCache.open(postgres_url, ttl_days=1) for _ in range(2)]
    try:
        first, second = (SharedQuotaLedger(c.engine, key_fingerprint(API_KEY), hold=60) for c in caches)
        now = datetime.now(UTC)
        first.observe(Rate(limit=100, remaining=30, reset_at=now + timedelta(hours=1), observed_at=now))
        await first.arelease(0)  # the observation goes to the row
        granted: list[int] = []

        async def take(ledger) -> None:
            granted.append(await ledger.areserve(3))

        async with anyio.create_task_group() as group:
            for i in range(20):
                group.start_soon(take, (first, second)[i % 2])
        assert sum(granted) == 30 and max(granted) == 3  # 60 names wanted, 30 left: 30 granted, no more
        await second.arelease(sum(granted))  # given back, as after answers that spent nothing
        assert await second.areserve(30) == 30
    finally:
        for cache in caches:
            cache.close()
