from __future__ import annotations

import json

from dockyard_shared.audit import MAX_VALUE_CHARS, AuditLog, redact


def test_secret_looking_keys_are_redacted_at_any_depth():
    arguments = {"sql": "select 1", "auth": {"password": "hunter2", "api_key": "k"}, "github_token": "t"}
    assert redact(arguments) == {
        "sql": "select 1",
        "auth": {"password": "[redacted]", "api_key": "[redacted]"},
        "github_token": "[redacted]",
    }


def test_secret_looking_values_are_redacted_whatever_their_key():
    token = "ghp_" + "a" * 36
    cleaned = redact({"note": f"use {token} and Bearer abc.def", "url": "https://user:pw@example.com/x"})
    assert token not in json.dumps(cleaned)
    assert "abc.def" not in cleaned["note"]
    assert cleaned["url"] == "https://[redacted]@example.com/x"


def test_long_values_are_cut_and_say_by_how_much():
    cleaned = redact({"sql": "x" * (MAX_VALUE_CHARS + 10)})
    assert cleaned["sql"].endswith("…[10 more chars]")


def test_the_log_appends_one_json_object_per_line(tmp_path):
    log = AuditLog(tmp_path / "sub" / "audit.jsonl")
    log.write({"tool": "a"})
    log.write({"tool": "b"})
    lines = (tmp_path / "sub" / "audit.jsonl").read_text().splitlines()
    assert [json.loads(line)["tool"] for line in lines] == ["a", "b"]
