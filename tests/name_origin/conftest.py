from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.name_origin.fake_nationalize import FakeNationalize, RunningFake
from tests.name_origin.helpers import postgres_base_url, postgres_schema


@pytest.fixture
def nationalize() -> Iterator[RunningFake]:
    """A fresh fake nationalize.io for one test."""
    with RunningFake(FakeNationalize()) as running:
        yield running


@pytest.fixture(scope="session")
def postgres_base() -> str:
    url = postgres_base_url()
    if url is None:
        pytest.skip("no PostgreSQL on 127.0.0.1:5432 (trust auth, database 'test', user postgres or root)")
    return url


@pytest.fixture
def postgres_url(postgres_base) -> Iterator[str]:
    with postgres_schema(postgres_base) as url:
        yield url
