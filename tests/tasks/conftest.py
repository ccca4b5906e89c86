"""Fixtures of the tasks tests: a database URL per backend (SQLite file, or a PostgreSQL schema of its own)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dockyard_tasks.store import TaskStore
from tests.postgres import postgres_schema, postgres_unavailable
from tests.tasks.helpers import BACKENDS


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    """Each test once on SQLite and once on PostgreSQL (skipped, saying why, when it is not reachable)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'tasks.db'}"
        return
    yield from fresh_postgres_schema()


def fresh_postgres_schema() -> Iterator[str]:
    """A schema of its own on the test PostgreSQL for one test, or a skip that says why there is none."""
    reason = postgres_unavailable()
    if reason:
        pytest.skip(reason)
    with postgres_schema() as url:
        yield url


@pytest.fixture
def postgres_url() -> Iterator[str]:
    yield from fresh_postgres_schema()


@pytest.fixture
def store(database_url: str) -> Iterator[TaskStore]:
    store = TaskStore(database_url)
    yield store
    store.close()


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    """A fresh SQLite tracker for protocol tests (the store tests cover both backends)."""
    return f"sqlite:///{tmp_path / 'tracker.db'}"
