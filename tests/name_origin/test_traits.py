"""predict_traits through a client session (both eras) against the fake Demografix: genderize, agify and
nationalize on three ports, one key, one quota."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from dockyard_name_origin.server import create_server
from dockyard_name_origin.settings import Settings
from dockyard_shared.toolsets import Exposure
from tests.harness import open_session
from tests.name_origin.fake_nationalize import (
    API_KEY,
    FakeNationalize,
    Fault,
    RunningDemografix,
)
from tests.name_origin.fake_traits import age_prediction, gender_prediction
from tests.name_origin.helpers import FAST, call_with_progress, sqlite_url

TRAITS = Exposure(toolsets=("all",))


@pytest.fixture
def demografix() -> Iterator[RunningDemografix]:
    with RunningDemografix() as running:
        yield running


def server(
    running: RunningDemografix,
    *,
    cache: Path | None = None,
    api_key: str | None = None,
    offline: bool = False,
    exposure: Exposure = TRAITS,
    **limits: Any,
):
    return create_server(
        Settings(
            api_url=running.url,
            genderize_url=running.genderize_url,
            agify_url=running.agify_url,
            api_key=api_key,
            cache_url=sqlite_url(cache) if cache else None,
            offline=offline,
            limits=replace(FAST, **limits),
            exposure=exposure,
        )
    )


def given_names(
    count: int, *, known: bool = True, api: str = "genderize", country: str | None = None
) -> list[str]:
    """``count`` given names the fake knows (or does not) worldwide or in ``country``, as single words."""
    predict = gender_prediction if api == "genderize" else age_prediction
    names = (f"given{chr(97 + i % 26)}{'x' * (i // 26)}" for i in range(10_000))
    return [name for name in names if (predict(name, country)["count"] > 0) == known][:count]


def asked(running: RunningDemografix, api: str) -> list[tuple[str, ...]]:
    return [request.names for request in running.fake.requests if request.api == api]


async def test_predict_traits_is_off_by_default_and_read_only_when_on(demografix, era):
    async with open_session(server(demografix, exposure=Exposure()), era=era) as session:
        default = {tool.name for tool in await session.list_tools()}
    async with open_session(server(demografix), era=era) as session:
        tools = {tool.name: tool for tool in await session.list_tools()}
    assert "predict_traits" not in default and "batch_predict" in default
    tool = tools["predict_traits"]
    assert tool.annotations.read_only_hint is True and tool.annotations.open_world_hint is True
    assert set(tool.input_schema["required"]) == {"names", "what"}


async def test_a_gender_batch_goes_ten_to_a_request_in_input_order_with_the_key(demografix, era):
    names = given_names(23)
    async with open_session(server(demografix, api_key=API_KEY), era=era) as session:
        result = (await session.call_ok("predict_traits", {"names": names, "what": "gender"})).data
    items = result["results"]
    assert [item["looked_up"] for item in items] == names
    for item, name in zip(items, names, strict=True):
        upstream = gender_prediction(name)
        assert (item["gender"], item["probability"], item["count"]) == (
            upstream["gender"],
            upstream["probability"],
            upstream["count"],
        )
        assert item["confidence"] in ("low", "medium", "high")
        assert item.get("low_sample", False) == (upstream["count"] < 100)
    assert sorted(len(names) for names in asked(demografix, "genderize")) == [3, 10, 10]
    assert result["upstream_requests"] == 3 and result["statuses"] == {"ok": 23}
    assert all(request.apikey == API_KEY for request in demografix.fake.requests)
    assert "never the person who bears it" in result["note"]


async def test_an_age_answer_is_never_high_confidence_and_says_why(demografix, era):
    names = given_names(10, api="agify")
    async with open_session(server(demografix), era=era) as session:
        result = (await session.call_ok("predict_traits", {"names": names, "what": "age"})).data
    assert [item["age"] for item in result["results"]] == [age_prediction(n)["age"] for n in names]
    assert {item["confidence"] for item in result["results"]} <= {"low", "medium"}
    assert "no spread" in result["note"] and asked(demografix, "agify") == [tuple(names)]


async def test_a_cached_name_spends_no_second_request(demografix, tmp_path, era):
    names = [*given_names(12, country="DE"), *given_names(2, known=False, country="DE")]
    arguments = {"names": names, "what": "gender", "country_id": "de"}
    async with open_session(server(demografix, cache=tmp_path), era=era) as session:
        first = (await session.call_ok("predict_traits", arguments)).data
        before = demografix.fake.request_count
        second = (await session.call_ok("predict_traits", arguments)).data
        worldwide = (await session.call_ok("predict_traits", {**arguments, "country_id": None})).data
    assert first["upstream_requests"] == 2 and first["from_cache"] == 0
    assert second["upstream_requests"] == 0 and second["from_cache"] == len(names)
    assert second["results"] == first["results"]
    assert [item["status"] for item in second["results"]][-2:] == ["unknown", "unknown"]
    # A localised answer is another answer: worldwide is fetched, not taken from the DE rows.
    assert worldwide["upstream_requests"] == 2 and demografix.fake.request_count == before + 2


async def test_country_id_localises_every_name_and_is_echoed(demografix, era):
    names = given_names(3)
    async with open_session(server(demografix), era=era) as session:
        result = (
            await session.call_ok("predict_traits", {"names": names, "what": "gender", "country_id": " jp"})
        ).data
    assert result["country_id"] == "JP" and "Localised to JP" in result["note"]
    assert [item["count"] for item in result["results"]] == [
        gender_prediction(n, "JP")["count"] for n in names
    ]
    (request,) = demografix.fake.requests
    assert request.country_id == "JP" and request.api == "genderize"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"what": "gender", "country_id": "ZZ"}, "not an ISO 3166-1 alpha-2 code"),
        ({"what": "age", "country_id": "USA"}, "not an ISO 3166-1 alpha-2 code"),
        ({"what": "age", "country_id": "u\x00"}, "not an ISO 3166-1 alpha-2 code"),
        ({"what": "origin", "country_id": "US"}, "localises gender and age only"),
        ({"what": "gender", "names": []}, "names is empty"),
        ({"what": "gender", "names": ["anna"] * 101}, "over the limit of 100"),
    ],
)
async def test_a_bad_call_is_refused_before_any_request(demografix, arguments, expected):
    async with open_session(server(demografix)) as session:
        text = await session.call_error("predict_traits", {"names": ["anna"], **arguments})
    assert text.startswith("Error (invalid_argument)") and expected in text
    assert demografix.fake.request_count == 0


async def test_an_address_or_handle_is_parsed_shown_and_its_confidence_lowered(demografix, era):
    inputs = ["Jane.Doe+shop@example.com", "jdoe_1987", "Michael Smith"]
    async with open_session(server(demografix), era=era) as session:
        gender = (await session.call_ok("predict_traits", {"names": inputs, "what": "gender"})).data
        origin = (await session.call_ok("predict_traits", {"names": inputs, "what": "origin"})).data
    jane, jdoe, michael = gender["results"]
    assert jane["parse"] == "email -> given 'jane', surname 'doe'" and jane["looked_up"] == "jane"
    assert jdoe["status"] == "invalid" and "only the initial 'j'" in jdoe["reason"]
    assert "parse" not in michael and michael["looked_up"] == "michael"
    if jane["confidence"] != "low" or "lowered" in jane:
        assert jane["lowered"].endswith("some addresses put the surname first)")
    assert [item["looked_up"] for item in origin["results"]] == ["jane doe", "doe", "michael smith"]
    assert origin["results"][1]["parse"] == "handle -> initial 'j', surname 'doe'"
    assert "inputs were read as an e-mail address or handle" in origin["note"]
    sent = " ".join(name for request in demografix.fake.requests for name in request.names)
    assert "example" not in sent and "1987" not in sent and "shop" not in sent


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("x" * 20_000, "longer than 320 characters"),
        ("ann\x00e.doe@example.com", "control"),
        ("\u202ejane.doe", "control"),
        ("1987_2024", "no letters"),
        ("info@example.com", "role mailbox"),
        ("@@@", "no letters"),
    ],
)
async def test_a_hostile_input_is_an_invalid_item_and_spends_nothing(demografix, raw, reason, era):
    async with open_session(server(demografix), era=era) as session:
        result = (await session.call_ok("predict_traits", {"names": [raw], "what": "age"})).data
    (item,) = result["results"]
    assert item["status"] == "invalid" and reason in item["reason"] and len(item["input"]) <= 101
    assert demografix.fake.request_count == 0 and result["upstream_requests"] == 0


async def test_the_quota_is_one_for_the_three_apis_and_a_spent_one_sends_nothing(era):
    with RunningDemografix(FakeNationalize(keys={API_KEY: 15})) as running:
        async with open_session(server(running, api_key=API_KEY), era=era) as session:
            await session.call_ok("batch_predict", {"names": [f"origin{i} name" for i in range(10)]})
            gender = (
                await session.call_ok("predict_traits", {"names": given_names(10), "what": "gender"})
            ).data
            before = running.fake.request_count
            age = (
                await session.call_ok("predict_traits", {"names": given_names(3, api="agify"), "what": "age"})
            ).data
            quota = (await session.call_ok("quota_status")).data
    assert gender["statuses"] == {"ok": 5, "not fetched: quota exhausted": 5}
    assert asked(running, "genderize") == [
        tuple(given_names(10)[:5])
    ]  # never a batch larger than what is left
    assert gender["retry_at"] and "nationalize, genderize and agify share" in gender["note"]
    assert age["statuses"] == {"not fetched: quota exhausted": 3} and running.fake.request_count == before
    assert quota["remaining"] == 0 and quota["limit"] == 15


async def test_a_refused_key_is_an_error_naming_genderize(demografix):
    async with open_session(server(demografix, api_key="nat_wrong")) as session:
        text = await session.call_error("predict_traits", {"names": ["anna"], "what": "gender"})
    assert "genderize.io" in text and "nationalize.io" not in text and "nat_wrong" not in text


async def test_an_answer_for_another_country_is_discarded_not_passed_on(demografix):
    body = b'{"count": 50, "name": "anna", "gender": "female", "probability": 0.99, "country_id": "US"}'
    demografix.fake.inject(Fault("body", body=body))
    async with open_session(server(demografix)) as session:
        result = (
            await session.call_ok("predict_traits", {"names": ["anna"], "what": "gender", "country_id": "DE"})
        ).data
    (item,) = result["results"]
    assert item["status"] == "not fetched: upstream unavailable" and "gender" not in item
    assert "was for country US" in result["note"]


async def test_offline_answers_from_the_cache_and_lists_the_rest(demografix, tmp_path):
    names = given_names(4)
    async with open_session(server(demografix, cache=tmp_path)) as session:
        await session.call_ok("predict_traits", {"names": names[:2], "what": "gender"})
    count = demografix.fake.request_count
    async with open_session(server(demografix, cache=tmp_path, offline=True)) as session:
        result = (await session.call_ok("predict_traits", {"names": names, "what": "gender"})).data
    assert result["statuses"] == {"ok": 2, "not fetched: offline": 2}
    assert "--offline" in result["note"] and demografix.fake.request_count == count


async def test_the_prompt_speaks_of_gender_and_age_as_statements_about_names(demografix, era):
    async with open_session(server(demografix), era=era) as session:
        text = " ".join(await session.get_prompt("interpret_name_origin", {"names": "jane.doe@example.com"}))
    assert "never tell a" in text and "non-binary" in text and "never read digits as a birth year" in text


async def test_a_what_it_does_not_predict_is_refused_with_the_choices(demografix):
    async with open_session(server(demografix)) as session:
        text = await session.call_error("predict_traits", {"names": ["anna"], "what": "ethnicity"})
    assert "gender" in text and "age" in text and "origin" in text and "Traceback" not in text
    assert demografix.fake.request_count == 0


async def test_the_trait_cache_is_shared_through_postgresql(demografix, postgres_url):
    names = given_names(5, api="agify")

    def on_postgres():
        return create_server(
            Settings(
                api_url=demografix.url,
                genderize_url=demografix.genderize_url,
                agify_url=demografix.agify_url,
                cache_url=postgres_url,
                limits=FAST,
                exposure=TRAITS,
            )
        )

    async with open_session(on_postgres()) as session:
        first = (await session.call_ok("predict_traits", {"names": names, "what": "age"})).data
    async with open_session(on_postgres()) as other_replica:
        second = (await other_replica.call_ok("predict_traits", {"names": names, "what": "age"})).data
    assert first["upstream_requests"] == 1 and second["upstream_requests"] == 0
    assert second["from_cache"] == 5 and second["results"] == first["results"]


async def test_an_echoed_key_is_scrubbed_and_the_log_names_the_service_asked(caplog):
    fake = FakeNationalize(echo_key=True, inactive_keys={API_KEY})
    with RunningDemografix(fake) as running, caplog.at_level("WARNING", logger="dockyard.name_origin"):
        async with open_session(server(running, api_key=API_KEY)) as session:
            text = await session.call_error("predict_traits", {"names": ["anna"], "what": "age"})
    assert "agify.io" in text and API_KEY not in text and "[redacted]" in text
    logged = " ".join(record.getMessage() for record in caplog.records)
    assert "agify.io" in logged and "nationalize.io" not in logged and API_KEY not in logged


async def test_concurrent_calls_for_the_same_names_pay_for_each_once(era):
    names = given_names(10)
    with RunningDemografix(FakeNationalize(latency=0.3)) as running:
        built = server(running)
        results: list[dict] = []

        async def call() -> None:
            async with open_session(built, era=era) as session:
                results.append(
                    (await session.call_ok("predict_traits", {"names": names, "what": "gender"})).data
                )

        async with anyio.create_task_group() as group:
            group.start_soon(call)
            group.start_soon(call)
    assert sorted(name for request in asked(running, "genderize") for name in request) == sorted(names)
    assert results[0]["results"] == results[1]["results"]
    assert sorted(result["from_cache"] for result in results) == [0, 10]


async def test_a_batch_reports_progress_while_it_works(demografix, era):
    names = given_names(25, api="agify")
    async with open_session(server(demografix), era=era) as session:
        outcome, progress = await call_with_progress(
            session, "predict_traits", {"names": names, "what": "age"}
        )
    assert not outcome.is_error, outcome.text
    assert [p[0] for p in progress] == sorted(p[0] for p in progress) and progress[-1][0] == 25
    assert len(progress) >= 3 and all(total == 25 for _, total, _ in progress)


async def test_a_quota_spent_elsewhere_is_a_429_that_is_not_retried(era):
    fake = FakeNationalize(keys={API_KEY: 50})
    fake.exhaust(API_KEY)  # spent by another client of the key, on any of the three APIs
    with RunningDemografix(fake) as running:
        async with open_session(server(running, api_key=API_KEY), era=era) as session:
            first = (
                await session.call_ok("predict_traits", {"names": given_names(12), "what": "gender"})
            ).data
            text = await session.call_error("predict_origin", {"name": "anna"})
    assert first["statuses"] == {"not fetched: quota exhausted": 12} and first["retry_at"]
    assert len(running.fake.requests) == 1  # one 429, then the ledger knows: nothing more is sent
    assert "quota is spent" in text


async def test_a_refused_batch_is_asked_name_by_name(demografix):
    names = given_names(3)
    demografix.fake.inject(Fault("status", status=422))
    async with open_session(server(demografix)) as session:
        result = (await session.call_ok("predict_traits", {"names": names, "what": "gender"})).data
    assert result["statuses"] == {"ok": 3}
    requests = asked(demografix, "genderize")
    # The batch first, then each name alone: those go out concurrently, so in any order.
    assert requests[0] == tuple(names) and sorted(requests[1:]) == [(name,) for name in sorted(names)]
