"""Every way nationalize.io can fail, and what the model reads about it: retried or not, when to come back.

The fake injects each fault class; the server's own code is never patched. Waits are shortened through
the limits (helpers.FAST), and the circuit breaker's clock is moved by hand.
"""

from __future__ import annotations

import pytest

from tests.harness import open_session
from tests.name_origin.fake_nationalize import API_KEY, FakeNationalize, Fault, RunningFake
from tests.name_origin.helpers import ManualClock, known_name, make_server, sqlite_url, status

RETRIED = "Retry: may succeed if retried later"


async def predict(url: str, *, era: str | None = None, **options) -> tuple[bool, str]:
    kwargs = {"era": era} if era else {}
    async with open_session(make_server(url, **options), **kwargs) as session:
        outcome = await session.call("predict_origin", {"name": "michael"})
    return outcome.is_error, outcome.text


async def test_a_burst_of_503s_is_retried_and_then_answered(nationalize, era):
    nationalize.fake.inject(Fault("status", 503), Fault("status", 502))
    is_error, text = await predict(nationalize.url, era=era)
    assert not is_error, text
    assert nationalize.fake.request_count == 3


@pytest.mark.parametrize(
    ("fault", "said", "requests"),
    [
        (Fault("status", 503), "nationalize.io answered HTTP 503 (4 attempts)", 4),
        (Fault("status", 504), "nationalize.io answered HTTP 504 (4 attempts)", 4),
        (Fault("hang", seconds=3), "nationalize.io did not answer in time (4 attempts)", 4),
        (Fault("reset"), "nationalize.io dropped the connection", 4),
    ],
    ids=["503", "504", "timeout", "connection-reset"],
)
async def test_transient_failures_are_retried_then_reported_as_retryable(nationalize, fault, said, requests):
    nationalize.fake.persistent = fault
    is_error, text = await predict(nationalize.url, breaker_threshold=100)
    assert is_error and text.startswith("Error (upstream_unavailable)")
    assert said in text and RETRIED in text and "cached names still answer" in text
    assert nationalize.fake.request_count == requests


async def test_a_body_trickled_past_the_deadline_is_given_up(nationalize):
    nationalize.fake.persistent = Fault("slow_body", seconds=10)
    is_error, text = await predict(
        nationalize.url, request_deadline=1.0, read_timeout=2.0, breaker_threshold=100
    )
    assert is_error and "did not answer in time" in text
    assert nationalize.fake.request_count == 1  # the deadline leaves no time for a second attempt


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        (Fault("status", 500), "nationalize.io failed while looking up 1 name (500)"),
        (Fault("malformed"), "sent an answer that was discarded: its body was not valid JSON"),
        (Fault("content_type"), "discarded: its content type was 'text/html', not JSON"),
        (Fault("oversized"), "discarded: its body of 4,194,"),
        (Fault("mismatch"), "discarded: answer 1 was for another name than the one asked"),
    ],
    ids=["500", "malformed-json", "wrong-content-type", "oversized-body", "echoed-name-mismatch"],
)
async def test_upstream_faults_are_reported_never_passed_through_nor_retried(nationalize, fault, said, era):
    nationalize.fake.persistent = fault
    is_error, text = await predict(nationalize.url, era=era)
    assert is_error and text.startswith("Error (upstream_unavailable)") and said in text, text
    assert "Welcome to our portal" not in text and "michaelson" not in text
    assert nationalize.fake.request_count == 1


async def test_a_rejected_key_names_its_variable_and_is_not_retried(nationalize):
    nationalize.fake.keys = {}
    is_error, text = await predict(nationalize.url, api_key=API_KEY)
    assert is_error and text.startswith("Error (permission_denied)")
    assert "rejected the credential" in text and "$NATIONALIZE_API_KEY" in text and "Invalid API key" in text
    assert API_KEY not in text
    assert nationalize.fake.request_count == 1


async def test_an_inactive_subscription_says_so(nationalize):
    nationalize.fake.inactive_keys = {API_KEY}
    is_error, text = await predict(nationalize.url, api_key=API_KEY)
    assert is_error and "the subscription is not active (402)" in text
    assert nationalize.fake.request_count == 1


async def test_nationalize_refusing_a_name_is_an_invalid_argument(nationalize):
    nationalize.fake.inject(Fault("status", 422))
    is_error, text = await predict(nationalize.url)
    assert is_error and text.startswith("Error (invalid_argument)") and "Invalid 'name' parameter" in text
    assert nationalize.fake.request_count == 1


