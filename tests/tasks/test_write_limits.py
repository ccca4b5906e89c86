"""--max-writes-per-minute: each actor's writes are counted in the database, so replicas share one budget,
and a write over it is refused with a retryable error that says when to retry."""

from __future__ import annotations

import re

import pytest

from dockyard_tasks.store import TaskStore
from dockyard_tasks.store.budget import take_write_token
from tests.harness import open_session
from tests.tasks.helpers import tasks_launch


class Seconds:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_token_bucket_refills_at_the_limit_and_never_beyond_it(database_url):
    store = TaskStore(database_url)
    clock = Seconds(1_000_000.0)
    try:
        take = lambda actor="ann": take_write_token(store.engine, actor, 6, clock=clock)  # noqa: E731
        assert [take() for _ in range(6)] == [None] * 6
        assert take() == pytest.approx(10.0)  # 6 a minute: one token every 10 s
        assert take("bob") is None  # each actor has a bucket of their own
        clock.now += 4
        assert take() == pytest.approx(6.0)  # a refusal spends nothing
        clock.now += 6
        assert take() is None and take() == pytest.approx(10.0)
        clock.now += 3600  # an hour idle refills the bucket to the limit, not to 360
        assert [take() for _ in range(7)] == [None] * 6 + [pytest.approx(10.0)]
        clock.now -= 30  # a replica whose clock is behind adds no tokens
        assert take() == pytest.approx(10.0)
    finally:
        store.close()


async def test_replicas_share_each_actors_write_budget(postgres_url, era):
    limited = ("--max-writes-per-minute", "3")
    async with (
        open_session(tasks_launch(postgres_url, "--actor", "ann", *limited, "--demo"), era=era) as first,
        open_session(tasks_launch(postgres_url, "--actor", "ann", *limited), era=era) as second,
        open_session(tasks_launch(postgres_url, "--actor", "bob", *limited), era=era) as bob,
    ):
        for session in (first, second, first):
            await session.call_ok("create_task", {"project": "TASK", "title": "within the budget"})
        refused = await second.call("create_task", {"project": "TASK", "title": "one too many"})
        assert refused.is_error
        assert "Error (limit_exceeded): Too many writes: ann has used all 3 writes a minute" in refused.text
        assert "across every server replica" in refused.text and "nothing was changed" in refused.text
        assert "Retry: may succeed" in refused.text
        wait = int(re.search(r"Wait (\d+) s, then retry the same call", refused.text).group(1))
        assert 1 <= wait <= 20  # one token back every 20 s at 3 a minute
        # Reads are not limited; another actor has a budget of their own.
        listed = (
            await second.call_ok("list_tasks", {"project": "TASK", "text": "budget", "limit": 200})
        ).data
        assert len([t for t in listed["tasks"] if t["title"] == "within the budget"]) == 3
        assert not [t for t in listed["tasks"] if t["title"] == "one too many"]
        await bob.call_ok("create_task", {"project": "TASK", "title": "bob writes too"})


def test_the_flag_is_off_by_default_and_must_be_positive():
    from dockyard_tasks.settings import Settings

    assert Settings(database_url="sqlite://").max_writes_per_minute is None
    refused = tasks_launch("sqlite://", "--max-writes-per-minute", "0").run()
    assert refused.returncode == 2 and "--max-writes-per-minute" in refused.stderr
