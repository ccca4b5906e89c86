from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.name_origin.fake_nationalize import FakeNationalize, RunningFake
from tests.postgres import postgres_base_url, postgres_schema, postgres_unavailable


@pytest.fixture
def nationalize() -> Iterator[RunningFake]:
    """A fresh fake nationalize.io for one test."""
    with RunningFake(FakeNationalize()) as running:
        yield running


@pytest.fixture(scope="session")
def postgres_base() -> str:
    url = postgres_base_url()
    if url is None:
        pytest.skip(postgres_unavailable() or "no PostgreSQL")
    return url


@pytest.fixture
def postgres_url(postgres_base) -> Iterator[str]:
    with postgres_schema("name_origin_") as url:
        yield url
