"""The GitHub tools against a loopback fake of the REST API (PyGithub pointed at it)."""

from __future__ import annotations

import pytest

from tests.git.conftest import git, make_repo, make_server
from tests.git.fake_github import TOKEN, FakeGitHub, RunningFake
from tests.harness import Launch, open_session

GITHUB_TOOLS = {"github_pull_requests", "github_pull_request", "github_issues", "github_issue"}


@pytest.fixture
def fake():
    with RunningFake(FakeGitHub()) as running:
        yield running


@pytest.fixture
def repo(tmp_path):
    path = make_repo(tmp_path / "widgets")
    git(path, "remote", "add", "origin", "git@github.com:acme/widgets.git")
    return path


def server_for(repo, fake, token=TOKEN):
    return make_server(repo, github_token=token, github_api_url=fake.url)


async def test_github_tools_exist_only_with_a_token(repo, fake):
    async with open_session(make_server(repo)) as session:
        assert not GITHUB_TOOLS & await session.tool_names()
    async with open_session(server_for(repo, fake)) as session:
        tools = {t.name: t for t in await session.list_tools()}
    assert set(tools) >= GITHUB_TOOLS
    assert all(tools[name].annotations.open_world_hint for name in GITHUB_TOOLS)


async def test_pull_requests_are_paginated_and_filtered(repo, fake, era):
    async with open_session(server_for(repo, fake), era=era) as session:
        first = (await session.call_ok("github_pull_requests", {})).data
        second = (await session.call_ok("github_pull_requests", {"page": 2})).data
        release = (await session.call_ok("github_pull_requests", {"base": "release", "state": "all"})).data
    open_numbers = [p["number"] for p in fake.fake.pulls if p["state"] == "open"]
    assert [p["number"] for p in first["pull_requests"]] == open_numbers[:30] and first["has_more"]
    assert [p["number"] for p in second["pull_requests"]] == open_numbers[30:] and not second["has_more"]
    assert {p["base"] for p in release["pull_requests"]} == {"release"}
    assert first["pull_requests"][0]["title"].startswith('<untrusted-data source="title of pull request #1">')
    assert all(r["headers"]["Authorization"] == f"token {TOKEN}" for r in fake.fake.requests)


async def test_a_pull_request_has_body_checks_and_bounded_file_patches(repo, fake, era):
    async with open_session(server_for(repo, fake), era=era) as session:
        pull = (await session.call_ok("github_pull_request", {"number": 7})).data
    assert pull["draft"] and pull["head"] == "feature-7" and pull["combined_status"] == "success"
    assert {(c["name"], c["conclusion"]) for c in pull["checks"]} == {
        ("ci/build", "success"),
        ("tests", "failure"),
    }
    body = pull["body"]
    assert body.startswith('<untrusted-data source="body of pull request #7">') and body.endswith(
        "</untrusted-data>"
    )
    assert body.count("</untrusted-data>") == 1  # the fake's own closing tag inside the body was neutralised
    big = next(f for f in pull["files"] if f["filename"] == "big.txt")
    assert len(big["patch"]) < 5_000 and "patch cut" in big["patch"]


async def test_issues_exclude_pull_requests_and_issue_comments_page(repo, fake, era):
    async with open_session(server_for(repo, fake), era=era) as session:
        page_two = (await session.call_ok("github_issues", {"page": 2})).data
        bugs = (await session.call_ok("github_issues", {"labels": ["bug"]})).data
        issue = (await session.call_ok("github_issue", {"number": 100})).data
        more = (await session.call_ok("github_issue", {"number": 100, "comments_page": 2})).data
    assert 200 not in [i["number"] for i in page_two["issues"]]
    assert all(i["labels"] == ["bug"] for i in bugs["issues"])
    assert len(issue["comments"]) == 30 and issue["has_more_comments"]
    assert len(more["comments"]) == 5 and not more["has_more_comments"]
    injected = issue["comments"][0]["body"]
    assert injected.count("</untrusted-data>") == 1 and injected.endswith("</untrusted-data>")


async def test_unknown_numbers_are_not_found(repo, fake, era):
    async with open_session(server_for(repo, fake), era=era) as session:
        text = await session.call_error("github_pull_request", {"number": 999})
    assert text.startswith("Error (not_found)") and "404" in text


async def test_a_bad_token_is_permission_denied_and_names_the_variable_not_the_token(repo, fake, era):
    async with open_session(
        server_for(repo, fake, token="ghp_wrongwrongwrongwrongwrong0000"), era=era
    ) as session:
        text = await session.call_error("github_issues", {})
    assert text.startswith("Error (permission_denied)") and "$GITHUB_TOKEN" in text
    assert "ghp_wrong" not in text


async def test_rate_limiting_is_a_retryable_upstream_error_with_the_reset_time(repo, fake, era):
    fake.fake.rate_limited = True
    async with open_session(server_for(repo, fake), era=era) as session:
        text = await session.call_error("github_pull_requests", {})
    assert text.startswith("Error (upstream_unavailable)") and "rate limit" in text and "resets at" in text
    assert "may succeed if retried" in text
    assert len(fake.fake.requests) == 1  # no retry loop hammering the API


async def test_a_repository_without_a_github_remote_says_so(tmp_path, fake):
    plain = make_repo(tmp_path / "plain")
    async with open_session(server_for(plain, fake)) as session:
        text = await session.call_error("github_issues", {})
    assert "has no GitHub remote" in text


@pytest.mark.slow
async def test_the_token_never_appears_in_responses_or_the_server_log(repo, fake, tmp_path):
    log = tmp_path / "stderr.log"
    launch = Launch(
        "dockyard-git",
        ("--root", str(repo), "--github-api-url", fake.url, "--log-level", "DEBUG"),
        env={"GITHUB_TOKEN": TOKEN},
    )
    texts = []
    # The stdio client passes the server's stderr through; capture it by wrapping the command.
    wrapped = Launch("sh", ("-c", f'exec "$0" "$@" 2>>{log}', *launch.command()), env=launch.env)
    async with open_session(wrapped) as session:
        for name, arguments in [
            ("github_pull_requests", {}),
            ("github_pull_request", {"number": 7}),
            ("github_issue", {"number": 100}),
            ("github_pull_request", {"number": 999}),
        ]:
            texts.append((await session.call(name, arguments)).text)
    assert all(texts)
    assert not any(TOKEN in text for text in texts)
    assert TOKEN not in log.read_text()
