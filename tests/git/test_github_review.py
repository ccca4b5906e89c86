"""The review loop on GitHub, through the protocol against the loopback fake: review threads (GraphQL),
the github_write toolset (comment, reply, resolve), a failed CI job's log, and why a line exists."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dockyard_git.server import create_server
from dockyard_git.settings import MAX_REPLY_CHARS, Settings
from dockyard_shared import InvalidArgument, missing_description_sections
from dockyard_shared.toolsets import Exposure
from tests.git.fake_github import TOKEN, FakeGitHub, RunningFake
from tests.git.fake_github_actions import job, stamp, step, workflow_run
from tests.git.helpers import git, make_repo, make_server
from tests.git.test_github import CLOSERS, assert_fenced, attack
from tests.git.tool_names import GITHUB_TOOLS, GITHUB_WRITE_TOOLS
from tests.harness import Launch, open_session

HEAD_7 = f"{7:040x}"


@pytest.fixture
def fake():
    with RunningFake(FakeGitHub()) as running:
        yield running


@pytest.fixture
def repo(tmp_path):
    path = make_repo(tmp_path / "widgets")
    git(path, "remote", "add", "origin", "https://github.com/acme/widgets.git")
    return path


def writing(repo, fake, token=TOKEN):
    """A server with the github_write toolset on, as --toolsets default,github_write serves it."""
    exposure = Exposure(toolsets=("default", "github_write"))
    return make_server(repo, github_token=token, github_api_url=fake.url, exposure=exposure)


def comment(database_id: int, author: str, body: str) -> dict[str, Any]:
    return {"databaseId": database_id, "author": author, "body": body}


def plant_threads(fake: FakeGitHub) -> None:
    fake.review_threads[7] = [
        {
            "id": "PRRT_kwDOopen1",
            "isResolved": False,
            "path": "src/app.py",
            "line": 3,
            "comments": [comment(1, "reviewer", "Please rename f1."), comment(2, "octocat", "Will do.")],
        },
        {
            "id": "PRRT_kwDOdone2",
            "isResolved": True,
            "resolvedBy": "reviewer",
            "path": "README.md",
            "line": 1,
            "comments": [comment(3, "reviewer", "Typo.")],
        },
        {
            "id": "PRRT_kwDOevil3",
            "isResolved": False,
            "path": attack("THREAD-PATH", CLOSERS[3]),
            "line": 9,
            "comments": [comment(4, attack("THREAD-LOGIN"), attack("THREAD-BODY", CLOSERS[6]))],
        },
    ]


# -- which tools exist ----------------------------------------------------------------------------


async def test_github_write_is_off_by_default_and_on_only_when_asked_for(repo, fake, era):
    async with open_session(
        make_server(repo, github_token=TOKEN, github_api_url=fake.url), era=era
    ) as session:
        default = await session.list_tools()
    async with open_session(writing(repo, fake), era=era) as session:
        asked = {t.name: t for t in await session.list_tools()}
    assert {t.name for t in default} >= GITHUB_TOOLS and not GITHUB_WRITE_TOOLS & {t.name for t in default}
    assert set(asked) >= GITHUB_WRITE_TOOLS | GITHUB_TOOLS
    for name in GITHUB_WRITE_TOOLS:
        hints = asked[name].annotations
        assert not hints.read_only_hint and not hints.destructive_hint and hints.open_world_hint
    for name in GITHUB_WRITE_TOOLS | GITHUB_TOOLS:
        assert missing_description_sections(asked[name].description) == [], name


def test_github_write_without_a_token_stops_start_up_naming_the_variable_and_the_flag(repo):
    settings = Settings(roots=(repo,), exposure=Exposure(toolsets=("default", "github_write")))
    with pytest.raises(InvalidArgument) as caught:
        create_server(settings)
    assert "github_write" in str(caught.value) and "$GITHUB_TOKEN" in str(caught.value)
    assert "--github-token-env" in str(caught.value)


async def test_read_only_leaves_the_github_write_tools_out(repo, fake):
    exposure = Exposure(toolsets=("all",), read_only=True)
    server = make_server(repo, github_token=TOKEN, github_api_url=fake.url, exposure=exposure)
    async with open_session(server) as session:
        names = await session.tool_names()
    assert names >= GITHUB_TOOLS and not names & GITHUB_WRITE_TOOLS


# -- review threads and the write tools -----------------------------------------------------------


async def test_review_threads_show_the_unresolved_ones_with_their_comments(repo, fake, era):
    plant_threads(fake.fake)
    async with open_session(writing(repo, fake), era=era) as session:
        open_only = (await session.call_ok("github_review_threads", {"number": 7})).data
        everything = (
            await session.call_ok("github_review_threads", {"number": 7, "include_resolved": True})
        ).data
    assert [t["id"] for t in open_only["threads"]] == ["PRRT_kwDOopen1", "PRRT_kwDOevil3"]
    assert open_only["hidden_resolved"] == 1 and "include_resolved=true" in open_only["note"]
    first = open_only["threads"][0]
    assert (first["path"], first["line"], first["resolved"], first["total_comments"]) == (
        "src/app.py",
        3,
        False,
        2,
    )
    assert [c["author"] for c in first["comments"]] == ["reviewer", "octocat"]
    assert "Please rename f1." in first["comments"][0]["body"]
    assert first["comments"][0]["body"].startswith(
        '<untrusted-data source="review comment 1 of pull request #7">'
    )
    assert len(everything["threads"]) == 3 and everything["threads"][1]["resolved_by"] == "reviewer"
    assert_fenced(open_only["threads"][1], {"THREAD-PATH", "THREAD-LOGIN", "THREAD-BODY"})
    # One GraphQL request per call, with the token in the header only.
    posts = [r for r in fake.fake.requests if r["path"] == "/graphql"]
    assert len(posts) == 2 and all(r["headers"]["Authorization"] == f"token {TOKEN}" for r in posts)


async def test_review_threads_page_with_the_cursor_github_gives(repo, fake):
    fake.fake.review_threads[7] = [
        {
            "id": f"PRRT_n{i}",
            "isResolved": False,
            "path": "a.py",
            "line": i,
            "comments": [comment(i, "r", "x")],
        }
        for i in range(1, 46)
    ]
    async with open_session(writing(repo, fake)) as session:
        first = (await session.call_ok("github_review_threads", {"number": 7})).data
        second = (
            await session.call_ok("github_review_threads", {"number": 7, "after": first["next_cursor"]})
        ).data
        bad = await session.call_error("github_review_threads", {"number": 7, "after": "not a cursor!"})
    assert [t["line"] for t in first["threads"]] == list(range(1, 31)) and first["total_threads"] == 45
    assert f"after={first['next_cursor']!r}" in first["note"]
    assert [t["line"] for t in second["threads"]] == list(range(31, 46)) and second["next_cursor"] is None
    assert bad.startswith("Error (invalid_argument)") and "next_cursor" in bad


async def test_reply_resolve_and_unresolve_a_thread(repo, fake, era):
    plant_threads(fake.fake)
    async with open_session(writing(repo, fake), era=era) as session:
        replied = (
            await session.call_ok(
                "github_reply_to_thread", {"thread_id": "PRRT_kwDOopen1", "body": "Renamed in 1a2b3c."}
            )
        ).data
        resolved = (await session.call_ok("github_resolve_thread", {"thread_id": "PRRT_kwDOopen1"})).data
        again = (await session.call_ok("github_resolve_thread", {"thread_id": "PRRT_kwDOopen1"})).data
        reopened = (
            await session.call_ok("github_resolve_thread", {"thread_id": "PRRT_kwDOopen1", "resolved": False})
        ).data
    thread = fake.fake.review_threads[7][0]
    assert thread["comments"][-1]["body"] == "Renamed in 1a2b3c."
    assert replied["url"].startswith("https://github.com/acme/widgets/pull/7#discussion_r")
    assert resolved["resolved"] is True and "resolved" in resolved["done"]
    assert "already resolved; nothing changed" in again["done"]
    assert reopened["resolved"] is False and thread["isResolved"] is False
    mutations = [
        r["body"]["query"]
        for r in fake.fake.requests
        if r["path"] == "/graphql" and "mutation" in r["body"]["query"]
    ]
    assert [m.split("(input")[0].split()[-1] for m in mutations] == [
        "addPullRequestReviewThreadReply",
        "resolveReviewThread",
        "unresolveReviewThread",
    ]  # the already-resolved call sent no mutation


async def test_a_thread_of_another_repository_is_refused_before_anything_is_written(tmp_path, fake, era):
    other = make_repo(tmp_path / "other")
    git(other, "remote", "add", "origin", "git@github.com:acme/other.git")
    plant_threads(fake.fake)
    async with open_session(writing(other, fake), era=era) as session:
        text = await session.call_error("github_resolve_thread", {"thread_id": "PRRT_kwDOopen1"})
        reply = await session.call_error(
            "github_reply_to_thread", {"thread_id": "PRRT_kwDOopen1", "body": "hi"}
        )
    assert (
        text.startswith("Error (permission_denied)") and "another repository" in text and "acme/other" in text
    )
    assert "another repository" in reply
    assert (
        fake.fake.review_threads[7][0]["isResolved"] is False
        and len(fake.fake.review_threads[7][0]["comments"]) == 2
    )
    assert not any("mutation" in (r["body"] or {}).get("query", "") for r in fake.fake.requests if r["body"])


async def test_comment_on_an_issue_and_a_pull_request(repo, fake, era):
    async with open_session(writing(repo, fake), era=era) as session:
        on_issue = (
            await session.call_ok("github_comment", {"number": 101, "body": "Reproduced on main."})
        ).data
        on_pull = (await session.call_ok("github_comment", {"number": 7, "body": "CI fixed."})).data
        blank = await session.call_error("github_comment", {"number": 7, "body": "   \n"})
        huge = await session.call_error("github_comment", {"number": 7, "body": "x" * 70_000})
        missing = await session.call_error("github_comment", {"number": 999, "body": "hello"})
    assert fake.fake.comments[101][-1]["body"] == "Reproduced on main."
    assert fake.fake.comments[7][-1]["body"] == "CI fixed."
    assert on_issue["url"].startswith("https://github.com/acme/widgets/issues/101#issuecomment-")
    assert on_pull["done"] == "Commented on #7."
    assert blank.startswith("Error (invalid_argument)") and "empty" in blank
    assert huge.startswith("Error (invalid_argument)") and "65,536" in huge
    assert missing.startswith("Error (not_found)") and "commenting on" in missing
    posts = [r for r in fake.fake.requests if r["method"] == "POST"]
    assert len(posts) == 3  # the blank and the huge body never left the server


async def test_write_refusals_say_what_failed_and_what_to_do(repo, fake, era):
    plant_threads(fake.fake)
    fake.fake.read_only_token = True
    async with open_session(writing(repo, fake), era=era) as session:
        rest = await session.call_error("github_comment", {"number": 7, "body": "hi"})
        graphql = await session.call_error("github_resolve_thread", {"thread_id": "PRRT_kwDOopen1"})
        unknown = await session.call_error("github_resolve_thread", {"thread_id": "PRRT_nosuchthread"})
        not_a_pull = await session.call_error("github_review_threads", {"number": 999})
        injected = await session.call_error(
            "github_resolve_thread",
            {"thread_id": 'x") { id } } mutation { resolveReviewThread(input: {threadId: "PRRT_kwDOopen1'},
        )
    for text in (rest, graphql):
        assert text.startswith("Error (permission_denied)") and "403" in text and "$GITHUB_TOKEN" in text
        assert "Resource not accessible by personal access token" in text and "--github-token-env" in text
    assert unknown.startswith("Error (not_found)") and "PRRT_nosuchthread" in unknown
    assert not_a_pull.startswith("Error (not_found)") and "Could not resolve to a PullRequest" in not_a_pull
    assert injected.startswith("Error (invalid_argument)") and "not a GitHub node id" in injected


async def test_graphql_rate_limit_and_bad_token_are_reported_as_github_says_them(repo, fake, era):
    plant_threads(fake.fake)
    fake.fake.rate_limited = True
    async with open_session(writing(repo, fake), era=era) as session:
        spent = await session.call_error("github_review_threads", {"number": 7})
        fake.fake.rate_limited = False
        fake.fake.token = "ghp_" + "r0tat3d" * 5
        revoked = await session.call_error(
            "github_reply_to_thread", {"thread_id": "PRRT_kwDOopen1", "body": "x"}
        )
    assert (
        spent.startswith("Error (upstream_unavailable)")
        and "quota is spent" in spent
        and "resets at" in spent
    )
    assert "may succeed if retried" in spent
    assert revoked.startswith("Error (permission_denied)") and "401" in revoked and "$GITHUB_TOKEN" in revoked
    assert TOKEN not in spent + revoked


# -- a failed CI job's log ---------------------------------------------------------------------------

STEPS = [
    step(1, "Set up job", "success", 0, 5),
    step(2, "Checkout", "success", 5, 10),
    step(3, "Run tests", "failure", 10, 50),
    step(4, "Post Checkout", "success", 50, 55),
]


def log_of(lines: list[tuple[float, str]]) -> bytes:
    return "".join(f"{stamp(t)} {text}\n" for t, text in lines).encode()


def plant_ci(fake: RunningFake, test_lines: list[str] | None = None) -> None:
    github = fake.fake
    github.workflow_runs = [
        workflow_run(900, HEAD_7, "success", "Docs"),
        workflow_run(901, HEAD_7, "failure"),
    ]
    github.jobs[900] = [job(9000, 900, HEAD_7, "docs", "success", STEPS[:2])]
    github.jobs[901] = [
        job(9011, 901, HEAD_7, "tests (3.12)", "failure", STEPS),
        job(9012, 901, HEAD_7, "lint", "failure", [*STEPS[:2], step(3, "ruff", "failure", 10, 12)]),
        job(9013, 901, HEAD_7, "build", "success", STEPS[:2]),
    ]
    tests = (
        test_lines
        if test_lines is not None
        else ["collected 12 items", "FAILED test_app.py::test_f1 - assert 1 == 2"]
    )
    lines = [
        (1, "Current runner version: '2.320.0'"),
        (6, "##[group]Run actions/checkout@v4"),
        (9, "##[endgroup]"),
    ]
    lines += [(10.5, "##[group]Run pytest"), (11, "##[endgroup]")]
    lines += [(11 + 38 * i / max(1, len(tests)), text) for i, text in enumerate(tests)]
    lines += [(49.5, "##[error]Process completed with exit code 1."), (51, "Post job cleanup.")]
    github.storage.logs[9011] = log_of(lines)
    github.storage.logs[9012] = log_of(
        [(11, "app.py:1:1: F401 unused import"), (11.5, "##[error]ruff failed")]
    )


async def test_the_failed_job_log_shows_the_failing_step_and_the_error_lines(repo, fake, era):
    plant_ci(fake)
    async with open_session(
        make_server(repo, github_token=TOKEN, github_api_url=fake.url), era=era
    ) as session:
        log = (await session.call_ok("github_failed_job_log", {"number": 7})).data
        lint = (await session.call_ok("github_failed_job_log", {"number": 7, "job_id": 9012})).data
        setup = (await session.call_ok("github_failed_job_log", {"number": 7, "step": 1})).data
    assert log["head_sha"] == HEAD_7 and log["job"]["id"] == 9011 and log["job"]["workflow"] == "CI"
    # Names with spaces are not simple identifiers: they come fenced.
    assert (log["step"]["number"], log["step"]["conclusion"]) == (3, "failure")
    assert log["step"]["name"] == '<untrusted-data source="name of step 3">\nRun tests\n</untrusted-data>'
    assert [s["number"] for s in log["steps"]] == [1, 2, 3, 4] and "Post Checkout" in log["steps"][3]["name"]
    shown = log["log"]
    assert shown.startswith('<untrusted-data source="log of step 3 of job 9011">')
    assert "FAILED test_app.py::test_f1" in shown and "Run pytest" in shown
    assert "Current runner version" not in shown and "Post job cleanup" not in shown  # other steps cut away
    assert "2026-01-02T" not in shown  # time stamps dropped
    assert "Process completed with exit code 1." in log["errors"]
    assert [j["id"] for j in log["other_failed_jobs"]] == [9012]  # the passing ones are not listed
    assert lint["job"]["name"] == "lint" and "F401" in lint["log"] and lint["step"]["name"] == "ruff"
    assert "pytest" not in lint["log"]
    assert "Current runner version" in setup["log"] and "pytest" not in setup["log"]
    # The download link was fetched without the token, from the other host; the API never saw a download.
    assert fake.storage.requests and not any("Authorization" in r["headers"] for r in fake.storage.requests)
    assert all(TOKEN not in json.dumps(r["headers"]) for r in fake.storage.requests)


async def test_a_huge_step_is_bounded_head_and_end_first_then_paged_with_from_line(repo, fake):
    lines = [f"test line {i} " + "." * 60 for i in range(1, 20_001)]
    plant_ci(fake, lines)
    async with open_session(make_server(repo, github_token=TOKEN, github_api_url=fake.url)) as session:
        outcome = await session.call_ok("github_failed_job_log", {"number": 7})
        log = outcome.data
        gap = int(log["note"].split("from_line=")[1].split(".")[0].rstrip(","))
        later = (
            await session.call_ok(
                "github_failed_job_log", {"number": 7, "job_id": 9011, "step": 3, "from_line": gap}
            )
        ).data
    assert len(outcome.text) <= MAX_REPLY_CHARS and len(log["log"]) < 35_000
    assert (
        log["log_lines"] == 20_003
    )  # the step's own lines: its two group markers, 20,000 test lines, the error
    assert "test line 1 " in log["log"] and "Process completed with exit code 1." in log["log"]
    assert "test line 10000 " not in log["log"]
    head, tail = log["shown_lines"].split(",")
    assert head == "1-15" and tail.endswith("-20003") and gap == 16
    assert f"job_id=9011, step=3, from_line={gap}" in log["note"]
    assert later["log"].split("\n")[1].startswith(f"test line {gap - 2} ")  # line 16 of the step
    assert later["shown_lines"].startswith(f"{gap}-") and "from_line" in (later["note"] or "")


async def test_a_log_past_the_download_cap_is_read_only_that_far(repo, fake):
    plant_ci(fake)
    line = (stamp(20) + " " + "y" * 1_000_000 + "\n").encode()  # one-megabyte lines, 80 of them

    def chunks():
        for _ in range(80):
            yield line

    fake.storage.logs[9011] = chunks
    async with open_session(make_server(repo, github_token=TOKEN, github_api_url=fake.url)) as session:
        outcome = await session.call_ok("github_failed_job_log", {"number": 7})
    log = outcome.data
    assert len(outcome.text) <= MAX_REPLY_CHARS
    assert "Only the first 67,108,864 bytes of the log were read" in log["note"]
    assert "https://github.com/acme/widgets/actions/runs/901/job/9011" in log["note"]


async def test_hostile_log_text_stays_fenced(repo, fake, era):
    plant_ci(fake, [attack("LOG-LINE", closer) for closer in CLOSERS] + ["##[error]" + attack("LOG-ERROR")])
    fake.fake.jobs[901][0]["name"] = attack("JOB-NAME", CLOSERS[2])
    fake.fake.jobs[901][0]["steps"][2]["name"] = attack("STEP-NAME", CLOSERS[1])
    async with open_session(
        make_server(repo, github_token=TOKEN, github_api_url=fake.url), era=era
    ) as session:
        log = (await session.call_ok("github_failed_job_log", {"number": 7})).data
    assert_fenced(log, {"LOG-LINE", "LOG-ERROR", "JOB-NAME", "STEP-NAME"})


async def test_no_failed_job_expired_logs_and_expired_links_say_what_to_do(repo, fake, era):
    async with open_session(
        make_server(repo, github_token=TOKEN, github_api_url=fake.url), era=era
    ) as session:
        none = (await session.call_ok("github_failed_job_log", {"number": 7})).data
        plant_ci(fake)
        fake.fake.logs_gone.add(9011)
        gone = await session.call_error("github_failed_job_log", {"number": 7})
        fake.fake.logs_gone.clear()
        fake.storage.lifetime = -5  # the link has expired by the time it is used
        expired = await session.call_error("github_failed_job_log", {"number": 7})
        no_step = await session.call_error("github_failed_job_log", {"number": 7, "step": 42})
    assert none["job"] is None and "No GitHub Actions job failed" in none["note"]
    assert gone.startswith("Error (not_found)") and "410" in gone and "Re-run" in gone
    assert expired.startswith("Error (upstream_unavailable)") and "403" in expired and "fresh link" in expired
    assert no_step.startswith("Error (invalid_argument)") and "no step 42" in no_step


# -- why a line exists --------------------------------------------------------------------------------


def blamed_sha(repo, line: int) -> str:
    return git(repo, "blame", "--porcelain", f"-L{line},{line}", "--", "src/app.py").split()[0]


async def test_line_origin_goes_from_blame_to_pull_request_to_issues(repo, fake, era):
    sha = blamed_sha(repo, 3)
    fake.fake.commit_pulls[sha] = [7]
    fake.fake.closing_issues[7] = [101]
    fake.fake.pull(7)["body"] = "Makes f1 configurable.\n\nFixes #101 and closes #102; see #103."
    async with open_session(
        make_server(repo, github_token=TOKEN, github_api_url=fake.url), era=era
    ) as session:
        origin = (await session.call_ok("github_line_origin", {"path": "src/app.py", "line": 3})).data
    [found] = origin["commits"]
    subject = git(repo, "log", "-1", "--format=%s", sha).strip()
    assert found["sha"] == sha and found["lines"] == [3] and found["summary"] == subject
    [pull] = found["pull_requests"]
    assert pull["number"] == 7 and "Makes f1 configurable." in pull["body"]
    assert pull["url"] == "https://github.com/acme/widgets/pull/7"
    assert [(i["number"], i["how"]) for i in pull["issues"]] == [(101, "closes"), (102, "named in body")]
    assert (
        "Issue 101" in pull["issues"][0]["title"]
        and "Steps to reproduce issue 101" in pull["issues"][0]["body"]
    )
    graphql = [r for r in fake.fake.requests if r["path"] == "/graphql"]
    assert len(graphql) == 2  # commit → pull requests → linked issues in one query; one more for #102


async def test_line_origin_says_when_github_does_not_know_the_commit_or_no_pull_request_has_it(repo, fake):
    (repo / "src" / "app.py").write_text("changed\n" + (repo / "src" / "app.py").read_text())
    git(repo, "commit", "-qam", "local only")
    pushed = blamed_sha(repo, 4)
    fake.fake.commit_pulls[pushed] = []
    async with open_session(make_server(repo, github_token=TOKEN, github_api_url=fake.url)) as session:
        origin = (
            await session.call_ok("github_line_origin", {"path": "src/app.py", "line": 1, "end": 4})
        ).data
        wide = await session.call_error("github_line_origin", {"path": "src/app.py", "line": 1, "end": 40})
    assert [c["on_github"] for c in origin["commits"]] == [False, True]
    assert "does not know commit" in origin["note"] and "No pull request brought in commit" in origin["note"]
    assert wide.startswith("Error (invalid_argument)")
    (repo / "src" / "app.py").write_text("not committed\n" + (repo / "src" / "app.py").read_text())
    async with open_session(make_server(repo, github_token=TOKEN, github_api_url=fake.url)) as session:
        fresh = (await session.call_ok("github_line_origin", {"path": "src/app.py", "line": 1})).data
    assert fresh["commits"][0]["sha"] == "0" * 40 and not fresh["commits"][0]["on_github"]
    assert "Line(s) 1: not committed yet." in fresh["note"]


async def test_line_origin_fences_pull_request_and_issue_text(repo, fake):
    sha = blamed_sha(repo, 3)
    fake.fake.commit_pulls[sha] = [7]
    fake.fake.closing_issues[7] = [101]
    fake.fake.pull(7).update(
        title=attack("ORIGIN-PR-TITLE", CLOSERS[4]), body=attack("ORIGIN-PR-BODY") + " " + "z" * 10_000
    )
    fake.fake.pull(7)["user"]["login"] = attack("ORIGIN-PR-LOGIN")
    fake.fake.issue(101).update(
        title=attack("ORIGIN-ISSUE-TITLE", CLOSERS[7]), body=attack("ORIGIN-ISSUE-BODY", CLOSERS[5])
    )
    async with open_session(make_server(repo, github_token=TOKEN, github_api_url=fake.url)) as session:
        origin = (await session.call_ok("github_line_origin", {"path": "src/app.py", "line": 3})).data
    pull = origin["commits"][0]["pull_requests"][0]
    assert_fenced(
        pull,
        {"ORIGIN-PR-TITLE", "ORIGIN-PR-BODY", "ORIGIN-PR-LOGIN", "ORIGIN-ISSUE-TITLE", "ORIGIN-ISSUE-BODY"},
    )
    assert len(pull["body"]) < 2_500 and "[cut: showed" in pull["body"]


# -- the fake answers GraphQL as GitHub does -----------------------------------------------------------


def test_the_fake_refuses_bad_graphql_as_github_does(fake):
    import httpx

    def post(query: str, token: str = TOKEN) -> httpx.Response:
        return httpx.post(
            f"{fake.url}/graphql", json={"query": query}, headers={"Authorization": f"bearer {token}"}
        )

    unknown = post('{ repository(owner: "acme", name: "widgets") { nope } }').json()
    assert unknown["errors"][0]["message"] == "Field 'nope' doesn't exist on type 'Repository'"
    assert unknown["errors"][0]["extensions"]["code"] == "undefinedField" and "data" not in unknown
    unbounded = post(
        '{ repository(owner: "acme", name: "widgets") { pullRequest(number: 7) { reviewThreads { totalCount } } } }'
    ).json()
    assert unbounded["errors"][0]["type"] == "MISSING_PAGINATION_BOUNDARIES"
    assert unbounded["data"]["repository"]["pullRequest"] is None
    missing = post('{ repository(owner: "acme", name: "nope") { id } }').json()
    assert missing == {
        "data": {"repository": None},
        "errors": [
            {
                "type": "NOT_FOUND",
                "message": "Could not resolve to a Repository with the name 'acme/nope'.",
                "locations": [{"line": 1, "column": 3}],
                "path": ["repository"],
            }
        ],
    }
    denied = post('{ node(id: "x") { id } }', token="wrong")
    assert denied.status_code == 401 and denied.json()["message"] == "Bad credentials"


@pytest.mark.slow
async def test_over_stdio_the_token_reaches_neither_replies_nor_the_log_nor_the_log_storage(
    repo, fake, tmp_path
):
    log = tmp_path / "stderr.log"
    launch = Launch(
        "dockyard-git",
        (
            "--root",
            str(repo),
            "--github-api-url",
            fake.url,
            "--log-level",
            "DEBUG",
            "--toolsets",
            "default,github_write",
        ),
        env={"GITHUB_TOKEN": TOKEN},
    )
    plant_threads(fake.fake)
    plant_ci(fake)
    fake.fake.commit_pulls[blamed_sha(repo, 3)] = [7]
    wrapped = Launch("sh", ("-c", f'exec "$0" "$@" 2>>{log}', *launch.command()), env=launch.env)
    texts = []
    async with open_session(wrapped) as session:
        for name, arguments in [
            ("github_review_threads", {"number": 7}),
            ("github_failed_job_log", {"number": 7}),
            ("github_line_origin", {"path": "src/app.py", "line": 3}),
            ("github_comment", {"number": 7, "body": "Looks good."}),
            ("github_reply_to_thread", {"thread_id": "PRRT_kwDOopen1", "body": "Done."}),
            ("github_resolve_thread", {"thread_id": "PRRT_kwDOopen1"}),
        ]:
            outcome = await session.call(name, arguments)
            assert not outcome.is_error, (name, outcome.text)
            texts.append(outcome.text)
    assert not any(TOKEN in text for text in texts) and TOKEN not in log.read_text()
    assert fake.storage.requests and all(TOKEN not in json.dumps(r["headers"]) for r in fake.storage.requests)
