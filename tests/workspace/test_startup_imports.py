"""Start-up stays light: a server answers ``initialize`` without importing what no first message needs.

bench/startup measures the cost (see its README): these modules made up most of the time between a host
spawning a server and its ``initialize`` reply, and none of them is needed to give that reply. Each is
imported later, by the first tool that needs it or by the warm-up that starts once ``initialize`` has
been answered. This test keeps it so, without timing anything: in a fresh interpreter, each installed
server's entry point answers ``initialize`` over stdio, then reports what ``sys.modules`` held at that
moment.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dockyard_shared.cli import discover_servers
from tests.harness import INITIALIZE, VENV_BIN

# Module → who imports it when it is finally needed.
DEFERRED = {
    "sqlalchemy": "sqlite and tasks, on the first database use",
    "alembic": "tasks, when its database needs migrating (a first start does)",
    "psycopg": "tasks, on a PostgreSQL URL",
    "github": "PyGithub, the git server's first GitHub call",
    "httpx": "name-origin, on its first upstream request",
    "jsonref": "FastMCP, for a schema dockyard_shared.schema.inline_local_refs leaves to it (none of ours)",
    "requests": "jsonref's import (remote $ref loading, never used)",
    "key_value": "FastMCP's session-state store, made on its first write (dockyard_shared.server)",
    "beartype": "key_value's import",
    "jsonschema": "the MCP client side's output-schema validation",
    "fastmcp.client": "FastMCP's client, which no server needs",
    "docket": "fastmcp-tasks' engine (pydocket, ~1.5 s), only with --tasks",
    "griffe": "FastMCP's docstring parsing, for a docstring with sections (ours have none: dockyard_shared.toolsets)",
    "dockyard_git.github_api.models": "the git server's GitHub toolset, served only with a token",
    "dockyard_git.remotes.models": "the git server's remote toolset, off by default (--allow-remote)",
    "dockyard_git.local_models": "the git server's worktrees, merging and tags toolsets, off by default",
}

# What a server imports before initialize on purpose, and why (kept short: each entry is start-up time).
# None at a start like these (the second, on a database the first one made): dockyard-tasks checks a SQLite
# file at the newest revision with the standard sqlite3 module and opens its store after initialize. Where
# it must open the store before serving, it imports SQLAlchemy (and psycopg, alembic) then, on purpose, so
# that a failure stops it with the reason: a first start or a database to migrate (alembic), PostgreSQL
# (psycopg; the revision check runs through SQLAlchemy), a URL only SQLAlchemy parses (dockyard_tasks.opening).
NEEDED_BEFORE_INITIALIZE: dict[str, dict[str, str]] = {}

# Every server with no arguments, and starts with arguments that change what is checked before serving.
STARTS = [pytest.param(name, (), id=name) for name in sorted(discover_servers())] + [
    pytest.param("tasks", ("--demo",), id="tasks --demo"),  # also looks for its sample project
]

# Run as the server process: the server's own entry point, plus a SIGUSR1 handler that writes the names in
# sys.modules to a file, so the test can ask at the moment it chooses.
CHILD = """
import json, signal, sys
from importlib.metadata import entry_points
report, name, *argv = sys.argv[1:]
def dump(signum, frame):
    with open(report + ".tmp", "w") as out:
        json.dump(sorted(sys.modules), out)
    import os
    os.replace(report + ".tmp", report)
