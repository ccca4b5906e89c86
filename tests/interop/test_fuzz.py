"""Fuzz every tool of every server configuration from its own input schema, plus hostile strings.

Hypothesis draws each tool's arguments from a strategy built from the tool's ``inputSchema``, with
hostile strings (huge, control characters, lone surrogates, path and SQL metacharacters, option-like
text) mixed into every string and a few plausible values mixed into named properties so calls also get
past validation. Whatever comes in, the server answers with a result or an error result written for the
model — never a protocol error, a traceback, a host path outside what it serves, or a hang — and still
answers a ping after each tool's batch.

Configurations: the toy server; dockyard-sqlite read-only and with ``--allow-write``; dockyard-git
read-only and with ``--allow-write`` plus the GitHub tools (against the loopback fake of the REST API).
Each serves a throwaway copy made here (a copy of the sample database, a repository built by the test)
inside a sandbox folder that also holds a file the server must never touch; after each batch nothing in
the sandbox outside the served copy has changed (and read-only configurations changed nothing at all).

Two passes:

* in memory, one session per configuration and era, opened once through an anyio blocking portal so the
  ``@given`` test itself is synchronous and Hypothesis shrinks and replays normally;
* over a real stdio process per server (fewer examples), through a raw JSON-RPC peer, so huge strings
  and invalid Unicode reach the server's reader, JSON parser and writer.

Runs are reproducible: ``derandomize=True`` and no example database.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio.from_thread
import pytest
from hypothesis import HealthCheck, given, reject, settings

from dockyard_git.__main__ import entry as git_entry
from dockyard_name_origin.__main__ import entry as name_origin_entry
from dockyard_name_origin.cache import PredictionCache
from dockyard_shared.runner import ServerEntry
from dockyard_sqlite.__main__ import entry as sqlite_entry
from dockyard_sqlite.demo import ensure_demo_database
from dockyard_tasks.__main__ import entry as tasks_entry
from dockyard_tasks.demo import seed_demo
from dockyard_tasks.store import TaskStore
from tests.git.fake_github import TOKEN, FakeGitHub, RunningFake
from tests.git.helpers import git, make_repo
from tests.harness import LEGACY, MODERN, REPO_ROOT, Era, Launch, open_session
from tests.interop.conftest import loopback_nationalize
from tests.interop.fuzzing import StdioPeer, arguments_for, check_answer
from tests.shared.toy_server import WORDS
from tests.shared.toy_server import entry as toy_entry

MEMORY_EXAMPLES = 20  # per tool and configuration
STDIO_EXAMPLES = 8  # per tool and server
CALL_TIMEOUT = 30.0  # seconds; the servers' own limits below are far shorter
MARKER = Path("/tmp/dockyard-fuzz")  # what the shell-injection strings would create

SQLITE_READ = ("describe_table", "explain_query", "list_tables", "query", "query_across", "search_schema")
GIT_READ = (
    "git_blame",
    "git_branches",
    "git_diff",
    "git_grep",
    "git_log",
    "git_repositories",
    "git_show",
    "git_status",
    "git_tags",
)
GIT_WRITE = ("git_add", "git_checkout", "git_commit", "git_create_branch", "git_stash", "git_unstage")
GITHUB = (
    "github_failed_job_log",
    "github_issue",
    "github_issues",
    "github_line_origin",
    "github_pull_request",
    "github_pull_requests",
    "github_review_threads",
)
NAME_ORIGIN = ("batch_predict", "predict_origin", "quota_status")
TASKS = (
    "add_comment",
    "add_dependency",
    "changes_since",
    "create_project",
    "create_task",
    "create_tasks",
    "delete_task",
    "export_project",
    "get_task",
    "import_project",
    "list_projects",
    "list_tasks",
    "move_tasks",
    "next_task",
    "remove_dependency",
    "show_board",
    "update_checklist",
    "update_task",
    "update_task_status",
)


@dataclass(frozen=True)
class Config:
    """A server started with some flags on a throwaway copy of its data."""

    name: str
    entry: ServerEntry
    tools: tuple[str, ...]
    writes: bool = False
    github: bool = False


CONFIGS = {
    c.name: c
    for c in [
        Config("toy", toy_entry, ("add", "crash", "echo", "sleep", "word")),
        Config("sqlite", sqlite_entry, SQLITE_READ),
        Config("sqlite-write", sqlite_entry, (*SQLITE_READ, "execute"), writes=True),
        Config("git", git_entry, GIT_READ),
        Config("git-write-github", git_entry, (*GIT_READ, *GIT_WRITE, *GITHUB), writes=True, github=True),
        # Its cache is the one thing it writes, so it is "writes" here; its upstream is a loopback fake.
        Config("name-origin", name_origin_entry, NAME_ORIGIN, writes=True),
        Config("tasks", tasks_entry, TASKS, writes=True),
    ]
}
# In memory each configuration speaks one protocol era (both eras for every tool would double the run
# time; tool handling does not depend on the era). Over stdio the peer speaks 2025-11-25.
ERA_OF: dict[str, Era] = {
    "toy": MODERN,
    "sqlite": LEGACY,
    "sqlite-write": MODERN,
    "git": LEGACY,
    "git-write-github": MODERN,
    "name-origin": LEGACY,
    "tasks": LEGACY,
}
# Over stdio, one process per server: the widest configuration of each.
STDIO_CONFIGS = ("toy", "sqlite-write", "git-write-github", "name-origin", "tasks")

# Tools whose error is allowed to be an internal one: the toy's crash tool exists to raise.
INTERNAL_OK = {("toy", "crash")}


# -- sandboxes ------------------------------------------------------------------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _snapshot(root: Path, *, skip: Path | None = None) -> dict[str, str]:
    """Every file under ``root`` (except under ``skip``) with its content digest."""
    found = {}
    for path in sorted(root.rglob("*")):
        if skip is not None and (path == skip or skip in path.parents):
            continue
        found[str(path.relative_to(root))] = "dir" if path.is_dir() else _digest(path)
    return found


@dataclass
class Target:
    """One configuration's sandbox: the server's flags and what must stay as it was."""

    config: Config
    sandbox: Path
    data: Path  # the served copy (a database file or a repository)
    args: tuple[str, ...]
    env: dict[str, str]
    hints: dict[str, list[Any]]
    outside: dict[str, str] = field(default_factory=dict)
    inside: dict[str, str] = field(default_factory=dict)

    @property
    def served(self) -> Path:
        """What the server may touch: a database's own folder (for its journal), or the served folder."""
        return self.data.parent if self.data.suffix == ".db" else self.data

    @property
    def roots(self) -> list[Path]:
        return [self.served]

    def record(self) -> None:
        # Skipping the sandbox itself would leave nothing to compare.
        assert self.sandbox in self.served.parents, f"{self.served} is not inside {self.sandbox}"
        self.outside = _snapshot(self.sandbox, skip=self.served)
        self.inside = self._inside()

    def _inside(self) -> dict[str, str]:
        if self.data.suffix == ".db":
            return {
                "db": _digest(self.data),
                "files": ",".join(sorted(p.name for p in self.data.parent.iterdir())),
            }
        if (
            self.data / ".git"
        ).is_dir():  # a repository: its files, refs and HEAD (git's own index/logs may move)
            files = _snapshot(self.data, skip=self.data / ".git")
            return {
                **files,
                "refs": git(self.data, "for-each-ref"),
                "HEAD": git(self.data, "rev-parse", "HEAD"),
            }
        return {}

    def check_untouched(self) -> None:
        assert not MARKER.exists(), f"a hostile string ran a shell command: {MARKER} exists"
        assert _snapshot(self.sandbox, skip=self.served) == self.outside, (
            f"{self.config.name}: files outside the served copy changed"
        )
        if self.data.suffix == ".db":
            extra = {p.name for p in self.data.parent.iterdir()} - {
                self.data.name + suffix for suffix in ("", "-journal", "-wal", "-shm")
            }
            assert not extra, f"{self.config.name}: new files beside the database: {sorted(extra)}"
        if not self.config.writes:
            assert self._inside() == self.inside, f"{self.config.name}: a read-only server changed its data"


