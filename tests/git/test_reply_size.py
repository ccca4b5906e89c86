"""The host's context budget: no result at the default limits exceeds MAX_REPLY_CHARS (100,000 characters,
~25,000 tokens at 4 characters a token), each tool driven at its worst (the listing is held to the budget
by tests/workspace/test_context_budget.py). The text here is made of quotes and backslashes, which take two
characters each as JSON: a bound counted in characters of text would let such a reply grow to twice its
size."""

from __future__ import annotations

import subprocess

import pytest

from dockyard_git.settings import MAX_REPLY_CHARS
from tests.git.fake_github import TOKEN, FakeGitHub, RunningFake, changed_file, check_run, label, status, user
from tests.git.helpers import GIT_ENV, LOOKUPS, git, make_repo, make_server
from tests.harness import open_session

ESCAPED = '"\\'  # two characters that take four as JSON


def hostile(length: int) -> str:
    return (ESCAPED * (length // 2 + 1))[:length]


@pytest.fixture(scope="module")
def worst(tmp_path_factory):
    """A repository at every local limit: long escaped names, subjects, authors, lines and files."""
    root = tmp_path_factory.mktemp("worst")
    repo = make_repo(root / "repo", commits=1)
    long_author = {
        **GIT_ENV,
        "GIT_AUTHOR_NAME": f"A{hostile(600)}Z",
        "GIT_AUTHOR_EMAIL": f"{'e' * 600}@example.com",
    }
    for i in range(320):
        subprocess.run(
            ["git", "commit", "-q", "--allow-empty", "-m", f"{i} {hostile(700)}"],
            cwd=repo,
            env=long_author,
            check=True,
        )
    for i in range(310):
        git(repo, "branch", f"b{i:03d}-{'x' * 150}")
        git(repo, "tag", "-a", f"t{i:03d}-{'y' * 150}", "-m", hostile(700))
    folder = repo / hostile(200)
    folder.mkdir()
    names = [f"{i:03d}{hostile(240)}" for i in range(350)]
    for name in names:
        (folder / name).write_text(hostile(1_000) + "\n")
    (repo / "lines.txt").write_text("".join(f"{hostile(1_200)} match\n" for _ in range(600)))
    (repo / "big.txt").write_text(hostile(300_000))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the big commit")
    for name in names:  # an unstaged change and an untracked file beside each committed one
        (folder / name).write_text("changed\n")
        (folder / f"{name}.new").write_text("new\n")
    return repo


CALLS = [
    ("git_repositories", {}),
    ("git_status", {}),
    ("git_log", {"max_count": 1_000, "fields": ["sha", "date", "author", "email", "subject", "parents"]}),
    ("git_diff", {}),
    ("git_diff", {"mode": "stat"}),
    ("git_diff", {"mode": "name_only"}),
    ("git_diff", {"base": "HEAD~1", "target": "HEAD"}),
    ("git_show", {}),
    ("git_show", {"path": "big.txt"}),
    ("git_blame", {"path": "lines.txt", "revision": "HEAD"}),
    ("git_branches", {"kind": "all"}),
    ("git_tags", {}),
    ("git_grep", {"pattern": "match", "max_matches": 200}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("tool", "arguments"), CALLS, ids=[f"{t}-{i}" for i, (t, _) in enumerate(CALLS)])
async def test_every_local_tool_stays_under_the_ceiling_at_its_worst(worst, tool, arguments):
    async with open_session(make_server(worst, toolsets=LOOKUPS)) as session:
        outcome = await session.call_ok(tool, arguments)
    assert len(outcome.text) <= MAX_REPLY_CHARS, f"{tool}: {len(outcome.text):,} characters"
    if tool == "git_log":
        assert outcome.data["next_skip"] == len(outcome.data["commits"]), tool  # says where the rest is
    elif tool not in ("git_repositories", "git_show"):
        assert outcome.data["truncated"] and outcome.data["note"], tool


async def test_many_long_named_repositories_are_listed_as_far_as_a_reply_holds(tmp_path):
    for i in range(150):
        make_repo(tmp_path / f"{i:03d}{hostile(200)}", commits=1)
    async with open_session(make_server(tmp_path)) as session:
        outcome = await session.call_ok("git_repositories")
    listed = outcome.data["repositories"]
    assert len(outcome.text) <= MAX_REPLY_CHARS and 0 < len(listed) < 150
    assert outcome.data["truncated"] and "repo_path" in outcome.data["note"]


@pytest.fixture
def hostile_github(tmp_path):
    """A GitHub whose every field at its cap is made of characters JSON escapes."""
    fake = FakeGitHub()
    pull = fake.pull(7)
    sha = pull["head"]["sha"]
    pull["title"] = hostile(10_000)
    pull["body"] = hostile(300_000)
    pull["user"] = user(hostile(300))
    pull["head"]["ref"], pull["base"]["ref"] = hostile(300), hostile(300)
    fake.files[7] = [changed_file(f"{i}{hostile(400)}", hostile(9_000)) for i in range(70)]
    fake.statuses[sha] = [status(hostile(300), number=i) for i in range(50)]
    fake.check_runs[sha] = [check_run(hostile(300), sha, number=i) for i in range(50)]
    for listed in fake.pulls:
        listed["title"], listed["user"] = hostile(10_000), user(hostile(300))
        listed["head"]["ref"], listed["base"]["ref"] = hostile(300), hostile(300)
    for item in fake.issues:
        item["title"] = hostile(10_000)
        item["user"] = user(hostile(300))
        item["labels"] = [label(hostile(300), i) for i in range(50)]
    issue = fake.issue(100)
    issue["body"] = hostile(100_000)
    fake.comments[100] = [fake.comment(i, hostile(20_000), login=hostile(300)) for i in range(1, 31)]
    with RunningFake(fake) as running:
        repo = make_repo(tmp_path / "widgets", commits=1)
        git(repo, "remote", "add", "origin", "git@github.com:acme/widgets.git")
        yield make_server(repo, github_token=TOKEN, github_api_url=running.url)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("github_pull_request", {"number": 7}),
        ("github_pull_requests", {}),
        ("github_issues", {}),
        ("github_issue", {"number": 100}),
    ],
)
async def test_every_github_tool_stays_under_the_ceiling_at_its_worst(hostile_github, tool, arguments):
    async with open_session(hostile_github) as session:
        outcome = await session.call_ok(tool, arguments)
    assert len(outcome.text) <= MAX_REPLY_CHARS, f"{tool}: {len(outcome.text):,} characters"
    data = outcome.data
    if tool == "github_pull_request":  # the patches shrink to what the rest leaves, never to nothing
        assert sum("patch cut" in (f["patch"] or "") for f in data["files"]) == len(data["files"])
        shown = [f["patch"].split("\n", 1)[1].split("\n</untrusted-data>")[0] for f in data["files"]]
        assert min(map(len, shown)) >= 20 and "patches cut" in data["note"]
    if tool == "github_issue":
        assert len(data["comments"]) == 30 and "comments cut" in data["note"]
    if tool == "github_issues":  # 30 issues with 10 escaped labels each cannot all fit: some are left out
        assert 0 < len(data["issues"]) < 30 and "fit in one reply" in data["note"]
