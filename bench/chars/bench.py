"""Characters a model reads for the same job: Dockyard's servers beside their peers, default flags.

    uv run python bench/chars/bench.py [--only tasks|git|name-origin] [--no-peers] [--work-dir DIR] [--json]

Each job opens one stdio session per server (the official SDK's ClientSession), lists the tools once and
makes the job's calls. What is counted, in characters (Python ``len`` of the decoded text):

* **listing**: per tool, its name + description + input schema as compact JSON (``json.dumps`` with
  ``separators=(",", ":")``, ``ensure_ascii=False``): what hosts turn into the model's tool definitions.
  Titles, annotations and output schemas are not counted (hosts keep them for themselves). The server's
  ``instructions`` (from initialize) are counted with the listing: hosts that use them put them in the
  system prompt, so moving words there is not free.
* **replies**, each counted two ways, because hosts pass one or the other to the model, not both:
  *text* — the text of the reply's ``content`` blocks (Claude Desktop, Cursor, Open WebUI, most clients);
  *structured* — ``structuredContent`` as compact JSON when the reply has it, else the text (Claude Code
  forwards ``JSON.stringify(structuredContent)`` and drops the text when both are sent).
* **job** = listing + the larger of the two reply counts: what the costlier kind of host reads. The wire
  carries both (text + structured); that figure is printed too, for the record.

Jobs (the issue's table): tasks ``next_task`` for alice; tasks alice's todo list + one task; git log of the
last 3 commits + a show of each; name-origin 5 names. Peers: task-master-ai (npm, its MCP server with
``TASK_MASTER_TOOLS=core``, run with ``unshare -n`` when it can be), mcp-server-git (PyPI), and the one-call
name-origin reference (bench/name-origin/reference_server.py). Every generated file — the tasks database,
task-master's project, the cloned repository, the peers' installs — goes to a temporary folder removed at
the end (``--work-dir DIR`` keeps it there instead and reuses the installs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tasks"))
sys.path.insert(0, str(HERE.parents[1]))

from _common import ROOT, peer_venv, use_work_dir, work_dir  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

VENV_BIN = Path(sys.executable).parent
GIT_PEER = "mcp-server-git==2026.10.19"
TASKMASTER_VERSION = "0.43.1"
# The commit whose last three commits the git job reads (a commit of this repository, so the job is the
# same on every run; the clone in the work folder is checked out there).
GIT_REVISION = "d095d2314088f139b83c4fbf073d2d8f97bbefa8"
SHOW = False  # --show: every reply's text on stderr
NAMES = ["Anna Schmidt", "Kenji Tanaka", "Olusegun Adeyemi", "Maria Garcia", "Siobhan Murphy"]
TASKS = 200  # tasks in the generated tracker (bench/tasks/seed.py), one project, P01


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def listing_chars(tools) -> int:
    return sum(len(t.name) + len(t.description or "") + len(compact(t.input_schema)) for t in tools)


def reply_chars(result) -> tuple[int, int]:
    """(text, structured) characters of one reply; see the module's docstring."""
    text = sum(
        len(b.text) if b.type == "text" else len(compact(b.model_dump(mode="json"))) for b in result.content
    )
    structured = len(compact(result.structured_content)) if result.structured_content is not None else text
    return text, structured


@dataclass
class Reading:
    label: str
    instructions: int = 0
    listing: int = 0
    tools: int = 0
    # tool, text, structured (the text when there is none), error, whether structuredContent was sent
    calls: list[tuple[str, int, int, bool, bool]] = field(default_factory=list)

    @property
    def text(self) -> int:
        return sum(c[1] for c in self.calls)

    @property
    def structured(self) -> int:
        return sum(c[2] for c in self.calls)

    @property
    def job(self) -> int:
        return self.instructions + self.listing + max(self.text, self.structured)

    @property
    def wire(self) -> int:
        return self.instructions + self.listing + sum(c[1] + (c[2] if c[4] else 0) for c in self.calls)


class Session:
    """One stdio session: the listing, then calls whose replies are counted (the caller reads them too)."""

    def __init__(self, reading: Reading, session: ClientSession) -> None:
        self.reading, self.session = reading, session

    async def call(self, tool: str, arguments: dict):
        result = await self.session.call_tool(tool, arguments, read_timeout_seconds=120)
        text, structured = reply_chars(result)
        sent = result.structured_content is not None
        self.reading.calls.append((tool, text, structured, bool(result.is_error), sent))
        if SHOW:
            print(f"--- {self.reading.label} {tool} {arguments}\n{text_of(result)}\n", file=sys.stderr)
        if result.is_error:
            print(f"  {self.reading.label}: {tool} failed: {result.content[0].text[:300]}", file=sys.stderr)
        return result


