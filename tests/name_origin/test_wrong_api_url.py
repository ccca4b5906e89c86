"""A wrong --api-url reads as a wrong URL, not as a nationalize.io outage nor a bad name: every error names
the configured URL and the cause (a status nationalize never sends, a refused connection, a failed DNS lookup)."""

from __future__ import annotations

import socket

from tests.harness import open_session
from tests.name_origin.helpers import make_server


def closed_port_url() -> str:
    with socket.socket() as sock:  # bound, never listening: a connection to it is refused
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


async def both_tools(url: str, era: str) -> tuple[str, str]:
    async with open_session(make_server(url, breaker_threshold=100), era=era) as session:
        single = await session.call_error("predict_origin", {"name": "michael"})
        batch = await session.call_ok("batch_predict", {"names": ["michael", "anna"]})
    return single, batch.data["note"]


async def test_a_url_answering_404_is_named_with_its_status_and_the_flag_to_fix(nationalize, era):
    url = nationalize.url + "/v2/wrong"  # the fake answers 404 off its one path, as a real server would
    single, note = await both_tools(url, era)
    for text in (single, note):
        assert url in text and "HTTP 404" in text and "--api-url" in text, text
        assert "check the name" not in text.lower() and "retry later" not in text.lower(), text
    assert "Error (upstream_unavailable)" in single and "Retry: will not help" in single
    assert note.startswith("2 names not fetched")
    assert nationalize.fake.request_count == 2  # no retries: the same URL answers the same


async def test_a_refused_connection_is_named_as_such_at_the_configured_url(era):
    url = closed_port_url()
    single, note = await both_tools(url, era)
    for text in (single, note):
        assert f"could not be reached at {url}: the connection was refused" in text, text
    assert "--api-url" in single


async def test_a_host_name_that_does_not_resolve_is_named_as_a_dns_failure():
    url = "http://no-such-host.invalid"  # .invalid never resolves (RFC 6761)
    single, note = await both_tools(url, "2026-07-28")
    for text in (single, note):
        assert f"could not be reached at {url}: its host name could not be resolved" in text, text


async def test_one_name_not_fetched_is_one_name(nationalize):
    async with open_session(make_server(nationalize.url + "/wrong")) as session:
        note = (await session.call_ok("batch_predict", {"names": ["michael"]})).data["note"]
    assert note.startswith("1 name not fetched:"), note


async def test_once_requests_are_paused_the_reply_still_names_the_last_cause(era):
    url = closed_port_url()
    async with open_session(make_server(url, breaker_threshold=2), era=era) as session:
        texts = [await session.call_error("predict_origin", {"name": "michael"}) for _ in range(3)]
    paused = [text for text in texts if "circuit open" in text]
    assert paused, texts
    assert (
        f"The last failure: nationalize.io could not be reached at {url}: the connection was refused"
        in paused[-1]
    )
