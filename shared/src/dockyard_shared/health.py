"""``GET /health``: per server, per dependency, what is up (the checks of :mod:`dockyard_shared.observe`).

The answer is 200 when every required dependency is up (``"status": "ok"``, or ``"degraded"`` when only an
optional one is down) and 503 when a required one is down (``"status": "down"``), so a supervisor or a load
balancer can act on the status code alone. It stays cheap and bounded: all checks run at once, each within
:data:`CHECK_TIMEOUT` seconds (one that does not answer in time is reported down, "no answer within…"), and
an answer is reused for :data:`REUSE_SECONDS`, so a probe storm runs one round of checks.

``/health`` stays open without the bearer token (a supervisor probes it without the secret; see
:mod:`dockyard_shared.http`), so an unauthenticated answer names each check and whether it is up, and
nothing more: the details (file paths, database errors, quota figures) are shown only to a caller that
passes the same authentication as the MCP endpoint, or when the server requires none.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from typing import Any

import anyio

from .observe import HealthCheck, health_checks

__all__ = ["CHECK_TIMEOUT", "Health"]

log = logging.getLogger("dockyard.health")

CHECK_TIMEOUT = 2.0
REUSE_SECONDS = 1.0
MAX_DETAIL_CHARS = 300
PROBE_THREADS = 8


async def _probe(check: HealthCheck, timeout: float, limiter: anyio.CapacityLimiter) -> dict[str, Any]:
    try:
        with anyio.fail_after(timeout):
            if inspect.iscoroutinefunction(check.probe):
                detail = await check.probe()
            else:
                detail = await anyio.to_thread.run_sync(check.probe, abandon_on_cancel=True, limiter=limiter)
        up = True
    except TimeoutError:
        up, detail = False, f"no answer within {timeout:g} s"
    except Exception as error:  # a probe's failure is its dependency's state, not ours
        up, detail = False, str(error) or type(error).__name__
    detail = " ".join(str(detail or "").split())
    if len(detail) > MAX_DETAIL_CHARS:
        detail = detail[:MAX_DETAIL_CHARS] + "…"
    return {"up": up, "required": check.required, "detail": detail}


class Health:
    """The checks of ``servers`` and the last answer."""

    def __init__(self, servers: Mapping[str, Any], *, timeout: float = CHECK_TIMEOUT) -> None:
        self.servers = servers
        self.timeout = timeout
        self._last: tuple[float, int, dict[str, Any]] | None = None
        self._lock = anyio.Lock()
        self._down: set[tuple[str, str]] = set()
        # Threads of their own: a probe stuck in a system call (a hung network file system) is abandoned
        # after the timeout but holds its thread, and must never use up the threads the tools run in.
        self._threads = anyio.CapacityLimiter(PROBE_THREADS)

    async def report(self) -> tuple[int, dict[str, Any]]:
        """(HTTP status, body with details); the caller strips the details for an anonymous caller."""
        async with self._lock:  # concurrent probes share one round
            now = anyio.current_time()
            if self._last is not None and now - self._last[0] < REUSE_SECONDS:
                return self._last[1], self._last[2]
            status, body = await self._run()
            self._last = (anyio.current_time(), status, body)
            return status, body

    async def _run(self) -> tuple[int, dict[str, Any]]:
        results: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in self.servers}

        async def one(server: str, check: HealthCheck) -> None:
            results[server][check.name] = await _probe(check, self.timeout, self._threads)

        async with anyio.create_task_group() as tasks:
            for name, server in self.servers.items():
                for check in health_checks(server):
                    tasks.start_soon(one, name, check)
        down = [(s, c, r) for s, checks in results.items() for c, r in checks.items() if not r["up"]]
        required_down = any(r["required"] for _, _, r in down)
        status = "down" if required_down else "degraded" if down else "ok"
        now_down = {(server, check) for server, check, _ in down}
        for server, check, result in down:  # logged when it goes down, not at every probe
            if (server, check) not in self._down:
                log.warning("health: %s's %s is down: %s", server, check, result["detail"])
        for server, check in self._down - now_down:
            log.info("health: %s's %s is up again", server, check)
        self._down = now_down
        body = {"status": status, "servers": sorted(self.servers), "checks": results}
        return (503 if required_down else 200), body


def without_details(body: dict[str, Any]) -> dict[str, Any]:
    """What an unauthenticated caller sees: each check's name and whether it is up."""
    checks = {
        server: {name: {"up": r["up"], "required": r["required"]} for name, r in checks.items()}
        for server, checks in body["checks"].items()
    }
    return {**body, "checks": checks}