async def measure(
    label: str, command: Sequence[str], job, *, env: dict | None = None, cwd: Path | None = None
) -> Reading:
    params = StdioServerParameters(
        command=command[0], args=list(command[1:]), env={**os.environ, **(env or {})}, cwd=cwd
    )
    reading = Reading(label)
    with open(os.devnull, "w") as devnull:
        async with (
            stdio_client(params, errlog=devnull) as (read, write),
            ClientSession(read, write) as session,
        ):
            initialized = await session.initialize()
            reading.instructions = len(initialized.instructions or "")
            listing = await session.list_tools()
            reading.tools = len(listing.tools)
            reading.listing = listing_chars(listing.tools)
            await job(Session(reading, session))
    return reading


def text_of(result) -> str:
    return "".join(b.text for b in result.content if b.type == "text")


# -- tasks ---------------------------------------------------------------------------------------------


def tasks_fixture(work: Path) -> tuple[str, Path, list]:
    """The generated tracker in our SQLite database and in task-master's layout: (url, project, records)."""
    from seed import generate

    from bench import peer_project, seed_sqlite  # bench/tasks/bench.py

    records = generate(TASKS, 1, seed=11)
    url = seed_sqlite(work / "chars-tasks.db", records, 1)
    return url, peer_project(records, work / "taskmaster-project"), records


def taskmaster(work: Path) -> list[str] | None:
    from bench import install_peer

    try:
        script = install_peer(work / "taskmaster")
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"task-master-ai: not installed ({error})", file=sys.stderr)
        return None
    isolate = (
        ["unshare", "-n"]
        if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0
        else []
    )
    return [*isolate, "node", str(script)]


async def tasks_jobs(work: Path, peers: bool) -> list[tuple[str, Reading, Reading | None, str]]:
    url, project, records = tasks_fixture(work)
    ours = [str(VENV_BIN / "dockyard-tasks"), "--database-url", url, "--actor", "alice"]
    env = {"XDG_DATA_HOME": str(work / "data")}
    peer = taskmaster(work) if peers else None
    peer_env = {"TASK_MASTER_TOOLS": "core", "HOME": str(project)}
    root = str(project)
    rows = []

    async def our_next(s: Session) -> None:
        await s.call("next_task", {"assignee": "alice"})

    async def their_next(s: Session) -> None:
        await s.call("next_task", {"projectRoot": root})

    one = next(r for r in records if r.assignee == "alice" and r.status == "todo")

    async def our_list(s: Session) -> None:
        await s.call("list_tasks", {"assignee": "alice", "status": "todo"})
        await s.call("get_task", {"task_id": f"P01-{one.number}"})

    async def their_list(s: Session) -> None:
        # task-master has no assignee: alice's todo list is every pending task, in one unbounded reply.
        await s.call("get_tasks", {"projectRoot": root, "status": "pending"})
        await s.call("get_task", {"projectRoot": root, "id": str(one.number)})

    for name, mine, theirs in (
        ("tasks: what should alice do next (next_task)", our_next, their_next),
        ("tasks: alice's todo list + one task", our_list, their_list),
    ):
        reading = await measure("dockyard-tasks", ours, mine, env=env)
        other = (
            await measure(
                f"task-master-ai {TASKMASTER_VERSION} core", peer, theirs, env=peer_env, cwd=project
            )
            if peer
            else None
        )
        rows.append((name, reading, other, f"task-master-ai {TASKMASTER_VERSION} core"))
    return rows


# -- git -----------------------------------------------------------------------------------------------


def clone_at(work: Path, revision: str) -> Path:
    repo = work / "chars-repo"
    if not (repo / ".git").exists():
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(ROOT), str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--detach", revision], check=True)
    return repo