async def test_a_spent_quota_is_not_retried_says_when_it_resets_and_stops_further_requests(nationalize, era):
    nationalize.fake.exhaust("127.0.0.1")
    async with open_session(make_server(nationalize.url), era=era) as session:
        first = await session.call_error("predict_origin", {"name": "michael"})
        second = await session.call_error("predict_origin", {"name": "anna"})
        status = (await session.call_ok("quota_status")).data
    assert first.startswith("Error (upstream_unavailable)") and "request quota is spent (429" in first
    assert "It resets at" in first and RETRIED in first
    assert "quota is spent: no new name can be looked up until it resets at" in second
    assert nationalize.fake.request_count == 1  # the second call knew better than to ask
    assert status["remaining"] == 0 and status["reset_at"] is not None


async def test_a_429_that_does_not_say_when_the_quota_resets_pauses_requests_for_a_while(nationalize):
    nationalize.fake.inject(Fault("status", 429))  # no X-Rate-Limit headers at all
    async with open_session(make_server(nationalize.url)) as session:
        first = await session.call_error("predict_origin", {"name": "michael"})
        second = await session.call_error("predict_origin", {"name": "anna"})
    assert "request quota is spent (429 while looking up 1 name)" in first
    assert "did not say when it resets; this server asks again at" in second and "(in 5 min" in second
    assert nationalize.fake.request_count == 1


# -- the circuit breaker ------------------------------------------------------------------------


async def test_the_circuit_opens_after_repeated_failures_and_closes_after_a_good_trial(nationalize, era):
    clock = ManualClock()
    server = make_server(
        nationalize.url, clock=clock, breaker_threshold=3, breaker_cooldown=30, max_attempts=2
    )
    nationalize.fake.persistent = Fault("status", 503)
    async with open_session(server, era=era) as session:
        await session.call_error("predict_origin", {"name": "ann"})  # 2 failures
        opening = await session.call_error("predict_origin", {"name": "ann"})  # the 3rd opens it
        assert nationalize.fake.request_count == 3
        refused = await session.call_error("predict_origin", {"name": "ann"})
        assert nationalize.fake.request_count == 3  # open: nothing was sent
        status = (await session.call_ok("quota_status")).data
        clock.advance(10)
        later = await session.call_error("predict_origin", {"name": "ann"})
        nationalize.fake.clear_faults()
        clock.advance(21)
        healed = await session.call_ok("predict_origin", {"name": "ann"})
        closed = (await session.call_ok("quota_status")).data
    assert "circuit open" in opening and "next try is allowed in 30 s" in opening
    assert "circuit open" in refused and RETRIED in refused
    assert status["circuit"] == "open: next try in 30 s"
    assert "next try is allowed in 20 s" in later
    assert healed.data["status"] in ("ok", "unknown") and closed["circuit"] == "closed"
    assert nationalize.fake.request_count == 4


async def test_a_failed_trial_opens_the_circuit_again(nationalize):
    clock = ManualClock()
    server = make_server(
        nationalize.url, clock=clock, breaker_threshold=1, breaker_cooldown=30, max_attempts=1
    )
    nationalize.fake.persistent = Fault("status", 503)
    async with open_session(server) as session:
        await session.call_error("predict_origin", {"name": "ann"})
        clock.advance(30)
        trial = await session.call_error("predict_origin", {"name": "ann"})
        again = await session.call_error("predict_origin", {"name": "ann"})
    assert "answered HTTP 503" in trial and "paused for 30 s" in trial
    assert "next try is allowed in 30 s" in again
    assert nationalize.fake.request_count == 2


# -- batches: partial results -------------------------------------------------------------------


async def test_a_partial_quota_yields_partial_results_without_a_429(tmp_path, era):
    names = [known_name(i * 50) for i in range(40)]
    with RunningFake(FakeNationalize(free_limit=25)) as fake:
        server = make_server(fake.url, cache_url=sqlite_url(tmp_path))
        async with open_session(server, era=era) as session:
            result = (await session.call_ok("batch_predict", {"names": names})).data
            again = (await session.call_ok("batch_predict", {"names": names})).data
        sizes = [len(r.names) for r in fake.fake.requests]
    # The first answer tells the quota (15 left); then 10, then exactly the 5 that still fit.
    assert sizes == [10, 10, 5]
    assert result["statuses"].get("not fetched: quota exhausted") == 15
    assert sum(n for s, n in result["statuses"].items() if s in ("ok", "unknown")) == 25
    assert [item["status"] for item in result["results"][25:]] == ["not fetched: quota exhausted"] * 15
    assert result["retry_at"] is not None and "15 names not fetched" in result["note"]
    assert "resets at" in result["note"] and "spend no quota" in result["note"]
    # The second call sent nothing (sizes above): its 25 answers came from the cache.
    assert [status(item) for item in again["results"]] == [status(item) for item in result["results"]]