def make_target(config: Config, sandbox: Path, demo: Path, github_url: str) -> Target:
    sandbox.mkdir(parents=True)
    (sandbox / "outside.txt").write_text("no server may touch this file\n")
    (sandbox / "secret").mkdir()
    (sandbox / "secret" / "key.txt").write_text("not served\n")
    if config.entry is toy_entry:
        data = sandbox / "toy"
        data.mkdir()
        return Target(config, sandbox, data, (), {}, {"name": WORDS, "seconds": [0, 0.01]})
    if config.entry is name_origin_entry:
        data = sandbox / "cache" / "cache.db"
        args = (
            *("--api-url", loopback_nationalize(), "--cache-url", f"sqlite:///{data}"),
            *("--toolsets", "default,details"),  # predict_origin and quota_status too
        )
        PredictionCache.open(f"sqlite:///{data}", ttl_days=30).close()  # the file is there before the run
        names = ["michael", "Zoë Smith", "  ANNA  ", "", "1234", "O'Brien", "李小龍", "x" * 101]
        hints = {"name": names, "names": [names, [names[0]] * 30, [f"n{i} smith" for i in range(25)]]}
        return Target(config, sandbox, data, args, {}, {**hints, "offset": [0, 1, 3]})
    if config.entry is sqlite_entry:
        data = sandbox / "data" / "demo.db"
        data.parent.mkdir()
        shutil.copyfile(demo, data)
        args = ["--db", f"demo={data}", "--timeout-ms", "500"]
        if config.writes:
            args.append("--allow-write")
        escape = sandbox / "escape.db"
        statements = [
            "SELECT * FROM customers",
            "SELECT count(*) FROM orders WHERE id > ?",
            "SELECT name FROM products WHERE id = :id",
            "SELECT * FROM order_totals ORDER BY total_cents DESC",
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
            "INSERT INTO categories(name) VALUES (?)",
            "UPDATE customers SET country = 'NL' WHERE id = ?",
            "DELETE FROM order_items WHERE order_id = 1",
            "DELETE FROM categories",
            "DROP TABLE order_items",
            "CREATE TABLE fuzz(x)",
            "CREATE INDEX fuzz_index ON customers(country)",
            f"ATTACH DATABASE '{escape}' AS escape",
            f"VACUUM INTO '{escape}'",
            "PRAGMA journal_mode = DELETE",
            "SELECT load_extension('/tmp/dockyard-fuzz')",
            "SELECT readfile('/etc/passwd')",
            "BEGIN; DELETE FROM customers; COMMIT",
        ]
        hints = {
            "sql": statements,
            "table": ["customers", "orders", "order_totals", "sqlite_master", "Customers", "missing"],
            "database": ["demo", "other"],
            "params": [[1], {"id": 1}, ["x"], [None, 2]],
            "confirm": [True],
            "max_rows": [1, 10_000],
        }
        return Target(config, sandbox, data, tuple(args), {}, hints)
    if config.entry is tasks_entry:
        data = sandbox / "data" / "tasks.db"
        data.parent.mkdir()
        store = TaskStore(f"sqlite:///{data}")
        seed_demo(store)
        store.close()
        ids = ["TASK-1", "TASK-4", "TASK-007", "TASK-999", "task-3", "WEB-1", "TASK-0"]
        hints = {
            "task_id": ids,
            "blocked_by": ids,
            "parent": [*ids, "@0", "@7", ""],
            "project": ["TASK", "task", "NOPE", "WEB"],
            "key": ["NEW", "TASK", "x", "TOOLONGKEY1"],
            "assignee": ["alice", "bob", ""],
            "cursor": ["", "0", "3.4", "-1"],
            "due": ["2026-01-01", "", "tomorrow"],
            "due_before": ["2026-01-01", "x"],
            "text": ["landing", "%", "_"],
            "labels": [["bug"], ["a,b"]],
            "confirm": [True],
            "document": [{"format": "dockyard-tasks/1", "project": {}, "tasks": []}],
        }
        # Every toolset: the manage toolset is off by default.
        args = ("--database-url", f"sqlite:///{data}", "--toolsets", "all")
        return Target(config, sandbox, data, args, {}, hints)
    repo = make_repo(sandbox / "repo")
    git(repo, "remote", "add", "origin", "git@github.com:acme/widgets.git")
    git(repo, "branch", "feature")
    (repo / "README.md").write_text("# Project\n\nedited, not committed\n")
    (repo / "notes.txt").write_text("untracked\n")
    # git_blame, git_grep and git_tags are off by default (search and tags toolsets): fuzzed by name.
    args = ["--root", str(repo), "--git-timeout", "10", "--tools", "git_blame,git_grep,git_tags"]
    env: dict[str, str] = {}
    if config.writes:
        args.append("--allow-write")
    if config.github:
        args += ["--github-api-url", github_url]
        env["GITHUB_TOKEN"] = TOKEN
    revisions = ["HEAD", "main", "feature", "v1.0", "HEAD~1", "main..feature", "HEAD@{1}"]
    files = [
        "README.md",
        "src/app.py",
        "src",
        ".",
        "notes.txt",
        "../outside.txt",
        str(sandbox / "outside.txt"),
    ]
    hints = {
        "repo_path": [str(repo), "repo", str(sandbox), "..", str(REPO_ROOT)],
        "revision": revisions,
        "revision_range": revisions,
        "base": revisions,
        "target": revisions,
        "contains": revisions,
        "start_point": revisions,
        "path": files,
        "paths": [[f] for f in files] + [["README.md", "notes.txt"]],
        "pattern": ["def", "return", "(", "[", "f[0-9]"],
        "branch": ["main", "feature", "v1.0"],
        "name": ["topic", "topic/x", "feature", "main"],
        "message": ["Change things", "subject\n\nbody"],
        "since": ["2 weeks ago", "2020-01-01"],
        "author": ["Ada"],
        "number": [1, 7, 100, 200, 999],
        "labels": [["bug"]],
        "head": ["acme:feature-1"],
    }
    return Target(config, sandbox, repo, tuple(args), env, hints)


