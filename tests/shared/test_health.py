"""/health's rules, on plain checks: 503 only for a required dependency down, degraded for an optional one,
a probe that hangs reported down at its time limit without holding up the answer, details bounded."""

from __future__ import annotations

import threading

import anyio

from dockyard_shared.health import MAX_DETAIL_CHARS, Health, without_details
from dockyard_shared.observe import add_health_check


class Server:  # anything a check can be registered on: the registry is keyed by the object
    pass


def failing(text: str):
    def probe() -> str:
        raise ConnectionError(text)

    return probe


async def test_required_down_is_503_optional_down_is_degraded():
    required, optional = Server(), Server()
    add_health_check(required, "database", failing("refused"))
    add_health_check(optional, "upstream", failing("circuit open"), required=False)

    async def fine() -> str:
        return "up"

    add_health_check(optional, "cache", fine)
    assert (await Health({"a": optional}).report())[0] == 200
    status, body = await Health({"a": optional}).report()
    assert body["status"] == "degraded" and body["checks"]["a"]["cache"]["detail"] == "up"
    status, body = await Health({"a": optional, "b": required}).report()
    assert status == 503 and body["status"] == "down"
    assert body["checks"]["b"]["database"] == {"up": False, "required": True, "detail": "refused"}
    assert without_details(body)["checks"]["b"]["database"] == {"up": False, "required": True}


async def test_a_hung_probe_is_reported_down_at_its_time_limit_and_details_are_bounded():
    server, release = Server(), threading.Event()
    add_health_check(server, "stuck", lambda: release.wait(30) and "late")
    add_health_check(server, "chatty", failing("x" * 10_000))
    try:
        with anyio.fail_after(10):
            status, body = await Health({"s": server}, timeout=0.2).report()
    finally:
        release.set()
    assert status == 503
    assert body["checks"]["s"]["stuck"]["detail"] == "no answer within 0.2 s"
    assert len(body["checks"]["s"]["chatty"]["detail"]) == MAX_DETAIL_CHARS + 1