signal.signal(signal.SIGUSR1, dump)
(point,) = entry_points(group="dockyard.servers", name=name)
from dockyard_shared.runner import run_server
sys.exit(run_server(point.load(), argv))
"""


# Never imported by listing (nor by the warm-up that starts after it): they made ~130 ms of a first tools/list.
NOT_FOR_LISTING = ("key_value", "beartype", "jsonref", "requests")
LISTINGS = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")


def modules_when_initialized(
    name: str,
    tmp_path: Path,
    args: tuple[str, ...] = (),
    then: tuple[str | tuple[str, dict], ...] = (),
    settle: float = 0.0,
) -> set[str]:
    """The modules server ``name`` has imported once its ``initialize`` reply is on stdout (and the replies
    to the ``then`` requests), at its second start: the first one may create what later starts find (a
    sample database, a migrated schema), or ``settle`` seconds after those replies."""
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)  # the git server's default root is the cwd
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "FASTMCP_CHECK_FOR_UPDATES": "off"}
    env.pop("GITHUB_TOKEN", None)  # the default start: no token, so the git server's GitHub toolset is off
    _initialized_modules(name, args, tmp_path / "first.json", repo, env, tmp_path, (), 0.0)
    return _initialized_modules(name, args, tmp_path / "second.json", repo, env, tmp_path, then, settle)


def _initialized_modules(
    name: str,
    args: tuple[str, ...],
    report: Path,
    repo: Path,
    env: dict[str, str],
    tmp_path: Path,
    then: tuple[str | tuple[str, dict], ...],
    settle: float,
) -> set[str]:
    process = subprocess.Popen(
        [str(VENV_BIN / "python"), "-c", CHILD, str(report), name, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=open(tmp_path / "stderr.log", "wb"),  # noqa: SIM115 - the child owns it
        cwd=repo,
        env=env,
    )
    try:
        process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        process.stdin.flush()
        reply = json.loads(process.stdout.readline() or b"null")
        assert reply and "result" in reply, (tmp_path / "stderr.log").read_text()
        if then:
            process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        for number, request in enumerate(then, start=2):
            method, params = (request, None) if isinstance(request, str) else request
            message = {"jsonrpc": "2.0", "id": number, "method": method}
            if params is not None:
                message["params"] = params
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
            reply = json.loads(process.stdout.readline() or b"null")
            assert reply and reply.get("id") == number and "result" in reply, (method, reply)
        time.sleep(settle)
        process.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 60
        while not report.exists():
            assert process.poll() is None and time.monotonic() < deadline, "the server did not report"
            time.sleep(0.05)
        return set(json.loads(report.read_text()))
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def imported(modules: set[str], name: str) -> bool:
    return name in modules or any(module.startswith(name + ".") for module in modules)


@pytest.mark.skipif(sys.platform == "win32", reason="the child reports on SIGUSR1")
def test_the_frameworks_themselves_import_none_of_the_deferred_modules():
    """The premise of the test below: FastMCP and the MCP SDK do not import these on their own (if an
    upgrade starts to, this fails instead of blaming a server)."""
    script = "import json, sys, fastmcp, mcp; print(json.dumps(sorted(sys.modules)))"
    listing = subprocess.run(
        [str(VENV_BIN / "python"), "-c", script], capture_output=True, text=True, check=True
    )
    modules = set(json.loads(listing.stdout))
    assert [name for name in DEFERRED if imported(modules, name)] == []


@pytest.mark.skipif(sys.platform == "win32", reason="the child reports on SIGUSR1")
@pytest.mark.parametrize(("name", "args"), STARTS)
def test_answering_initialize_imports_none_of_the_deferred_modules(name, args, tmp_path):
    modules = modules_when_initialized(name, tmp_path, args)
    allowed = NEEDED_BEFORE_INITIALIZE.get(name, {})
    early = {
        module: why for module, why in DEFERRED.items() if imported(modules, module) and module not in allowed
    }
    assert early == {}, f"dockyard-{name} imported these before answering initialize: {early}"


@pytest.mark.skipif(sys.platform == "win32", reason="the child reports on SIGUSR1")
@pytest.mark.parametrize(("name", "args"), STARTS)
def test_listing_imports_neither_the_session_state_store_nor_jsonref(name, args, tmp_path):
    # Asked a second after the listings: the warm-up, which starts once they are answered, has had time
    # to run, and does not import them either.
    modules = modules_when_initialized(name, tmp_path, args, then=LISTINGS, settle=1.0)
    assert [module for module in NOT_FOR_LISTING if imported(modules, module)] == []


def test_an_entry_points_early_work_runs_before_fastmcp_is_imported():
    """``ServerEntry.before_imports`` (dockyard-sqlite starts its first worker process there) runs once the
    arguments are parsed and before the runner imports FastMCP, so that the work overlaps that import."""
    script = """
import sys
from dockyard_shared.problems import InvalidArgument
from dockyard_shared.runner import ServerEntry, run_server
seen = []
def build(args):
    raise InvalidArgument("stopped after the imports")
entry = ServerEntry(
    name="probe", summary="probe", build=build, before_imports=lambda args: seen.append("fastmcp" in sys.modules)
)
print(run_server(entry, []), seen, "fastmcp" in sys.modules)
"""
    run = subprocess.run([str(VENV_BIN / "python"), "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["2", "[False]", "True"], run.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="the child reports on SIGUSR1")
def test_a_call_that_reports_progress_to_no_one_does_not_import_the_task_engine(tmp_path):
    """A batch_predict from a client that sent no progress token, on a server without --tasks: FastMCP's
    report_progress would import pydocket to look for a task to update (~1.5 s, on the first call), so
    dockyard_shared.progress sends progress only where a token or a task can show it."""
    from tests.name_origin.fake_nationalize import FakeNationalize, RunningFake

    call = {"name": "batch_predict", "arguments": {"names": ["michael", "anna"]}}  # no _meta.progressToken
    with RunningFake(FakeNationalize()) as fake:
        args = ("--api-url", fake.url, "--cache-url", f"sqlite:///{tmp_path / 'cache.db'}")
        modules = modules_when_initialized("name-origin", tmp_path, args, then=(("tools/call", call),))
    assert imported(modules, "dockyard_name_origin.client") and not imported(modules, "docket")
