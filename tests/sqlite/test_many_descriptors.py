"""A server holding more than 1,023 file descriptors (many HTTP connections, many databases) still talks
to its SQLite workers: their replies are waited for with poll(), not select(), which refuses such a
descriptor ("filedescriptor out of range in select()")."""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator

import pytest

from tests.harness import open_session
from tests.sqlite.helpers import make_server

HIGH = 1100  # descriptors held open, so the workers' pipes are numbered above select()'s 1023


@pytest.fixture
def descriptors_above_select() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = HIGH + 200
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"the hard limit on open files is {hard}; this test needs {wanted}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    held = []
    try:
        while len(held) < HIGH:
            held.append(os.open(os.devnull, os.O_RDONLY))
        assert max(held) > 1023
        yield
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def test_a_query_is_answered_when_the_workers_pipes_are_numbered_above_1023(
    people, era, descriptors_above_select
):
    async with open_session(make_server(people), era=era) as session:
        result = (await session.call_ok("query", {"sql": "SELECT count(*) AS n FROM people"})).data
    assert result["columns"] == ["n"] and result["rows"] == [[250]]
