"""`dockyard eval` end to end through the CLI against a loopback fake of the chat completions API
(tests/workspace/fake_chat.py): the data set is checked against every server's real listing, and the
scoring, retries and report are the real ones. No real model is reachable here; the quality figure
needs one."""

from __future__ import annotations

import json
from collections import Counter

import jsonschema
import pytest

from dockyard_shared.cli import discover_servers, main
from dockyard_shared.evaluation.cases import load_cases, matches, witness
from dockyard_shared.evaluation.command import _listing
from dockyard_shared.export import openai_tools
from tests.harness import REPO_ROOT
from tests.workspace.fake_chat import (
    GARBAGE,
    HANG,
    FakeChat,
    RunningFakeChat,
    call,
    raw_calls,
    refusal,
    status,
    text,
)

CASES = load_cases()
BY_ID = {case.id: case for case in CASES}


@pytest.fixture(autouse=True)
def environment(monkeypatch, tmp_path):
    """Private data, no GitHub token (the git server's default listing), no key unless a test sets one."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def chat():
    with RunningFakeChat(FakeChat()) as running:
        yield running


def run(capsys, running, *flags: str) -> tuple[int, dict]:
    code = main(
        ["eval", "--base-url", running.base_url, "--model", "fake-model", "--backoff", "0", "--json", *flags]
    )
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if captured.out.strip() else {"stderr": captured.err})


def right(case_id: str):
    case = BY_ID[case_id]
    return call(case.tool, witness(case.args)) if case.tool else text("No tool is needed for that.")


def test_the_data_set_covers_four_servers_four_languages_near_misses_and_no_tool_answers():
    assert len(CASES) >= 120
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert f"{len(CASES)} user requests across the four servers" in readme  # the README's count holds
    assert set(Counter(case.server for case in CASES)) == {"sqlite", "git", "tasks", "name-origin"}
    languages = Counter(case.lang for case in CASES)
    assert set(languages) == {"en", "zh", "ko", "ru"} and min(languages.values()) >= 12
    assert sum(case.tool is None for case in CASES) >= 10
    expected = {case.tool for case in CASES}
    for pair in [("list_tasks", "next_task"), ("git_log", "git_show"), ("query", "describe_table"),
                 ("search_schema", "list_tables"), ("predict_origin", "batch_predict")]:  # fmt: skip
        assert set(pair) <= expected, pair


def test_every_expected_tool_is_listed_with_the_case_flags_and_its_arguments_validate():
    servers = discover_servers()
    listings = {}
    for case in CASES:
        key = (case.server, case.flags)
        if key not in listings:
            listings[key] = _listing(servers[case.server], list(case.flags))
        tools = listings[key]
        for name in case.forbidden:
            assert name in tools, f"{case.id}: forbidden {name} is not listed"
        if case.tool is None:
            continue
        assert case.tool in tools, f"{case.id}: {case.tool} is not listed with {case.flags}"
        schema = tools[case.tool].input_schema
        options = max(
            [len(v["$any"]) for v in case.args.values() if isinstance(v, dict) and "$any" in v] or [1]
        )
        for choice in range(options):
            arguments = witness(case.args, choice)
            errors = list(jsonschema.Draft202012Validator(schema).iter_errors(arguments))
            assert not errors, f"{case.id}: {errors[0].message}"
            assert matches(case.args, arguments), case.id
        assert set(case.args) <= set(schema.get("properties", {})), case.id


def test_a_model_that_answers_every_case_right_scores_every_case_right(capsys, chat, monkeypatch):
    monkeypatch.setenv("EVAL_KEY", "sk-test")
    chat.fake.key = "sk-test"
    for case in CASES:
        chat.fake.script(case.request, right(case.id))
    code, report = run(capsys, chat, "--api-key-env", "EVAL_KEY")
    assert code == 0, report
    overall = report["overall"]
    assert (overall["right"], overall["scored"], overall["skipped"], overall["errors"]) == (
        len(CASES),
        len(CASES),
        0,
        0,
    )
    assert report["confusion"] == [] and report["failures"] == []
    assert report["per_tool"]["(no tool)"]["accuracy"] == 1.0 and set(report["per_lang"]) == {
        "en",
        "zh",
        "ko",
        "ru",
    }
    assert len(chat.fake.requests) == len(CASES) == report["requests"]
    # The model was sent exactly what `dockyard tools NAME --format openai` exports, and the key.
    first_tasks = next(body for body in chat.fake.requests if "tasks" in body["messages"][0]["content"])
    assert main(["tools", "tasks", "--format", "openai"]) == 0
    assert first_tasks["tools"] == json.loads(capsys.readouterr().out)
    assert {headers["Authorization"] for headers in chat.fake.headers} == {"Bearer sk-test"}


def test_wrong_answers_are_scored_wrong_with_their_reasons_and_confusions(capsys, chat):
    script = {
        "tasks-en-01": call("next_task", {"assignee": "alice"}),  # the near-miss
        "tasks-en-02": call("next_task", '{"assignee": '),  # malformed JSON
        "tasks-en-03": call("pick_task", {"assignee": "bob"}),  # a tool nobody lists
        "tasks-en-04": call("list_tasks", '["WEB"]'),  # not an object
        "tasks-en-05": call("get_task", {}),  # a required argument left out
        "tasks-en-06": call("update_task_status", {"task_id": "WEB-12", "new_status": "finished"}),  # schema
        "tasks-en-10": call("list_tasks", {"project": "API", "status": "todo"}),  # a wrong value
        "tasks-en-11": call("create_task", {"project": "WEB", "title": "timeout"}),  # a write for a read
        "tasks-en-20": call(
            "create_task", {"project": "WEB", "title": "title"}
        ),  # a tool where none was needed
        "tasks-en-09": refusal("I can't help with that."),
        "tasks-en-15": raw_calls({"id": "call_1", "type": "function", "function": {"arguments": "{}"}}),
        # As ollama may send them: arguments as an object, not its JSON text; and a second call, ignored.
        "tasks-en-21": raw_calls(
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_task", "arguments": {"task_id": "API-3"}},
            },
            {"id": "c2", "type": "function", "function": {"name": "delete_task", "arguments": "{}"}},
        ),
        "tasks-zh-06": text("冲刺是……"),  # right: no tool needed
        "tasks-en-12": call(
            "list_tasks", {"due_before": "2026-12-01", "assignee": None, "sort": "due"}
        ),  # right
    }
    for case_id, reply in script.items():
        chat.fake.script(BY_ID[case_id].request, reply)
    flags = [item for case_id in script for item in ("--case", case_id)]
    code, report = run(capsys, chat, *flags)
    assert code == 0
    assert report["overall"]["right"] == 3 and report["overall"]["scored"] == len(script)
    reasons = {item["case"]: item["reason"] for item in report["failures"]}
    assert reasons["tasks-en-01"] == "called next_task; expected list_tasks"
    assert reasons["tasks-en-02"].startswith("next_task: arguments are not JSON")
    assert reasons["tasks-en-03"] == "called 'pick_task', a tool the server does not list"
    assert reasons["tasks-en-04"] == 'list_tasks: arguments are not a JSON object: ["WEB"]'
    assert "schema refuses" in reasons["tasks-en-05"] and "task_id" in reasons["tasks-en-05"]
    assert "schema refuses" in reasons["tasks-en-06"] and "finished" in reasons["tasks-en-06"]
    assert reasons["tasks-en-10"] == 'list_tasks: argument status is "todo"; expected "blocked"'
    assert reasons["tasks-en-20"] == "called create_task where no tool was needed"
    assert reasons["tasks-en-09"] == "refused: I can't help with that.; expected list_projects"
    assert reasons["tasks-en-15"].startswith("malformed tool call: no function name in")
    assert "tasks-en-21" not in reasons
    forbidden = {item["case"] for item in report["failures"] if item["forbidden"]}
    assert forbidden == {
        "tasks-en-01",
        "tasks-en-11",
        "tasks-en-20",
    }  # named; a write for a read; for nothing
    assert report["overall"]["forbidden_calls"] == 3
    confusion = {(item["expected"], item["called"]): item for item in report["confusion"]}
    assert confusion[("list_tasks", "create_task")]["cases"] == ["tasks-en-11"]
    assert confusion[("list_projects", "(no tool)")]["count"] == 1


def test_the_text_report_shows_the_figures_the_confusions_and_the_failures(capsys, chat):
    chat.fake.script(BY_ID["git-en-01"].request, call("git_show", {"revision": "HEAD"}))
    chat.fake.script(BY_ID["git-en-02"].request, right("git-en-02"))
    code = main(
        [
            "eval",
            "--base-url",
            chat.base_url,
            "--model",
            "fake-model",
            "--case",
            "git-en-01",
            "--case",
            "git-en-02",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "overall: 1/2 (50.0%) right" in out
    assert "git_log → git_show: 1 (git-en-01)" in out
    assert "git-en-01 run 1: called git_show; expected git_log" in out


def test_429_500_timeouts_and_garbage_are_retried_with_backoff_then_scored(capsys, chat):
    request = BY_ID["origin-en-01"].request
    chat.fake.script(request, status(429, retry_after="0"), status(500), HANG, GARBAGE, right("origin-en-01"))
    code, report = run(capsys, chat, "--case", "origin-en-01", "--timeout", "0.5")
    # The garbage (a 200 that is not a chat completion) is not retried: that case is an endpoint error.
    assert code == 1 and report["overall"]["errors"] == 1
    assert "not a chat completion" in report["failures"][0]["reason"] and report["failures"][0]["error"]
    assert chat.fake.asked(request) == 4 and report["retries"] == 3
    chat.fake.script(request, status(429, retry_after="0"), status(503), HANG, right("origin-en-01"))
    code, report = run(capsys, chat, "--case", "origin-en-01", "--timeout", "0.5")
    assert code == 0 and report["overall"]["right"] == 1 and report["retries"] == 3


def test_retries_are_bounded_and_an_unanswered_case_is_an_error_not_a_wrong_answer(capsys, chat):
    request = BY_ID["origin-en-03"].request
    chat.fake.script(request, status(500))
    code, report = run(capsys, chat, "--case", "origin-en-03", "--case", "origin-en-06", "--retries", "2")
    assert code == 1
    assert chat.fake.asked(request) == 3
    assert (
        report["overall"]["errors"] == 1
        and report["overall"]["scored"] == 1
        and report["overall"]["right"] == 1
    )
    (failure,) = report["failures"]
    assert failure["error"] and "HTTP 500" in failure["reason"] and "after 3 attempts" in failure["reason"]


def test_a_wrong_key_or_model_stops_the_run_with_what_to_check(capsys, chat, monkeypatch):
    chat.fake.key = "sk-right"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    code, report = run(capsys, chat, "--server", "name-origin")
    assert code == 2 and "HTTP 401: Incorrect API key provided." in report["stderr"]
    assert "--base-url, --model and the key" in report["stderr"] and len(chat.fake.requests) == 1
    monkeypatch.setenv("OPENAI_API_KEY", "sk-right")
    code = main(
        ["eval", "--base-url", chat.base_url, "--model", "gpt-nonexistent", "--server", "name-origin"]
    )
    assert code == 2 and "model_not_found" not in capsys.readouterr().err  # the message, not the code
    assert chat.fake.requests[-1]["model"] == "gpt-nonexistent"


def test_repeat_runs_every_case_n_times_and_counts_the_cases_right_every_time(capsys, chat):
    request = BY_ID["origin-en-02"].request
    chat.fake.script(
        request, right("origin-en-02"), call("predict_origin", {"name": "Anna"}), right("origin-en-02")
    )
    chat.fake.script(BY_ID["origin-en-03"].request, right("origin-en-03"))
    code, report = run(capsys, chat, "--case", "origin-en-02", "--case", "origin-en-03", "--repeat", "3")
    assert code == 0
    assert report["overall"]["scored"] == 6 and report["overall"]["right"] == 5
    assert report["overall"]["right_every_run"] == 1
    assert [item["run"] for item in report["failures"]] == [2]
    wrong = call("predict_origin", {"name": "Anna"})
    chat.fake.script(request, right("origin-en-02"), wrong)
    code, report = run(capsys, chat, "--case", "origin-en-02", "--repeat", "2", "--min-score", "0.9")
    assert code == 1 and report["overall"]["accuracy"] == 0.5  # below --min-score: CI fails
    chat.fake.script(request, right("origin-en-02"), wrong)
    code, _ = run(capsys, chat, "--case", "origin-en-02", "--repeat", "2", "--min-score", "0.5")
    assert code == 0


def test_server_flags_choose_the_tools_and_a_case_whose_tool_is_off_is_skipped(capsys, chat):
    chat.fake.script(BY_ID["tasks-en-06"].request, right("tasks-en-06"))
    code, report = run(capsys, chat, "--case", "tasks-en-06", "--case", "tasks-en-01", "--toolsets", "read")
    assert code == 0
    assert report["overall"]["skipped"] == 1 and report["skipped"][0]["case"] == "tasks-en-06"
    assert [tool["function"]["name"] for tool in chat.fake.requests[0]["tools"]] == [
        "list_projects", "list_tasks", "get_task", "next_task", "show_board"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("expected", "sent", "result"),
    [
        ("Alice", " alice ", True),
        ("in progress", "in  Progress", True),
        ({"$exact": "README.md"}, "readme.md", False),
        ({"$contains": ["count", "customers"]}, "SELECT COUNT(*) FROM Customers", True),
        ({"$contains": ["count", "customers"]}, "SELECT * FROM customers", False),
        ({"$any": ["v1..v2", "v1...v2"]}, "v1...v2", True),
        (["Anna", "Liam"], ["liam", "anna"], True),
        (["Anna", "Liam"], ["anna", "anna"], False),
        (["Anna"], ["anna", "liam"], False),
        (5, 5.0, True),
        (5, "5", False),
        (True, 1, False),
        ({"a": 1}, {"a": 1, "b": 2}, True),
    ],
)
def test_argument_comparison(expected, sent, result):
    assert matches(expected, sent) is result


def test_openai_export_is_what_the_harness_sends():
    tools = _listing(discover_servers()["name-origin"], [])
    assert [item["function"]["name"] for item in openai_tools(list(tools.values()))] == list(tools)
