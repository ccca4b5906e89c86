"""--audit-log: one JSON line per tool call, resource read and prompt render, secrets redacted, through a
real process."""

from __future__ import annotations

import json

import pytest

from tests.harness import Launch, open_session
from tests.interop.conftest import launch_for

pytestmark = pytest.mark.slow


def audited(data_dir, audit) -> Launch:
    """The toy server as a process, writing its audit log to ``audit``."""
    base = launch_for("toy", data_dir)
    return Launch(base.script, (*base.args, "--audit-log", str(audit)), env=base.env, cwd=base.cwd)


async def test_every_call_is_logged_with_outcome_duration_and_redacted_secrets(tmp_path, data_dir):
    audit = tmp_path / "audit.jsonl"
    launch = audited(data_dir, audit)
    secret = "ghp_" + "s" * 36
    async with open_session(launch) as session:
        await session.call_ok("add", {"a": 1, "b": 2})
        await session.call_error("word", {"name": f"token {secret}"})
        await session.call_error("crash")
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(r["tool"], r["outcome"]) for r in records] == [
        ("add", "ok"),
        ("word", "error"),
        ("crash", "error"),
    ]
    assert records[0]["arguments"] == {"a": 1, "b": 2} and records[0]["server"] == "toy"
    assert all(r["kind"] == "tool" for r in records)
    assert records[1]["error_category"] == "not_found" and records[2]["error_category"] == "internal"
    assert all(r["duration_ms"] >= 0 and r["time"].endswith("+00:00") for r in records)
    assert secret not in audit.read_text()


async def test_resource_reads_and_prompt_renders_are_logged_like_tool_calls(tmp_path, data_dir):
    audit = tmp_path / "audit.jsonl"
    launch = audited(data_dir, audit)
    secret = "ghp_" + "p" * 36
    async with open_session(launch) as session:
        assert await session.read_resource("toy://words/alpha") == "the word alpha"
        with pytest.raises(Exception, match="no word"):
            await session.read_resource("toy://words/omega")
        with pytest.raises(Exception, match="not found"):
            await session.read_resource("nothing://here")
        assert await session.get_prompt("greet", {"name": f"Ann {secret}"})
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(r.get("resource") or r.get("prompt"), r["outcome"]) for r in records] == [
        ("toy://words/alpha", "ok"),
        ("toy://words/omega", "error"),
        ("nothing://here", "error"),
        ("greet", "ok"),
    ]
    assert [r["kind"] for r in records] == ["resource", "resource", "resource", "prompt"]
    assert [r.get("error_category") for r in records] == [None, "not_found", "not_found", None]
    assert records[0]["server"] == "toy" and records[3]["arguments"] == {"name": "Ann [redacted]"}
    assert all(r["duration_ms"] >= 0 and r["time"].endswith("+00:00") for r in records)
    assert secret not in audit.read_text()
