"""Helpers the tasks tests import: where the test databases live and how to make a store on one."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from functools import cache

import psycopg
from sqlalchemy.engine import make_url

from dockyard_tasks.store import StoreLimits, TaskStore

POSTGRES_ENV = "DOCKYARD_TEST_POSTGRES_URL"
POSTGRES_DEFAULT = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
BACKENDS = ("sqlite", "postgresql")


def postgres_base_url() -> str:
    return os.environ.get(POSTGRES_ENV) or POSTGRES_DEFAULT


def _libpq(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@cache
def postgres_unavailable() -> str | None:
    """Why PostgreSQL tests cannot run here, or None when they can."""
    url = postgres_base_url()
    try:
        with psycopg.connect(_libpq(url), connect_timeout=3) as connection:
            connection.execute("SELECT 1")
    except Exception as error:
        shown = make_url(url).render_as_string(hide_password=True)
        return f"PostgreSQL is not reachable at {shown} ({type(error).__name__}); set {POSTGRES_ENV} to run these tests"
    return None


@contextmanager
def postgres_schema() -> Iterator[str]:
    """A URL whose connections live in a fresh schema of their own, dropped afterwards."""
    base = postgres_base_url()
    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(_libpq(base), autocommit=True) as connection:
        connection.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield (
            make_url(base)
            .update_query_dict({"options": f"-csearch_path={schema}"})
            .render_as_string(hide_password=False)
        )
    finally:
        with psycopg.connect(_libpq(base), autocommit=True) as connection:
            connection.execute(f'DROP SCHEMA "{schema}" CASCADE')


class Clock:
    """A settable clock, so dates such as 'overdue' do not depend on the day the tests run."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def make_store(url: str, **limits) -> TaskStore:
    return TaskStore(url, limits=StoreLimits(**limits) if limits else None)