@pytest.fixture(scope="module")
def github() -> Iterator[RunningFake]:
    with RunningFake(FakeGitHub()) as running:
        yield running


@pytest.fixture(scope="module")
def targets(tmp_path_factory, github) -> Iterator[dict[tuple[str, str], Target]]:
    """Sandboxes made on first use, one per (configuration, transport)."""
    root = tmp_path_factory.mktemp("fuzz")
    demo = ensure_demo_database(root / "template" / "demo.db")
    demo_digest = _digest(demo)
    MARKER.unlink(missing_ok=True)

    class Targets(dict):
        def __missing__(self, key: tuple[str, str]) -> Target:
            name, transport = key
            target = make_target(CONFIGS[name], root / transport / name, demo, github.url)
            target.record()
            self[key] = target
            return target

    made = Targets()
    yield made
    assert _digest(demo) == demo_digest, "the sample database the copies came from changed"


# -- in memory ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def portal() -> Iterator[anyio.from_thread.BlockingPortal]:
    with anyio.from_thread.start_blocking_portal() as running:
        yield running


@pytest.fixture(scope="module")
def memory_sessions(portal, targets):
    """One in-memory session per (configuration, era), opened on first use and kept for the module."""
    with ExitStack() as stack:

        class Sessions(dict):
            def __missing__(self, key: tuple[str, Era]):
                name, era = key
                target = targets[name, "memory"]
                with pytest.MonkeyPatch.context() as patch:
                    for variable, value in target.env.items():
                        patch.setenv(variable, value)
                    entry = target.config.entry
                    server = entry.build(entry.parser(with_runner=False).parse_args(list(target.args)))
                session = stack.enter_context(
                    portal.wrap_async_context_manager(open_session(server, era=era, timeout=CALL_TIMEOUT))
                )
                self[key] = session
                return session

        yield Sessions()


