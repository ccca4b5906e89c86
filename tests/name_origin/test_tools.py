"""Every dockyard-name-origin tool, the resource and the prompt, through a client session (both eras)."""

from __future__ import annotations

import json

import mcp.types as mt
import pytest

from dockyard_shared import missing_description_sections
from dockyard_shared.toolsets import Exposure
from tests.harness import open_session
from tests.name_origin.fake_nationalize import API_KEY, FakeNationalize, RunningFake, prediction
from tests.name_origin.helpers import (
    call_with_progress,
    known_name,
    make_server,
    sqlite_url,
    unknown_name,
)

TOOLS = {"predict_origin", "batch_predict", "quota_status"}


async def test_every_tool_is_described_read_only_and_small(nationalize, era):
    async with open_session(make_server(nationalize.url), era=era) as session:
        tools = await session.list_tools()
    assert {t.name for t in tools} == TOOLS
    sizes = []
    for tool in tools:
        assert missing_description_sections(tool.description) == [], tool.name
        assert len(tool.description) <= 2_048
        assert tool.annotations.read_only_hint is True
        assert tool.output_schema is not None
        sizes.append(len(tool.description) + len(json.dumps(tool.input_schema)))
    assert sum(sizes) / len(sizes) <= 800, sizes
    open_world = {t.name: t.annotations.open_world_hint for t in tools}
    assert open_world == {"predict_origin": True, "batch_predict": True, "quota_status": False}


async def test_the_default_flags_serve_batch_predict_alone_and_its_reply_is_compact(nationalize, era):
    """The everyday job at its cost (bench/chars counts the same): one tool, one-sentence instructions, a
    reply that restates nothing; the other tools are one flag away, and a call to one says which."""
    server = make_server(nationalize.url, exposure=Exposure())
    names = ["Anna Schmidt", "Kenji Tanaka", "Olusegun Adeyemi", "Maria Garcia", "Siobhan Murphy"]
    async with open_session(server, era=era) as session:
        (tool,) = await session.list_tools()
        outcome = await session.call_ok("batch_predict", {"names": names})
        off = await session.call("predict_origin", {"name": "anna"})
    assert tool.name == "batch_predict" and missing_description_sections(tool.description) == []
    schema = json.dumps(tool.input_schema, separators=(",", ":"))
    listing = len(server.instructions or "") + len(tool.name) + len(tool.description) + len(schema)
    assert listing <= 800, listing  # 764 when written
    assert json.loads(outcome.text) == outcome.data  # the text is the structured content, nothing more
    assert len(outcome.text) <= 600, outcome.text  # 504 when written
    assert set(outcome.data) == {"results"}  # all ok, one page: no counts, no note
    assert [item["name"] for item in outcome.data["results"]] == names
    for item in outcome.data["results"]:
        assert set(item) == {"name", "count", "country", "confidence"}, item
        assert all(len(pair) == 2 and pair[1] == round(pair[1], 2) > 0 for pair in item["country"])
    assert off.is_error and "--toolsets default,details" in off.text


async def test_the_seeds_exact_call_still_answers_with_its_fields(nationalize, era):
    """The reference server's call, ``predict_origin {"name": "michael"}``: same fields, more beside."""
    async with open_session(make_server(nationalize.url), era=era) as session:
        result = (await session.call_ok("predict_origin", {"name": "michael"})).data
    upstream = prediction("michael")
    assert result["name"] == "michael" and result["count"] == upstream["count"]
    assert [{k: c[k] for k in ("country_id", "probability")} for c in result["country"]] == upstream[
        "country"
    ]
    assert all(c["country_name"] for c in result["country"])
    assert result["status"] == "ok" and result["cached"] is False
    (request,) = nationalize.fake.requests
    assert request.names == ("michael",) and not request.batch and request.apikey is None


async def test_a_name_is_normalised_and_looked_up_once(nationalize, tmp_path, era):
    server = make_server(nationalize.url, cache_url=sqlite_url(tmp_path))
    async with open_session(server, era=era) as session:
        first = (await session.call_ok("predict_origin", {"name": "  ZOE\u0308 Smith "})).data
        second = (await session.call_ok("predict_origin", {"name": "zoë   SMITH"})).data
    assert first["name"] == second["name"] == "zoë smith"
    assert (first["cached"], second["cached"]) == (False, True)
    assert nationalize.fake.names_asked() == ["zoë smith"]


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "it is empty"),
        ("   ", "it is empty"),
        ("1234 5678", "it has no letters"),
        ("x" * 101, "longer than 100 characters"),
        ("ann\x00e", "control"),
    ],
)
async def test_an_invalid_name_is_refused_before_any_request(nationalize, name, reason):
    async with open_session(make_server(nationalize.url)) as session:
        text = await session.call_error("predict_origin", {"name": name})
    assert text.startswith("Error (invalid_argument)") and reason in text
    assert "Nothing was sent to nationalize.io" in text
    assert nationalize.fake.request_count == 0


