"""What name-origin tells an operator: its cache and upstream in ``/health`` (the upstream down opens the
circuit, reported as degraded, not down: cached names are still answered) and the quota left in
``/metrics``. The checks and gauges are the ones the HTTP app serves (``dockyard_shared.health`` and
``.metrics``); tests/sqlite/test_observability.py covers those endpoints over real HTTP."""

from __future__ import annotations

from prometheus_client import generate_latest

from dockyard_shared.health import Health
from dockyard_shared.metrics import Metrics
from tests.harness import open_session
from tests.name_origin.fake_nationalize import Fault
from tests.name_origin.helpers import make_server, sqlite_url


async def test_upstream_down_opens_the_circuit_and_health_says_degraded(nationalize, tmp_path, era):
    server = make_server(nationalize.url, cache_url=sqlite_url(tmp_path), breaker_threshold=1, max_attempts=1)
    async with open_session(server, era=era) as session:
        await session.call_ok("predict_origin", {"name": "michael"})
        status, body = await Health({"name-origin": server}).report()
        assert status == 200 and body["status"] == "ok"
        checks = body["checks"]["name-origin"]
        assert checks["cache"]["up"] and "reachable" in checks["cache"]["detail"]
        assert checks["upstream"] == {
            "up": True,
            "required": False,
            "detail": checks["upstream"]["detail"],
        }
        assert "circuit closed" in checks["upstream"]["detail"]
        assert "quota left" in checks["upstream"]["detail"]

        scraped = generate_latest(Metrics({"name-origin": server}).registry).decode()
        (quota,) = nationalize.fake.quotas.values()  # what the fake's quota headers said is left
        remaining = quota.limit - quota.used
        assert f'dockyard_upstream_quota_remaining{{server="name-origin"}} {float(remaining)}' in scraped
        assert 'dockyard_upstream_circuit_open{server="name-origin"} 0.0' in scraped

        nationalize.fake.inject(Fault("status", 503))  # the upstream fails: the circuit opens
        await session.call_error("predict_origin", {"name": "anna"})

        status, body = await Health({"name-origin": server}).report()
        assert status == 200 and body["status"] == "degraded"
        upstream = body["checks"]["name-origin"]["upstream"]
        assert upstream["up"] is False and upstream["required"] is False
        assert "circuit open" in upstream["detail"]
        assert body["checks"]["name-origin"]["cache"]["up"] is True
        scraped = generate_latest(Metrics({"name-origin": server}).registry).decode()
        assert 'dockyard_upstream_circuit_open{server="name-origin"} 1.0' in scraped