def fuzz_settings(examples: int):
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,  # the same examples on every run: CI is reproducible
        database=None,
        print_blob=True,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )


def tool_schema(tools: list[Any], name: str) -> dict[str, Any]:
    found = {t.name: t for t in tools}
    assert name in found, f"{name} is not served"
    return found[name].input_schema


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_every_tool_of_every_configuration_is_fuzzed(config, memory_sessions, portal):
    session = memory_sessions[config, ERA_OF[config]]
    served = {t.name for t in portal.call(session.list_tools)}
    assert served == set(CONFIGS[config].tools)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_the_untouched_check_sees_any_change_outside_the_served_copy(config, targets):
    target = targets[config, "check"]  # a sandbox of its own, no server
    target.check_untouched()
    planted = target.sandbox / "planted.txt"
    planted.write_text("written by a server that escaped its copy\n")
    with pytest.raises(AssertionError, match="outside the served copy changed"):
        target.check_untouched()
    planted.unlink()
    outside = target.sandbox / "outside.txt"
    outside.write_text("changed\n")
    with pytest.raises(AssertionError, match="outside the served copy changed"):
        target.check_untouched()
    outside.write_text("no server may touch this file\n")
    target.check_untouched()
    if not target.inside:
        return  # the toy serves no data
    # A change inside the served copy is what a write configuration may make, and nothing else may.
    changed = target.data if target.data.suffix == ".db" else target.data / "notes.txt"
    changed.write_bytes(changed.read_bytes() + b"\n")
    if target.config.writes:
        target.check_untouched()
    else:
        with pytest.raises(AssertionError, match="a read-only server changed its data"):
            target.check_untouched()