async def git_jobs(work: Path, peers: bool) -> list[tuple[str, Reading, Reading | None, str]]:
    repo = clone_at(work, GIT_REVISION)
    commits = subprocess.run(
        ["git", "-C", str(repo), "rev-list", "--max-count=3", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    ours = [str(VENV_BIN / "dockyard-git"), "--root", str(repo)]
    # A host's own environment may hold a GitHub token; the default job is measured without one.
    env = {"GITHUB_TOKEN": "", "XDG_CACHE_HOME": str(work / "cache")}

    async def mine(s: Session) -> None:
        await s.call("git_log", {"max_count": 3})
        for commit in commits:
            await s.call("git_show", {"revision": commit})

    async def theirs(s: Session) -> None:
        await s.call("git_log", {"repo_path": str(repo), "max_count": 3})
        for commit in commits:
            await s.call("git_show", {"repo_path": str(repo), "revision": commit})

    reading = await measure("dockyard-git", ours, mine, env=env)
    other = None
    if peers:
        try:
            venv = peer_venv("git-peer", [GIT_PEER])
        except (OSError, subprocess.CalledProcessError) as error:
            print(f"{GIT_PEER}: not installed ({error})", file=sys.stderr)
            return [("git: what changed in the last 3 commits (log + 3 shows)", reading, None, GIT_PEER)]
        other = await measure(
            "mcp-server-git", [str(venv / "bin" / "mcp-server-git"), "--repository", str(repo)], theirs
        )
    return [("git: what changed in the last 3 commits (log + 3 shows)", reading, other, GIT_PEER)]


# -- name-origin ---------------------------------------------------------------------------------------


async def name_origin_jobs(work: Path, peers: bool) -> list[tuple[str, Reading, Reading | None, str]]:
    from tests.name_origin.fake_nationalize import FakeNationalize, RunningFake

    with RunningFake(FakeNationalize(free_limit=1_000_000)) as fake:
        ours = [
            str(VENV_BIN / "dockyard-name-origin"),
            *("--api-url", fake.url, "--cache-url", f"sqlite:///{work / 'chars-names.db'}"),
        ]

        async def mine(s: Session) -> None:
            await s.call("batch_predict", {"names": NAMES})

        async def theirs(s: Session) -> None:
            await s.call("batch_predict", {"names": NAMES})

        reading = await measure("dockyard-name-origin", ours, mine, env={"XDG_DATA_HOME": str(work / "data")})
        other = None
        if peers:
            reference = [sys.executable, str(HERE.parent / "name-origin" / "reference_server.py")]
            other = await measure("reference", reference, theirs, env={"NATIONALIZE_URL": fake.url})
    return [("name-origin: 5 names (batch_predict)", reading, other, "one-call reference")]


# -- report --------------------------------------------------------------------------------------------

JOBS = {"tasks": tasks_jobs, "git": git_jobs, "name-origin": name_origin_jobs}
# The peers' figures as last measured here (2026-11-28, bench/chars/README.md): shown, marked, for a job
# whose peer could not be installed or started in this run (no network, --no-peers).
LAST_MEASURED = {
    "tasks: what should alice do next (next_task)": 7_220,
    "tasks: alice's todo list + one task": 45_781,
    "git: what changed in the last 3 commits (log + 3 shows)": 13_491,
    "name-origin: 5 names (batch_predict)": 1_328,
}


def table(rows) -> str:
    lines = [
        "| job | ours | peer | ours/peer | ours: instructions + listing (tools) | ours: replies text / structured "
        "| peer: listing (tools) | peer: replies text / structured |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, ours, peer, _ in rows:
        mine = (
            f"{ours.instructions:,} + {ours.listing:,} ({ours.tools}) | {ours.text:,} / {ours.structured:,}"
        )
        if peer:
            theirs = (
                f"{peer.job:,} | {ours.job / peer.job:.2f}× | {mine} | "
                f"{peer.instructions + peer.listing:,} ({peer.tools}) | "
                f"{peer.text:,} / {peer.structured:,}"
            )
        else:
            last = LAST_MEASURED.get(name)
            theirs = (
                f"{last:,} (last measured, not this run) | {ours.job / last:.2f}× | {mine} | — | —"
                if last
                else f"not measured | — | {mine} | — | —"
            )
        lines.append(f"| {name} | {ours.job:,} | {theirs} |")
    lines += ["", "Peers: " + "; ".join(f"{r[0].split(':')[0]}: {r[3]}" for r in rows), ""]
    lines.append("Per call (text / structured characters):")
    lines.append("")
    for name, ours, peer, _ in rows:
        for reading in (ours, peer):
            if reading:
                calls = ", ".join(
                    f"{t} {a:,}/{b:,}" + (" ERROR" if e else "") for t, a, b, e, _ in reading.calls
                )
                lines.append(f"- {name}, {reading.label}: {calls}; on the wire (both) {reading.wire:,}")
    return "\n".join(lines)


async def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=list(JOBS), help="run these jobs (repeatable)")
    parser.add_argument("--no-peers", action="store_true", help="only Dockyard's servers")
    parser.add_argument("--work-dir", type=Path, help="keep generated data and peer installs here (reused)")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    parser.add_argument("--show", action="store_true", help="print every reply's text (stderr)")
    args = parser.parse_args(argv)
    global SHOW
    SHOW = args.show
    use_work_dir(args.work_dir)
    work = work_dir()
    rows = []
    for name in args.only or list(JOBS):
        rows += await JOBS[name](work, not args.no_peers)
    print(table(rows))
    if args.json:
        print(
            json.dumps(
                {
                    name: {
                        "ours": ours.__dict__ | {"job": ours.job},
                        "peer": (peer.__dict__ | {"job": peer.job}) if peer else None,
                    }
                    for name, ours, peer, _ in rows
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")
    raise SystemExit(asyncio.run(main()))
