"""Hostile and careless upstream answers: the breaker counts 5xx, no upstream value escapes its checks,
single lookups reserve quota, an absurd reset is clamped, and the key is scrubbed in every encoding.

Everything goes through an MCP session against the loopback fake; nothing of the server is patched.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import anyio
import pytest

from tests.harness import ERAS, open_session
from tests.name_origin.fake_nationalize import FakeNationalize, Fault, RunningFake
from tests.name_origin.helpers import known_name, launch, make_server, sqlite_url, status
from tests.name_origin.test_processes import with_stderr_to

NOT_FETCHED = "not fetched: upstream unavailable"

# -- 8. the circuit breaker counts 5xx answers ----------------------------------------------------------


async def test_the_circuit_opens_on_http_500_and_the_next_call_sends_nothing(nationalize, era):
    names = [known_name(i * 50) for i in range(200)]
    nationalize.fake.persistent = Fault("status", 500)
    async with open_session(make_server(nationalize.url, breaker_threshold=5), era=era) as session:
        first = (await session.call_ok("batch_predict", {"names": names})).data
        sent = nationalize.fake.request_count
        second = (await session.call_ok("batch_predict", {"names": names})).data
        status = (await session.call_ok("quota_status")).data
    assert first["statuses"] == {NOT_FETCHED: 200} and second["statuses"] == {NOT_FETCHED: 200}
    # 5 failures open the circuit (plus the requests already in flight then, 4 at most); 20 without it.
    assert sent <= 5 + 4
    assert nationalize.fake.request_count == sent  # the second call sent nothing
    assert status["circuit"].startswith("open")
    assert "circuit open" in second["note"]


async def test_a_malformed_answer_counts_toward_the_breaker(nationalize):
    nationalize.fake.persistent = Fault("body", body=b'{"count": 1}')
    async with open_session(make_server(nationalize.url, breaker_threshold=2)) as session:
        for _ in range(2):
            await session.call_error("predict_origin", {"name": "ann"})
        refused = await session.call_error("predict_origin", {"name": "ann"})
    assert "circuit open" in refused and nationalize.fake.request_count == 2


# -- 6. every upstream value is checked -------------------------------------------------------------

COUNT_1E30 = b'{"count": 1000000000000000000000000000000, "name": "michael", "country": []}'
DEEP = b"[" * 5_000 + b"]" * 5_000  # far under the body limit, far over any parser's nesting limit
BAD_BODIES = {
    "count-1e30": COUNT_1E30,
    "deeply-nested": DEEP,
    "probability-inf": b'{"count": 5, "name": "michael", "country": [{"country_id": "US", "probability": 1e999}]}',
}


@pytest.mark.parametrize("body", BAD_BODIES.values(), ids=BAD_BODIES.keys())
async def test_an_answer_with_values_past_belief_is_an_upstream_fault(nationalize, body, era):
    nationalize.fake.inject(Fault("body", body=body))
    async with open_session(make_server(nationalize.url), era=era) as session:
        text = await session.call_error("predict_origin", {"name": "michael"})
    assert text.startswith("Error (upstream_unavailable)") and "discarded" in text, text
    assert "Retry: may succeed" in text


BAD_HEADERS = {
    "inf": {"X-Rate-Limit-Limit": "inf", "X-Rate-Limit-Remaining": "inf", "X-Rate-Limit-Reset": "inf"},
    "huge": {
        "X-Rate-Limit-Limit": "1" + "0" * 40,
        "X-Rate-Limit-Remaining": "9" * 40,
        "X-Rate-Limit-Reset": "1e300",
    },
    "nan-negative": {"X-Rate-Limit-Limit": "nan", "X-Rate-Limit-Remaining": "-5", "X-Rate-Limit-Reset": "-1"},
}


@pytest.mark.parametrize("headers", BAD_HEADERS.values(), ids=BAD_HEADERS.keys())
async def test_quota_headers_past_belief_are_ignored_and_the_answer_kept(nationalize, headers):
    nationalize.fake.inject(Fault("headers", headers=headers))
    async with open_session(make_server(nationalize.url)) as session:
        outcome = await session.call_ok("predict_origin", {"name": "michael"})
        status = (await session.call_ok("quota_status")).data
    assert outcome.data["name"] == "michael"
    assert status["limit"] is None and status["remaining"] is None and status["reset_at"] is None


async def test_a_429_with_retry_after_1e12_is_a_quota_error_not_an_internal_one(nationalize):
    nationalize.fake.inject(
        Fault("status", 429, headers={"Retry-After": "1e12", "X-Rate-Limit-Reset": "inf"})
    )
    async with open_session(make_server(nationalize.url)) as session:
        text = await session.call_error("predict_origin", {"name": "michael"})
    assert text.startswith("Error (upstream_unavailable)") and "quota is spent" in text, text


async def test_one_bad_answer_in_a_batch_fails_its_names_only_and_keeps_the_rest(nationalize, tmp_path):
    names = [known_name(i * 50) for i in range(30)]
    fake = nationalize.fake
    fake.faulty = {names[12]: Fault("body", body=DEEP), names[25]: Fault("body", body=COUNT_1E30)}
    server = make_server(nationalize.url, cache_url=sqlite_url(tmp_path), breaker_threshold=100)
    async with open_session(server) as session:
        result = (await session.call_ok("batch_predict", {"names": names})).data
        fake.faulty = {}
        before = len(fake.names_asked())
        again = (await session.call_ok("batch_predict", {"names": names})).data
        asked = fake.names_asked()[before:]
    statuses = [status(item) for item in result["results"]]
    assert statuses[10:30] == [NOT_FETCHED] * 20
    assert NOT_FETCHED not in statuses[:10]
    assert sorted(asked) == sorted(names[10:30])  # what was paid for was kept: the 10 not asked again
    assert NOT_FETCHED not in [status(item) for item in again["results"]]


# -- 10. predict_origin reserves quota --------------------------------------------------------------


async def test_concurrent_single_lookups_with_one_name_left_send_one_request(era):
    with RunningFake(FakeNationalize(free_limit=2, latency=0.2)) as running:
        async with open_session(make_server(running.url), era=era) as session:
            await session.call_ok("predict_origin", {"name": "warm up"})  # 1 name left, and known
            outcomes = []

            async def one(i: int) -> None:
                outcomes.append(await session.call("predict_origin", {"name": known_name(i * 50)}))

            async with anyio.create_task_group() as group:
                for i in range(12):
                    group.start_soon(one, i)
        assert running.fake.request_count == 2
    errors = [o.text for o in outcomes if o.is_error]
    assert len(errors) == 11 and all("quota is spent" in text for text in errors)


# -- 9. an absurd reset is clamped to a day ---------------------------------------------------------


async def test_a_reset_a_billion_seconds_away_is_believed_as_a_day_and_said(nationalize, era):
    absurd = {"X-Rate-Limit-Limit": "100", "X-Rate-Limit-Remaining": "0", "X-Rate-Limit-Reset": "999999999"}
    nationalize.fake.inject(Fault("headers", headers=absurd))
    async with open_session(make_server(nationalize.url), era=era) as session:
        await session.call_ok("predict_origin", {"name": "michael"})
        text = await session.call_error("predict_origin", {"name": "anna"})
        status = (await session.call_ok("quota_status")).data
    reset_at = datetime.fromisoformat(status["reset_at"])
    assert reset_at <= datetime.now(UTC) + timedelta(days=1, seconds=5)
    assert "nationalize said 999,999,999 s" in text and "after 86,400 s at most" in text
    assert "(in 23 h" in text or "(in 24 h" in text
    assert "999,999,999 s" in status["note"]
    assert nationalize.fake.request_count == 1


async def test_a_429_with_an_absurd_reset_is_clamped_too(nationalize):
    absurd = {"X-Rate-Limit-Remaining": "0", "X-Rate-Limit-Reset": "999999999"}
    nationalize.fake.inject(Fault("status", 429, headers=absurd))
    async with open_session(make_server(nationalize.url)) as session:
        first = await session.call_error("predict_origin", {"name": "michael"})
        status = (await session.call_ok("quota_status")).data
    assert "(in 86,400 s)" in first and "nationalize said 999,999,999 s" in first
    assert datetime.fromisoformat(status["reset_at"]) <= datetime.now(UTC) + timedelta(days=1, seconds=5)


# -- 12. the key is scrubbed in every encoding --------------------------------------------------------

ODD_KEY = "nat_k3y/with+plus=eq&amp ersand%25"


@pytest.mark.parametrize("form", ["raw", "wire", "quote_plus", "lower_hex"])
async def test_an_echoed_key_is_scrubbed_in_any_encoding_from_reply_and_log(nationalize, form, caplog, era):
    from urllib.parse import quote, quote_plus

    fake = nationalize.fake
    fake.keys = {ODD_KEY: 1000}
    fake.echo_key, fake.echo_as = True, form
    fake.inject(Fault("status", 401))
    caplog.set_level(logging.DEBUG)
    async with open_session(make_server(nationalize.url, api_key=ODD_KEY), era=era) as session:
        text = await session.call_error("predict_origin", {"name": "anna"})
    assert "(apikey=[redacted])" in text, text
    encodings = {ODD_KEY, quote(ODD_KEY, safe=""), quote(ODD_KEY), quote_plus(ODD_KEY)}
    encodings |= {e.lower() for e in encodings if "%" in e}
    for leaked in encodings:
        assert leaked not in text and leaked not in caplog.text
    assert "(apikey=[redacted])" in caplog.text  # the operator's log line was written, scrubbed


async def test_a_redirect_echoing_the_key_is_not_logged_by_the_http_library_at_debug(nationalize, caplog):
    from urllib.parse import quote_plus

    nationalize.fake.keys = {ODD_KEY: 1000}
    nationalize.fake.inject(Fault("redirect"))
    caplog.set_level(logging.DEBUG)
    async with open_session(make_server(nationalize.url, api_key=ODD_KEY)) as session:
        text = await session.call_error("predict_origin", {"name": "anna"})
    for leaked in (ODD_KEY, quote_plus(ODD_KEY)):
        assert leaked not in caplog.text and leaked not in text
    assert "HTTP 302" in text and text.startswith("Error (upstream_unavailable)")
    assert nationalize.fake.request_count == 1  # not followed
    assert not [
        r for r in caplog.records if r.name.startswith(("httpx", "httpcore")) and r.levelno < logging.WARNING
    ]


# -- 11. later pages are answered from the cache only ---------------------------------------------------


async def test_later_pages_after_partial_results_spend_nothing_and_agree_with_the_first(tmp_path, era):
    names = [known_name(i * 50) for i in range(600)]
    with RunningFake(FakeNationalize(free_limit=10_000)) as nationalize:
        await _page_through(nationalize, names, tmp_path, era)


async def _page_through(nationalize: RunningFake, names: list[str], tmp_path, era) -> None:
    fake = nationalize.fake
    fake.faulty = {name: Fault("status", 500) for name in names[500:510] + names[590:600]}
    server = make_server(
        nationalize.url, cache_url=sqlite_url(tmp_path), breaker_threshold=100, max_reply_chars=40_000
    )
    async with open_session(server, era=era) as session:
        first = (await session.call_ok("batch_predict", {"names": names})).data
        sent = fake.request_count
        fake.faulty = {}  # nationalize has recovered: a later page still must not fetch
        pages, offset = [first], first.get("next_offset")
        while offset is not None:
            page = (await session.call_ok("batch_predict", {"names": names, "offset": offset})).data
            pages.append(page)
            offset = page.get("next_offset")
    assert first["statuses"].get(NOT_FETCHED) == 20 and len(pages) >= 2, (first["statuses"], sent)
    assert fake.request_count == sent  # "answered from the cache, no quota" held
    assert "no quota" in first["note"] and "offset=0 to fetch them" in first["note"]
    seen: dict[str, int] = {}
    for page in pages:
        for item in page["results"]:
            seen[status(item)] = seen.get(status(item), 0) + 1
    assert seen == first["statuses"]
    assert "offset=0" in pages[-1]["note"]


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
async def test_over_stdio_at_debug_an_encoded_echo_and_a_redirect_leave_no_key_in_reply_or_log(
    nationalize, tmp_path, era
):
    from urllib.parse import quote, quote_plus

    stderr = tmp_path / "stderr.log"
    fake = nationalize.fake
    fake.keys = {ODD_KEY: 1000}
    fake.echo_key, fake.echo_as = True, "wire"
    base = launch(nationalize.url, tmp_path / "data", "--log-level", "DEBUG", key=ODD_KEY)
    async with open_session(with_stderr_to(base, stderr), era=era) as session:
        fake.inject(Fault("status", 401))
        echoed = await session.call_error("predict_origin", {"name": "anna"})
        fake.inject(Fault("redirect"))
        redirected = await session.call_error("predict_origin", {"name": "bo kim"})
    log = stderr.read_text()
    assert "DEBUG" in log and "(apikey=[redacted])" in echoed and "HTTP 302" in redirected
    assert quote_plus(ODD_KEY) in fake.requests[-1].query  # the key did travel, encoded, in the URL
    for leaked in {ODD_KEY, quote(ODD_KEY, safe=""), quote(ODD_KEY), quote_plus(ODD_KEY)}:
        assert leaked not in log and leaked not in echoed and leaked not in redirected