MEMORY_CASES = [
    pytest.param(name, tool, ERA_OF[name], id=f"{name}-{tool}-{ERA_OF[name]}")
    for name, config in CONFIGS.items()
    for tool in config.tools
]


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("config", "tool", "era"), MEMORY_CASES)
def test_fuzzed_arguments_always_get_a_valid_answer(config, tool, era, memory_sessions, targets, portal):
    target = targets[config, "memory"]
    session = memory_sessions[config, era]
    schema = tool_schema(portal.call(session.list_tools), tool)

    @fuzz_settings(MEMORY_EXAMPLES)
    @given(arguments=arguments_for(schema, target.hints))
    def examples(arguments: dict[str, Any]) -> None:
        started = time.monotonic()
        try:
            outcome = portal.call(functools.partial(session.call, tool, arguments, timeout=CALL_TIMEOUT))
        except UnicodeEncodeError:
            # A lone surrogate in an object key: the client cannot encode the request at all, so it never
            # reaches the server (the stdio pass sends such bytes over the wire to the server itself).
            reject()
        except Exception as error:  # a protocol error or a timeout, not a tool result
            raise AssertionError(f"{tool}: no valid answer: {type(error).__name__}: {error}") from error
        assert time.monotonic() - started < CALL_TIMEOUT
        check_answer(
            tool,
            arguments,
            is_error=outcome.is_error,
            text=outcome.text,
            structured=outcome.structured,
            allowed_roots=target.roots,
            internal_ok=(config, tool) in INTERNAL_OK,
        )

    examples()
    assert portal.call(session.ping)
    target.check_untouched()


# The smallest input of each bug the fuzzing found (all fixed): kept as regression cases.
FOUND_BUG_CASES = [
    pytest.param(
        "sqlite-write",
        "query",
        {"sql": "SELECT ?", "params": ["\ud800"]},
        id="sqlite-query-surrogate-param",
    ),
    pytest.param(
        "sqlite-write",
        "execute",
        {"sql": "\ud800"},
        id="sqlite-execute-surrogate-sql",
    ),
    pytest.param(
        "git",
        "git_status",
        {"repo_path": "\x00"},
        id="git-status-nul-repo-path",
    ),
    pytest.param(
        "git",
        "git_log",
        {"paths": ["\ud800"]},
        id="git-log-surrogate-path",
    ),
    pytest.param(
        "git-write-github",
        "git_checkout",
        {"branch": "\ud800"},
        id="git-checkout-surrogate-branch",
    ),
]


@pytest.mark.parametrize(("config", "tool", "arguments"), FOUND_BUG_CASES)
def test_inputs_that_once_broke_a_server_get_a_valid_answer(
    config, tool, arguments, memory_sessions, targets, portal
):
    """Lone surrogates and NUL in arguments once escaped as internal errors."""
    session = memory_sessions[config, ERA_OF[config]]
    outcome = portal.call(functools.partial(session.call, tool, arguments, timeout=CALL_TIMEOUT))
    assert portal.call(session.ping)
    check_answer(
        tool,
        arguments,
        is_error=outcome.is_error,
        text=outcome.text,
        structured=outcome.structured,
        allowed_roots=targets[config, "memory"].roots,
    )


# -- over stdio -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stdio_peers(targets, tmp_path_factory):
    """One server process per server, started on first use, initialised, and stopped at the end."""
    logs = tmp_path_factory.mktemp("fuzz-logs")
    peers: dict[str, StdioPeer] = {}

    class Peers(dict):
        def __missing__(self, name: str) -> StdioPeer:
            target = targets[name, "stdio"]
            script = "python" if target.config.entry is toy_entry else f"dockyard-{target.config.entry.name}"
            args = ("-m", "tests.shared.toy_server") if script == "python" else target.args
            launch = Launch(script, args, env={"XDG_DATA_HOME": str(target.sandbox / "xdg"), **target.env})
            peer = StdioPeer(
                launch.command(),
                env=launch.environment(),
                cwd=str(REPO_ROOT),
                log_path=logs / f"{name}.log",
            )
            peers[name] = peer
            peer.initialize()
            self[name] = peer
            return peer

    try:
        yield Peers()
    finally:
        for peer in peers.values():
            peer.close()