async def test_an_unknown_name_is_an_answer_not_an_error(nationalize, era):
    name = unknown_name()
    async with open_session(make_server(nationalize.url), era=era) as session:
        result = (await session.call_ok("predict_origin", {"name": name})).data
    assert result["status"] == "unknown" and result["count"] == 0 and result["country"] == []
    assert result["confidence"] == "none" and "no record of this name" in result["note"]


async def test_a_single_word_gets_the_note_that_surnames_say_more(nationalize):
    async with open_session(make_server(nationalize.url)) as session:
        single = (await session.call_ok("predict_origin", {"name": "michael"})).data
        full = (await session.call_ok("predict_origin", {"name": known_name()})).data
    assert "surnames carry most of the signal" in single["note"]
    assert full["note"] is None


async def test_the_api_key_goes_to_nationalize_and_nowhere_else(nationalize):
    async with open_session(make_server(nationalize.url, api_key=API_KEY)) as session:
        reply = await session.call_ok("predict_origin", {"name": "michael"})
        status = await session.call_ok("quota_status")
    assert nationalize.fake.requests[0].apikey == API_KEY
    assert status.data["limit"] == 10_000 and "$NATIONALIZE_API_KEY" in status.data["note"]
    assert API_KEY not in reply.text + status.text


# -- batch_predict ------------------------------------------------------------------------------


async def test_a_batch_is_deduplicated_sent_ten_to_a_request_and_answered_in_input_order(nationalize, era):
    distinct = [known_name(i * 50) for i in range(23)]
    names = [*distinct, distinct[0].upper(), f"  {distinct[1]}", "", "42", unknown_name()]
    async with open_session(make_server(nationalize.url), era=era) as session:
        result = (await session.call_ok("batch_predict", {"names": names})).data
    items = result["results"]
    assert len(items) == len(names)
    assert [item["name"] for item in items] == names  # as given: one lookup for a name and its variants
    assert items[23] | {"name": distinct[0]} == items[0] and items[24] | {"name": distinct[1]} == items[1]
    assert [items[25]["status"], items[26]["status"]] == ["invalid", "invalid"]
    assert items[25]["reason"] == "it is empty" and items[26]["reason"] == "it has no letters"
    assert items[27]["status"] == "unknown" and items[27]["confidence"] == "none"
    first = items[0]
    assert "status" not in first  # ok
    upstream = prediction(distinct[0])
    assert first["count"] == upstream["count"] and 1 <= len(first["country"]) <= 3
    assert first["country"][0] == [
        upstream["country"][0]["country_id"],
        round(upstream["country"][0]["probability"], 2),
    ]
    assert result["statuses"] == {"ok": 25, "invalid": 2, "unknown": 1}
    # 24 distinct valid names: 10 + 10 + 4, each name asked once.
    sizes = sorted(len(r.names) for r in nationalize.fake.requests)
    assert sizes == [4, 10, 10]
    assert sorted(nationalize.fake.names_asked()) == sorted([*distinct, names[-1]])
    assert all(r.batch for r in nationalize.fake.requests if len(r.names) > 1)


async def test_a_batch_reports_progress_while_it_works(nationalize, era):
    names = [known_name(i * 50) for i in range(40)]
    async with open_session(make_server(nationalize.url), era=era) as session:
        outcome, progress = await call_with_progress(session, "batch_predict", {"names": names})
    assert not outcome.is_error, outcome.text
    assert len(progress) >= 3
    values = [p[0] for p in progress]
    assert values == sorted(values) and values[-1] == 40
    assert all(total == 40 for _, total, _ in progress)
    assert progress[0][2] == "0 of 40 names answered from the cache"


async def test_cached_names_are_answered_without_any_request(nationalize, tmp_path, era):
    names = [known_name(i * 50) for i in range(30)]
    cache = sqlite_url(tmp_path)
    async with open_session(make_server(nationalize.url, cache_url=cache), era=era) as session:
        first = (await session.call_ok("batch_predict", {"names": names})).data
        asked = nationalize.fake.request_count
        again = (await session.call_ok("batch_predict", {"names": list(reversed(names))})).data
        one = (await session.call_ok("predict_origin", {"name": names[3]})).data
    assert asked == 3 and sorted(nationalize.fake.names_asked()) == sorted(names)
    assert again["results"] == list(reversed(first["results"]))
    assert one["cached"] is True
    assert nationalize.fake.request_count == asked
    # and after a restart: a new server on the same cache
    async with open_session(make_server(nationalize.url, cache_url=cache), era=era) as session:
        restarted = (await session.call_ok("batch_predict", {"names": names})).data
    assert restarted == first and nationalize.fake.request_count == asked


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"names": []}, "names is empty"),
        ({"names": ["ann"] * 1_001}, "1,001 names is over the limit of 1,000 per call"),
        ({"names": ["ann"], "offset": 1}, "offset 1 is outside the 1 names given"),
        ({"names": ["ann"], "offset": -1}, "offset"),
    ],
)
async def test_a_batch_out_of_bounds_is_refused(nationalize, arguments, message):
    async with open_session(make_server(nationalize.url)) as session:
        text = await session.call_error("batch_predict", arguments)
    assert text.startswith("Error (invalid_argument)") and message in text
    assert nationalize.fake.request_count == 0


