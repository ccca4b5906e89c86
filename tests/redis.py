"""The test Redis (task state shared by replicas, ``--tasks-url``): where it is, and cleaning up after a test.

Where it is: ``$DOCKYARD_TEST_REDIS_URL``, else the local server at 127.0.0.1:6379, database 0. A test keeps
its keys under a prefix of its own (a Docket queue name) and :func:`redis_keys_removed` deletes them after;
a test skips, saying why, when there is no server.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import pytest

__all__ = ["REDIS_ENV", "redis_keys_removed", "redis_url"]

REDIS_ENV = "DOCKYARD_TEST_REDIS_URL"
_LOCAL = "redis://127.0.0.1:6379/0"


@cache
def _found() -> tuple[str | None, str | None]:
    import redis

    url = os.environ.get(REDIS_ENV) or _LOCAL
    try:
        with redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=3) as client:
            client.ping()
    except Exception as error:
        return (
            None,
            f"Redis is not reachable at {url} ({type(error).__name__}); set {REDIS_ENV} to run these tests",
        )
    return url, None


def redis_url() -> str:
    """The test Redis's URL, or a skip saying why there is none."""
    url, why = _found()
    if url is None:
        pytest.skip(why or "no Redis")
    return url


@contextmanager
def redis_keys_removed(url: str, prefix: str) -> Iterator[None]:
    """Delete every key starting with ``prefix`` when the block ends (a test's queue, and nothing else)."""
    import redis

    try:
        yield
    finally:
        with redis.Redis.from_url(url) as client:
            keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
            if keys:
                client.delete(*keys)