def check_reply(reply: dict[str, Any], tool: str, arguments: Any, target: Target, config: str) -> None:
    assert "error" not in reply, f"{tool}: a JSON-RPC error instead of a result: {reply['error']}"
    result = reply["result"]
    assert isinstance(result.get("content"), list), f"{tool}: a result without content: {str(result)[:500]}"
    text = "\n".join(item.get("text", "") for item in result["content"] if item.get("type") == "text")
    check_answer(
        tool,
        arguments,
        is_error=bool(result.get("isError")),
        text=text,
        structured=result.get("structuredContent"),
        allowed_roots=target.roots,
        internal_ok=(config, tool) in INTERNAL_OK,
    )


STDIO_CASES = [
    pytest.param(name, tool, id=f"{name}-{tool}") for name in STDIO_CONFIGS for tool in CONFIGS[name].tools
]


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize(("config", "tool"), STDIO_CASES)
def test_fuzzed_arguments_over_stdio_always_get_a_valid_answer(config, tool, stdio_peers, targets):
    target = targets[config, "stdio"]
    peer = stdio_peers[config]
    listed = peer.request("tools/list", {}, timeout=CALL_TIMEOUT)["result"]["tools"]
    schema = next(t["inputSchema"] for t in listed if t["name"] == tool)

    @fuzz_settings(STDIO_EXAMPLES)
    @given(arguments=arguments_for(schema, target.hints))
    def examples(arguments: dict[str, Any]) -> None:
        reply = peer.request("tools/call", {"name": tool, "arguments": arguments}, timeout=CALL_TIMEOUT)
        check_reply(reply, tool, arguments, target, config)

    examples()
    assert peer.ping()
    target.check_untouched()


@pytest.mark.slow
@pytest.mark.parametrize("config", STDIO_CONFIGS)
def test_a_lone_surrogate_escape_is_answered_under_the_requests_id(config, stdio_peers):
    peer = stdio_peers[config]
    tool, name = WIRE_ARGUMENT[config]
    request_id = peer.new_id()
    # ensure_ascii: the surrogate travels as the six characters \ud800, as any JSON encoder writes it.
    line = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": {name: "\ud800x"}},
        },
        ensure_ascii=True,
    )
    peer.send_line(line.encode())
    reply = peer.receive(request_id, timeout=CALL_TIMEOUT)
    assert peer.ping()
    assert reply.get("id") == request_id, reply


# A string argument of one tool per server, for the wire-level cases below.
WIRE_ARGUMENT = {
    "toy": ("word", "name"),
    "sqlite-write": ("query", "sql"),
    "git-write-github": ("git_log", "grep"),
    "name-origin": ("predict_origin", "name"),
    "tasks": ("list_tasks", "text"),
}


WIRE_VALUES = {
    "invalid-utf8": "\udcff\udcfe",  # sent as the bytes ED B3 BF ED B3 BE
    "half-emoji": "\ud83d",
    "nuls": "\x00" * 1000,
    "line-separators": "\u2028\u2029\x85",
    "huge": "A" * 3_000_000,  # under the 4 MiB line limit
}
WIRE_CASES = [
    pytest.param(config, label, id=f"{config}-{label}")
    for config in STDIO_CONFIGS
    for label in WIRE_VALUES
    # The toy echoes any name it is given: its 3 MB reply is the test double's, not a server's.
    if not (config == "toy" and label == "huge")
]


@pytest.mark.slow
@pytest.mark.parametrize(("config", "label"), WIRE_CASES)
def test_invalid_utf8_and_huge_arguments_over_stdio(config, label, stdio_peers, targets):
    """Bytes that are not UTF-8, NULs, line separators and a 3 MB string cross the wire and get a valid
    answer under their own request id; the server still answers a ping."""
    peer, target = stdio_peers[config], targets[config, "stdio"]
    tool, name = WIRE_ARGUMENT[config]
    arguments = {name: WIRE_VALUES[label]}
    reply = peer.request("tools/call", {"name": tool, "arguments": arguments}, timeout=CALL_TIMEOUT)
    assert peer.ping()
    assert reply.get("id") is not None, reply
    check_reply(reply, tool, arguments, target, config)