async def test_a_large_batch_is_fetched_whole_and_read_in_pages(tmp_path, era):
    names = [f"given{i} family{i}" for i in range(1_000)]
    with RunningFake(FakeNationalize(free_limit=5_000)) as fake:
        server = make_server(fake.url, cache_url=sqlite_url(tmp_path))
        async with open_session(server, era=era) as session:
            pages, offset = [], 0
            while True:
                outcome = await session.call_ok("batch_predict", {"names": names, "offset": offset})
                assert len(outcome.text) < 100_000  # about 25,000 tokens: what hosts accept
                pages.append(outcome.data)
                offset = outcome.data.get("next_offset")
                if offset is None:
                    break
        assert fake.fake.request_count == 100  # all fetched by the first call, 10 names a request
    assert len(pages) > 1  # and only the first call asked nationalize (above)
    assert f"offset={pages[0]['next_offset']}" in pages[0]["note"]
    answered = [item["name"] for page in pages for item in page["results"]]
    assert answered == names


# -- quota_status, the resource, the prompt, the filters ----------------------------------------


async def test_quota_status_reports_the_quota_the_circuit_and_the_cache(nationalize, tmp_path, era):
    server = make_server(nationalize.url, cache_url=sqlite_url(tmp_path))
    async with open_session(server, era=era) as session:
        before = (await session.call_ok("quota_status")).data
        await session.call_ok("batch_predict", {"names": ["ann lee", "bo kim", "ann lee", "cy"]})
        await session.call_ok("predict_origin", {"name": "bo kim"})
        after = (await session.call_ok("quota_status")).data
    assert before["observed_at"] is None and "not known" in before["note"]
    assert before["cache"]["entries"] == 0 and before["circuit"] == "closed"
    assert (after["limit"], after["remaining"]) == (100, 97)
    assert after["reset_at"] > after["observed_at"]
    assert after["cache"] == {
        "enabled": True,
        "backend": "sqlite",
        "entries": 3,
        "ttl_days": 30.0,
        "hits": 1,
        "misses": 3,
        "hit_rate": 0.25,
    }
    assert "no API key" in after["note"]


async def test_the_iso_3166_table_is_a_resource(nationalize, era):
    async with open_session(make_server(nationalize.url), era=era) as session:
        uris = {str(r.uri) for r in await session.list_resources()}
        table = json.loads(await session.read_resource("iso3166://countries"))
    assert "iso3166://countries" in uris
    assert table["FR"] == "France" and table["XK"] == "Kosovo" and len(table) >= 250


async def test_the_prompt_interprets_predictions_as_facts_about_names_not_people(nationalize, era):
    async with open_session(make_server(nationalize.url), era=era) as session:
        (text,) = await session.get_prompt("interpret_name_origin", {"names": "Ada Lovelace, Alan Turing"})
    assert "for: Ada Lovelace, Alan Turing" in text
    assert "not a fact about any person" in text and "profile" in text


async def test_an_excluded_tool_cannot_be_listed_or_called(nationalize, era):
    server = make_server(
        nationalize.url, exposure=Exposure(toolsets=("default", "details"), exclude_tools=("batch_predict",))
    )
    async with open_session(server, era=era) as session:
        assert await session.tool_names() == TOOLS - {"batch_predict"}
        outcome = await session.call("batch_predict", {"names": ["ann"]})
    assert outcome.is_error and "switched off" in outcome.text and "--exclude-tools" in outcome.text
    assert nationalize.fake.request_count == 0


async def test_the_prompts_names_complete_from_the_cache(nationalize, tmp_path, era):
    server = make_server(nationalize.url, cache_url=sqlite_url(tmp_path))
    prompt = mt.PromptReference(type="ref/prompt", name="interpret_name_origin")
    async with open_session(server, era=era) as session:
        await session.call_ok("batch_predict", {"names": ["anna lee", "anna_b", "annabel", "bo kim"]})
        single = await session.complete(prompt, "names", "ANNA")
        listed = await session.complete(prompt, "names", "bo kim, anna_")
        wildcard = await session.complete(prompt, "names", "%")
    assert single == ["anna lee", "anna_b", "annabel"]
    assert listed == ["bo kim, anna_b"]
    assert wildcard == []
    assert nationalize.fake.request_count == 1
