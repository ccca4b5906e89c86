"""The pure parts: normalising and checking names, confidence, reading nationalize's answers, the quota
ledger and the country table."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from dockyard_name_origin.client import UpstreamFault, parse_answers
from dockyard_name_origin.countries import country_name, country_table
from dockyard_name_origin.models import Answer
from dockyard_name_origin.predict import confidence, invalid_reason, normalise
from dockyard_name_origin.quota import QuotaLedger, describe_wait
from dockyard_shared.upstream import RateLimit

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("Michael", "michael"),
        ("  MICHAEL \n", "michael"),
        ("Jean   Pierre", "jean pierre"),
        ("Zoe\u0308", "zo\u00eb"),  # decomposed ë becomes the composed one
        ("STRASSE", "strasse"),
        ("Straße", "strasse"),  # case folding, not lower()
        ("O'Brien-Smith", "o'brien-smith"),
    ],
)
def test_names_are_normalised_to_one_form(raw, normal):
    assert normalise(raw) == normal


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "it is empty"),
        ("   \t ", "it is empty"),
        ("12345", "it has no letters"),
        ("--- !!", "it has no letters"),
        ("a" * 101, "it is longer than 100 characters"),
        ("ann\x00e", "it holds control, private-use or unpaired surrogate characters"),
        ("ann\ud800", "it holds control, private-use or unpaired surrogate characters"),
        (42, "it is not a string"),
    ],
)
def test_names_that_cannot_be_looked_up_say_why(raw, reason):
    assert invalid_reason(raw, 100) == reason


@pytest.mark.parametrize("raw", ["michael", "a" * 100, "李小龍", "José María", "o'neil"])
def test_ordinary_names_are_valid(raw):
    assert invalid_reason(raw, 100) is None


def answer(count: int, *probabilities: float) -> Answer:
    return Answer("x", count, tuple((f"C{i}"[:2], p) for i, p in enumerate(probabilities)), NOW)


@pytest.mark.parametrize(
    ("count", "top", "label"),
    [
        (0, None, "none"),
        (12, 0.9, "low"),  # a name seen 12 times says little, however lopsided
        (120_000, 0.1, "low"),  # a common name spread thin says little too
        (500, 0.6, "medium"),
        (120_000, 0.35, "medium"),
        (120_000, 0.6, "high"),
        (1_000, 0.5, "high"),
    ],
)
def test_confidence_weighs_the_sample_size_and_the_lead(count, top, label):
    probabilities = () if top is None else (top,)
    assert confidence(answer(count, *probabilities)) == label


def parse(body, *, content_type="application/json; charset=utf-8", asked=("michael",), batch=False):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return parse_answers(raw, content_type, list(asked), batch=batch, normalise=normalise, fetched_at=NOW)


def test_a_single_answer_is_read_with_countries_most_likely_first():
    (got,) = parse(
        {
            "count": 42,
            "name": "Michael",
            "country": [
                {"country_id": "IE", "probability": 0.1},
                {"country_id": "US", "probability": 0.3},
            ],
        }
    )
    assert got == Answer("michael", 42, (("US", 0.3), ("IE", 0.1)), NOW)


def test_a_batch_answer_is_read_in_order():
    body = [{"count": 0, "name": n, "country": []} for n in ("ann", "bob")]
    assert [a.name for a in parse(body, asked=("ann", "bob"), batch=True)] == ["ann", "bob"]


@pytest.mark.parametrize(
    ("body", "content_type", "fault"),
    [
        (b"<html>hello</html>", "text/html", "content type was 'text/html'"),
        (b"", "", "content type was 'missing'"),
        (b'{"count": 1, "na', "application/json", "not valid JSON"),
        (b"\xff\xfe", "application/json", "not valid JSON"),
        ([], "application/json", "shape"),
        ({"count": "many", "name": "michael", "country": []}, "application/json", "shape"),
        ({"count": True, "name": "michael", "country": []}, "application/json", "shape"),
        ({"count": -1, "name": "michael", "country": []}, "application/json", "shape"),
        (
            {"count": 1, "name": "michael", "country": [{"country_id": "usa", "probability": 0.5}]},
            "application/json",
            "shape",
        ),
        (
            {"count": 1, "name": "michael", "country": [{"country_id": "US", "probability": 1.5}]},
            "application/json",
            "shape",
        ),
        ({"count": 1, "name": "michaela", "country": []}, "application/json", "another name"),
    ],
)
def test_answers_that_are_not_nationalizes_are_faults(body, content_type, fault):
    with pytest.raises(UpstreamFault, match=fault):
        parse(body, content_type=content_type)


def test_a_batch_answer_with_a_missing_name_is_a_fault():
    body = [{"count": 0, "name": "ann", "country": []}]
    with pytest.raises(UpstreamFault, match="one answer for each of the 2 names"):
        parse(body, asked=("ann", "bob"), batch=True)


def test_a_batch_answered_out_of_order_is_a_fault():
    body = [{"count": 0, "name": n, "country": []} for n in ("bob", "ann")]
    with pytest.raises(UpstreamFault, match="answer 1 was for another name"):
        parse(body, asked=("ann", "bob"), batch=True)


def rate(remaining: int, reset_in: float, *, at: datetime = NOW, limit: int = 100) -> RateLimit:
    return RateLimit(
        limit=limit, remaining=remaining, reset_at=at + timedelta(seconds=reset_in), observed_at=at
    )


def test_the_ledger_sends_everything_while_the_quota_is_unknown():
    ledger = QuotaLedger(lambda: NOW)
    assert not ledger.known and ledger.reserve(10) == 10


def test_the_ledger_never_reserves_more_than_what_is_left():
    ledger = QuotaLedger(lambda: NOW)
    ledger.observe(rate(15, 3600))
    assert ledger.reserve(10) == 10
    assert ledger.reserve(10) == 5  # the first 10 are still in flight
    assert ledger.reserve(10) == 0 and ledger.spent()
    ledger.release(15)
    ledger.observe(rate(5, 3599))
    assert ledger.reserve(10) == 5


def test_a_late_answer_with_an_older_figure_does_not_raise_the_remaining_quota():
    ledger = QuotaLedger(lambda: NOW)
    ledger.observe(rate(40, 3600))
    ledger.observe(rate(60, 3601))  # sent earlier, answered later
    assert ledger.remaining == 40
    ledger.observe(rate(100, 90_000))  # a new window
    assert ledger.remaining == 100


def test_a_spent_quota_comes_back_after_its_reset_time():
    now = [NOW]
    ledger = QuotaLedger(lambda: now[0])
    ledger.observe(rate(0, 60))
    assert ledger.spent() and ledger.reserve(3) == 0
    problem = ledger.exhausted_problem()
    assert "resets at 2026-11-24T12:01:00Z (in 1 min 0 s)" in problem.what and problem.retryable
    now[0] = NOW + timedelta(seconds=61)
    assert not ledger.spent() and ledger.reserve(3) == 3


def test_a_spent_quota_without_a_reset_time_is_tried_again_after_five_minutes():
    now = [NOW]
    ledger = QuotaLedger(lambda: now[0])
    ledger.remaining, ledger.observed_at = 0, NOW  # what a 429 without headers leaves
    assert ledger.spent() and ledger.retry_at() == NOW + timedelta(minutes=5)
    assert (
        "did not say when it resets; this server asks again at 2026-11-24T12:05:00Z"
        in ledger.exhausted_problem().what
    )
    now[0] = NOW + timedelta(minutes=5, seconds=1)
    assert not ledger.spent() and ledger.reserve(10) == 10


def test_waits_are_described_in_words():
    assert (
        describe_wait(NOW + timedelta(hours=3, minutes=20), NOW) == " at 2026-11-24T15:20:00Z (in 3 h 20 min)"
    )
    assert describe_wait(NOW + timedelta(seconds=9), NOW) == " at 2026-11-24T12:00:09Z (in 9 s)"
    assert describe_wait(None, NOW) == ""


def test_the_country_table_has_every_iso_code_and_nationalizes_kosovo():
    table = country_table()
    assert len(table) >= 249
    assert table["DE"] == "Germany" and table["KR"] == "Korea, Republic of"
    assert country_name("xk") == "Kosovo" and country_name("ZZ") is None
