"""The console script over stdio and HTTP: the seed's call, the key never leaking, the cache across
restarts, --offline, a shared PostgreSQL cache, and the flags refused at start-up."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.harness import ERAS, VENV_BIN, Launch, http_server, open_session
from tests.name_origin.fake_nationalize import API_KEY, Fault, prediction
from tests.name_origin.helpers import known_name, launch, make_server

pytestmark = pytest.mark.slow


def with_stderr_to(base: Launch, log: Path) -> Launch:
    """``base`` with its stderr appended to ``log`` (a stdio server's stdout is the protocol)."""
    script = str(VENV_BIN / base.script)
    return Launch(
        "sh",
        ("-c", 'exec "$0" "$@" 2>>"$STDERR_LOG"', script, *base.args),
        env={**base.env, "STDERR_LOG": str(log)},
    )


async def exercise_with_a_careless_upstream(session, fake) -> list[str]:
    """Calls whose replies could carry the key: a success, an upstream error that quotes the key, a batch."""
    fake.echo_key = True
    replies = [(await session.call_ok("predict_origin", {"name": "michael"})).text]
    fake.inject(Fault("status", 401))
    replies.append(await session.call_error("predict_origin", {"name": "anna"}))
    replies.append((await session.call_ok("batch_predict", {"names": ["ann lee", "bo kim", "cy"]})).text)
    replies.append((await session.call_ok("quota_status")).text)
    return replies


@pytest.mark.parametrize("era", ERAS)
async def test_over_stdio_the_key_reaches_nationalize_and_never_a_reply_log_or_audit_line(
    nationalize, tmp_path, era
):
    stderr, audit = tmp_path / "stderr.log", tmp_path / "audit.jsonl"
    base = launch(
        nationalize.url, tmp_path / "data", "--log-level", "DEBUG", "--audit-log", str(audit), key=API_KEY
    )
    async with open_session(with_stderr_to(base, stderr), era=era) as session:
        replies = await exercise_with_a_careless_upstream(session, nationalize.fake)
    assert all(r.apikey == API_KEY for r in nationalize.fake.requests)
    assert "(apikey=[redacted])" in replies[1]  # the upstream quoted it; we did not pass it on
    assert "$NATIONALIZE_API_KEY" in replies[1]
    log = stderr.read_text()
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [line["tool"] for line in lines] == [
        "predict_origin",
        "predict_origin",
        "batch_predict",
        "quota_status",
    ]
    assert "DEBUG" in log  # the log was as verbose as it gets
    assert "(apikey=[redacted])" in log  # the upstream's error was logged, scrubbed
    for text in [*replies, log, audit.read_text()]:
        assert API_KEY not in text


async def test_over_http_the_key_never_reaches_a_reply_or_the_servers_log(nationalize, tmp_path, log_dir):
    audit = tmp_path / "audit.jsonl"
    base = launch(nationalize.url, tmp_path / "data", key=API_KEY)
    extra = ("--log-level", "DEBUG", "--audit-log", str(audit))
    with http_server(base, extra_args=extra, log_dir=log_dir) as server:
        for era in ERAS:
            async with open_session(server.url(), era=era) as session:
                replies = await exercise_with_a_careless_upstream(session, nationalize.fake)
                for text in replies:
                    assert API_KEY not in text
        log = server.log()
    assert nationalize.fake.requests and all(r.apikey == API_KEY for r in nationalize.fake.requests)
    assert API_KEY not in log and API_KEY not in audit.read_text()


@pytest.mark.parametrize("era", ERAS)
async def test_the_seeds_call_over_stdio(nationalize, tmp_path, era):
    async with open_session(launch(nationalize.url, tmp_path), era=era) as session:
        result = (await session.call_ok("predict_origin", {"name": "michael"})).data
    assert (result["name"], result["count"]) == ("michael", prediction("michael")["count"])


async def test_the_cache_survives_a_restart_and_offline_answers_from_it(nationalize, tmp_path):
    names = [known_name(i * 50) for i in range(25)]
    data = tmp_path / "data"
    async with open_session(launch(nationalize.url, data)) as session:
        first = (await session.call_ok("batch_predict", {"names": names})).data
    asked = nationalize.fake.request_count
    assert asked == 3 and "statuses" not in first  # all 25 ok
    async with open_session(launch(nationalize.url, data)) as session:
        again = (await session.call_ok("batch_predict", {"names": names})).data
    assert again == first and nationalize.fake.request_count == asked  # from the cache
    async with open_session(launch(nationalize.url, data, "--offline")) as session:
        offline = (await session.call_ok("batch_predict", {"names": [*names[:3], "never asked"]})).data
        missing = await session.call_error("predict_origin", {"name": "never asked"})
        status = (await session.call_ok("quota_status")).data
    assert [item.get("status", "ok") for item in offline["results"]] == ["ok"] * 3 + ["not fetched: offline"]
    assert offline["statuses"]["not fetched: offline"] == 1 and "--offline" in offline["note"]
    assert missing.startswith("Error (upstream_unavailable)") and "runs --offline" in missing
    assert status["offline"] is True and status["cache"]["entries"] == 25
    assert nationalize.fake.request_count == asked


async def test_replicas_share_a_postgresql_cache(nationalize, postgres_url):
    names = [known_name(i * 50) for i in range(12)]
    async with open_session(make_server(nationalize.url, cache_url=postgres_url)) as first:
        fetched = (await first.call_ok("batch_predict", {"names": names})).data
    asked = nationalize.fake.request_count
    async with open_session(make_server(nationalize.url, cache_url=postgres_url)) as second:
        shared = (await second.call_ok("batch_predict", {"names": names})).data
        status = (await second.call_ok("quota_status")).data
    assert shared == fetched and nationalize.fake.request_count == asked  # the second from the cache
    assert status["cache"]["backend"] == "postgresql" and status["cache"]["entries"] == 12


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--offline", "--no-cache"), "--offline answers from the cache only"),
        (("--cache-url", "postgresql://who:hunter2@127.0.0.1:1/none"), "cannot be opened"),
    ],
)
def test_bad_flags_are_refused_at_start_up(tmp_path, args, said):
    """Exit status 2 and one sentence, no traceback, no password (every check: test_settings.py)."""
    result = subprocess.run(
        Launch("dockyard-name-origin", args).command(),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env=Launch("dockyard-name-origin", env={"XDG_DATA_HOME": str(tmp_path)}).environment(),
    )
    assert result.returncode == 2, result.stderr
    assert said in result.stderr and "Traceback" not in result.stderr
    assert "hunter2" not in result.stderr
