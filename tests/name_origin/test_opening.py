"""What name-origin opens late and closes: the HTTP client (the lifespan closes it), the default cache (a
failed open says why and is tried again), and what an --offline server says for a name it has not cached."""

from __future__ import annotations

import shutil

import httpx
import pytest

from dockyard_name_origin.server import create_server
from dockyard_name_origin.settings import Settings, default_cache_url
from tests.harness import open_session
from tests.name_origin.helpers import DETAILS, FAST, known_name, make_server, sqlite_url


async def test_an_offline_cache_miss_is_an_upstream_off_by_flag_not_a_missing_name(
    nationalize, tmp_path, era
):
    url = sqlite_url(tmp_path)
    cached = known_name()
    async with open_session(make_server(nationalize.url, cache_url=url)) as session:
        await session.call_ok("predict_origin", {"name": cached})
    async with open_session(make_server(nationalize.url, cache_url=url, offline=True), era=era) as session:
        hit = (await session.call_ok("predict_origin", {"name": cached})).data
        text = await session.call_error("predict_origin", {"name": "never asked"})
    assert hit["cached"] is True
    first, retry, next_step = text.splitlines()
    assert first.startswith("Error (upstream_unavailable): 'never asked' is not in the cache")
    assert "--offline (set by its operator)" in first and "never calls nationalize.io" in first
    assert retry == "Retry: will not help unless the call or the state changes."
    assert "Retrying will not help while the server is offline" in next_step
    assert "without --offline" in next_step and "batch_predict" in next_step
    assert nationalize.fake.request_count == 1  # the first server's lookup only


class CountingTransport(httpx.AsyncBaseTransport):
    """A real HTTP transport that counts how often the server's client closes it."""

    def __init__(self) -> None:
        self.closed = 0
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        self.closed += 1


async def test_the_lifespan_closes_the_http_client_and_a_later_session_opens_another(nationalize):
    transport = CountingTransport()
    server = create_server(
        Settings(api_url=nationalize.url, limits=FAST, exposure=DETAILS), transport=transport
    )
    async with open_session(server) as session:
        await session.call_ok("predict_origin", {"name": known_name(0)})
        assert transport.closed == 0
    assert transport.closed == 1
    async with open_session(server) as session:  # in memory, each session runs the lifespan again
        await session.call_ok("predict_origin", {"name": known_name(50)})
    assert transport.closed == 2 and nationalize.fake.request_count == 2
    await transport._inner.aclose()


async def test_a_default_cache_that_cannot_open_says_why_and_the_next_call_tries_again(
    nationalize, tmp_path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    url = default_cache_url()
    in_the_way = tmp_path / "dockyard" / "name-origin" / "cache.db"
    in_the_way.mkdir(parents=True)  # a folder where the SQLite file goes
    async with open_session(make_server(nationalize.url, cache_url=url)) as session:
        text = await session.call_error("predict_origin", {"name": known_name()})
        assert text.startswith("Error (invalid_argument)") and "cannot be opened" in text
        assert "--no-cache" in text
        shutil.rmtree(in_the_way)
        result = (await session.call_ok("predict_origin", {"name": known_name()})).data
        again = (await session.call_ok("predict_origin", {"name": known_name()})).data
    assert (result["cached"], again["cached"]) == (False, True)


async def test_a_default_cache_whose_folder_cannot_be_made_says_why(nationalize, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    (tmp_path / "dockyard").write_text("a file where the data folder goes")
    async with open_session(make_server(nationalize.url, cache_url=default_cache_url())) as session:
        text = await session.call_error("predict_origin", {"name": known_name()})
        again = await session.call_error("predict_origin", {"name": known_name()})
    assert text.startswith("Error (invalid_argument)") and "its folder cannot be created" in text
    assert "--no-cache" in text and again == text