async def test_a_429_for_a_batch_too_large_sends_what_still_fits(nationalize):
    names = [known_name(i * 50) for i in range(30)]
    fake = nationalize.fake
    async with open_session(make_server(nationalize.url, concurrency=1)) as session:
        await session.call_ok("predict_origin", {"name": "warm up"})  # the server now believes 99 are left
        fake.quota_for("127.0.0.1", fake.free_limit).used = fake.free_limit - 5  # someone else spent most
        result = (await session.call_ok("batch_predict", {"names": names})).data
    statuses = [status(item) for item in result["results"]]
    # The first 10 fail whole with a 429 that says 5 remain: those 5 are sent again, the rest are not.
    assert [len(r.names) for r in fake.requests[1:]] == [10, 5]
    assert statuses[:5] != ["not fetched: quota exhausted"] * 5
    assert statuses.count("not fetched: quota exhausted") == 25


async def test_a_batch_against_a_failing_upstream_reports_each_name_and_stops_hammering(nationalize):
    names = [known_name(i * 50) for i in range(60)]
    nationalize.fake.persistent = Fault("status", 503)
    async with open_session(make_server(nationalize.url, breaker_threshold=5)) as session:
        result = (await session.call_ok("batch_predict", {"names": names})).data
    assert result["statuses"] == {"not fetched: upstream unavailable": 60}
    assert "retry later" in result["note"]
    # Without the breaker: 6 batches x 4 attempts. With it, the circuit opens after 5 failures (plus
    # attempts already in flight at that moment).
    assert nationalize.fake.request_count <= 5 + 4


async def test_a_batch_nationalize_refuses_is_split_to_find_the_name(nationalize):
    names = [known_name(i * 50) for i in range(4)]
    nationalize.fake.inject(Fault("status", 422), Fault("status", 422))
    async with open_session(make_server(nationalize.url)) as session:
        result = (await session.call_ok("batch_predict", {"names": names})).data
    statuses = [status(item) for item in result["results"]]
    assert statuses.count("invalid") == 1 and statuses.count("ok") + statuses.count("unknown") == 3
    refused = next(item for item in result["results"] if status(item) == "invalid")
    assert "nationalize.io refused it" in refused["reason"]
    assert [len(r.names) for r in nationalize.fake.requests] == [4, 1, 1, 1, 1]


async def test_a_rejected_key_fails_the_whole_batch(nationalize):
    nationalize.fake.keys = {}
    async with open_session(make_server(nationalize.url, api_key=API_KEY)) as session:
        text = await session.call_error("batch_predict", {"names": [known_name(i * 50) for i in range(30)]})
    assert text.startswith("Error (permission_denied)") and "$NATIONALIZE_API_KEY" in text
    assert nationalize.fake.request_count == 1


async def test_a_mismatched_batch_answer_is_not_believed(nationalize):
    names = [known_name(i * 50) for i in range(10)]
    nationalize.fake.inject(Fault("mismatch"))
    async with open_session(make_server(nationalize.url)) as session:
        result = (await session.call_ok("batch_predict", {"names": names})).data
    assert result["statuses"] == {"not fetched: upstream unavailable": 10}
    assert "answer 1 was for another name" in result["note"]


async def test_a_batch_that_runs_out_of_time_reports_what_it_could_not_fetch(nationalize):
    names = [known_name(i * 50) for i in range(30)]
    server = make_server(nationalize.url, call_deadline=1.0, request_deadline=10.0, read_timeout=8.0)
    async with open_session(server) as session:
        await session.call_ok("predict_origin", {"name": "warm up"})  # the quota is known: all go at once
        nationalize.fake.persistent = Fault("hang", seconds=5)
        result = (await session.call_ok("batch_predict", {"names": names})).data
    assert result["statuses"] == {"not fetched: upstream unavailable": 30}
    assert "the call's time limit of 1 s ran out" in result["note"]
