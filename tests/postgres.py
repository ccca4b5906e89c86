"""The test PostgreSQL, shared by every suite that needs one (tasks, name-origin).

Where it is: ``$DOCKYARD_TEST_POSTGRES_URL``, else the local server (127.0.0.1:5432, trust auth, database
``test``) as user ``postgres`` or ``root``. A test gets a schema of its own, dropped afterwards, and skips
with the reason when there is no server.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import psycopg
import pytest
from sqlalchemy.engine import make_url

__all__ = ["POSTGRES_ENV", "libpq_url", "postgres_base_url", "postgres_schema", "postgres_unavailable"]

POSTGRES_ENV = "DOCKYARD_TEST_POSTGRES_URL"
_LOCAL_USERS = ("postgres", "root")
_LOCAL = "postgresql+psycopg://{user}@127.0.0.1:5432/test"


def libpq_url(url: str) -> str:
    """A SQLAlchemy URL as libpq (psycopg) reads it."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _reachable(url: str) -> str | None:
    """None if ``url`` answers, else why not."""
    try:
        with psycopg.connect(libpq_url(url), connect_timeout=3) as connection:
            connection.execute("SELECT 1")
    except Exception as error:
        return type(error).__name__
    return None


@cache
def _found() -> tuple[str | None, str | None]:
    """(the base URL, None), or (None, why there is none)."""
    given = os.environ.get(POSTGRES_ENV)
    candidates = [given] if given else [_LOCAL.format(user=user) for user in _LOCAL_USERS]
    why = "no candidate"
    for url in candidates:
        why = _reachable(url)
        if why is None:
            return url, None
    shown = make_url(candidates[0]).render_as_string(hide_password=True)
    return None, f"PostgreSQL is not reachable at {shown} ({why}); set {POSTGRES_ENV} to run these tests"


def postgres_base_url() -> str | None:
    """The test PostgreSQL's URL, or None when there is none."""
    return _found()[0]


def postgres_unavailable() -> str | None:
    """Why PostgreSQL tests cannot run here, or None when they can."""
    return _found()[1]


@contextmanager
def postgres_schema(prefix: str = "t_") -> Iterator[str]:
    """A URL whose connections live in a fresh schema of their own, dropped afterwards; a skip saying why
    when there is no PostgreSQL."""
    base = postgres_base_url()
    if base is None:
        pytest.skip(postgres_unavailable() or "no PostgreSQL")
    schema = prefix + uuid.uuid4().hex[:12]
    with psycopg.connect(libpq_url(base), autocommit=True) as connection:
        connection.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield (
            make_url(base)
            .update_query_dict({"options": f"-csearch_path={schema}"})
            .render_as_string(hide_password=False)
        )
    finally:
        with psycopg.connect(libpq_url(base), autocommit=True) as connection:
            connection.execute(f'DROP SCHEMA "{schema}" CASCADE')
