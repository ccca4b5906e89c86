"""--tasks-url / --tasks-queue (dockyard_shared.task_backend): what is accepted, and the queue replicas share."""

from __future__ import annotations

import argparse

import pytest

from dockyard_shared import InvalidArgument
from dockyard_shared.task_backend import (
    TaskBackend,
    add_task_backend_arguments,
    deployment_digest,
    task_backend_from,
)


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", action="store_true")
    add_task_backend_arguments(parser)
    return parser.parse_args(["--tasks", *argv])


def test_memory_is_the_default_and_redis_urls_are_shared():
    assert task_backend_from(parsed(), distribution="dockyard-x") == TaskBackend()
    assert not TaskBackend().shared
    for url in (
        "redis://127.0.0.1:6379/3",
        "rediss://h/0",
        "redis+sentinel://a:26379,b:26379/m/0",
        "unix:///r.sock",
    ):
        assert task_backend_from(parsed("--tasks-url", url), distribution="dockyard-x").shared


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("--tasks-url", "postgresql://127.0.0.1/test"), "Redis"),
        (("--tasks-url", "127.0.0.1:6379"), "scheme-less"),
        (("--tasks-url", "redis://h/0", "--tasks-queue", "../other"), "--tasks-queue"),
        (("--tasks-queue", "team"), "memory://"),
    ],
)
def test_a_backend_the_engine_cannot_use_is_refused_saying_why(argv, says):
    with pytest.raises(InvalidArgument) as refused:
        task_backend_from(parsed(*argv), distribution="dockyard-x")
    assert says in str(refused.value.what) + str(refused.value.next_step)


def test_the_shown_url_and_the_derived_queue_leave_credentials_out():
    backend = TaskBackend(url="redis://user:s3cret@redis.internal:6379/0")
    assert backend.shown == "redis://redis.internal:6379/0"
    one = deployment_digest("postgresql://alice:pw1@db.internal/tasks")
    assert one == deployment_digest("postgresql://bob:pw2@db.internal/tasks")  # same database, same queue
    assert one != deployment_digest("postgresql://db.internal/other")
    assert len(one) == 16 and "pw1" not in one
