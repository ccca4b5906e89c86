"""Who the start-up bench measures, and how each is launched: the installed Dockyard servers (as
``dockyard list`` shows them), the reference peers, their ``uvx`` launches, ``dockyard serve all`` over
HTTP, and optionally the Dockyard servers as they were at an earlier revision (``--baseline``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import ROOT, peer_venv, work_dir

BIN = Path(sys.executable).parent


def data_dir() -> Path:
    """XDG_DATA_HOME of every server started: the demo database, caches (in the run's work folder)."""
    return work_dir() / "startup-data"


def cache_dir() -> Path:
    """XDG_CACHE_HOME of every server started (never the user's own)."""
    return work_dir() / "startup-cache"


DEMO_TABLE = "products"
GIT_PEER = ("mcp-server-git==2026.10.19",)
SQLITE_PEER = ("mcp-server-sqlite==2025.4.25", "mcp<2")
# uvx launches with --compile-bytecode build their environment in a cache of their own: uvx compiles only
# when it creates an environment, so one cache cannot hold both forms.
COMPILED_UV_CACHE = "uv-cache-compiled"  # in the work folder
# The key the loopback fake of nationalize.io accepts (tests/name_origin/fake_nationalize.py): its quota
# without a key (100 names a day) would run out within one run.
FAKE_API_KEY = "nat_" + "S3cr3tK3y" * 4

Call = tuple[str, dict[str, Any]]


@dataclass
class Subject:
    label: str
    command: list[str]
    calls: list[Call]
    kind: str = "stdio"  # stdio | launch (through uvx or uv run: start-up only) | http
    reference: bool = False
    versus: str = "mcp-server-git (reference)"  # the subject its ratios are taken against
    env: dict[str, str] = field(default_factory=dict)
    bytecode: str = ""  # how much of what it imports has compiled bytecode


def child_env(subject: Subject | None = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    env["XDG_DATA_HOME"] = str(data_dir())
    env["XDG_CACHE_HOME"] = str(cache_dir())
    env["FASTMCP_CHECK_FOR_UPDATES"] = "off"
    return {**env, **(subject.env if subject else {})}


def demo_database() -> Path:
    """The sample database ``dockyard-sqlite --demo`` serves, generated where the bench's servers look."""
    from dockyard_sqlite.demo import ensure_demo_database
    from dockyard_sqlite.settings import default_demo_path

    os.environ["XDG_DATA_HOME"] = str(data_dir())
    return ensure_demo_database(default_demo_path())


def git_checkout() -> Path:
    """This checkout's main working tree. In a linked worktree (``.git`` is a file) the git directory lies
    outside the folder, which dockyard-git refuses as outside its roots, so both git servers get the
    main working tree of the same repository instead."""
    common = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--path-format=absolute", "--git-common-dir"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return Path(common).parent if (ROOT / ".git").is_file() else ROOT


def installed_servers() -> list[str]:
    """What ``dockyard list`` shows: the Dockyard servers installed in this environment."""
    listing = subprocess.run([str(BIN / "dockyard"), "list"], capture_output=True, text=True, check=True)
    # One line per server ("NAME  COMMAND  SUMMARY"), its toolsets indented beneath it.
    return [line.split()[0] for line in listing.stdout.splitlines() if line.strip() and not line[0].isspace()]


def our_plans(demo: Path, fake_api: str | None) -> dict[str, tuple[list[str], list[Call]]]:
    """Each known Dockyard server's arguments and the tools whose first call is measured."""
    sql = f"SELECT * FROM {DEMO_TABLE} LIMIT 10"
    # Every call reaches the loopback fake (no cache), so the first one opens the HTTP client. The tools
    # measured are in the `details` toolset (off by default since bench/chars' work): served by name.
    tools = ["--tools", "predict_origin,quota_status"]
    name_origin = [*(["--api-url", fake_api, "--no-cache"] if fake_api else ["--offline"]), *tools]
    return {
        "sqlite": (
            ["--demo"],
            [("list_tables", {}), ("describe_table", {"table": DEMO_TABLE}), ("query", {"sql": sql})],
        ),
        "git": (["--root", str(git_checkout())], [("git_status", {}), ("git_log", {"max_count": 10})]),
        "tasks": (
            ["--demo"],
            [
                ("list_projects", {}),
                ("list_tasks", {}),
                ("get_task", {"task_id": "TASK-1"}),
                ("next_task", {}),
            ],
        ),
        "name-origin": (name_origin, [("predict_origin", {"name": "maria"}), ("quota_status", {})]),
    }


def compiled_share(folders: list[Path]) -> str:
    """'N% of M modules': the share of ``.py`` files under ``folders`` with bytecode Python can use."""
    total = compiled = 0
    for folder in folders:
        for source in folder.rglob("*.py"):
            total += 1
            cached = Path(importlib.util.cache_from_source(str(source)))
            try:
                compiled += cached.stat().st_mtime >= source.stat().st_mtime
            except OSError:
                pass
    return f"{100 * compiled / total:.0f}% of {total:,}" if total else "—"


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def export_baseline(revision: str) -> tuple[str, Path]:
    """Our sources at ``revision`` (``git archive``), compiled, in the work folder: (short hash, folder)."""
    short = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", revision], capture_output=True, text=True, check=True
    ).stdout.strip()
    folder = work_dir() / f"baseline-{short}"
    if not folder.exists():
        folder.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", short, "shared", "servers"], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(folder)], check=True)
    return short, folder


def subjects(args: Any, fake_api: str | None) -> list[Subject]:
    demo = demo_database()
    plans = our_plans(demo, fake_api)
    # The workspace's own modules are installed editable (outside site-packages, which uv compiles), and
    # where PYTHONDONTWRITEBYTECODE is set (this machine) no start writes their bytecode: compile them, as
    # the baseline's export is, so both columns compare code, not compilation (a start without it paid for
    # compiling each module it imports; elsewhere the first start writes their bytecode).
    own = [ROOT / "shared" / "src", *sorted(ROOT.glob("servers/*/src"))]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *map(str, own)], check=True)
    ours_bytecode = compiled_share(
        [site_packages(Path(sys.prefix)), ROOT / "shared" / "src", *ROOT.glob("servers/*/src")]
    )
    found: list[Subject] = []
    names = installed_servers()
    for name in names:
        server_args, calls = plans.get(name, ([], []))
        if not calls:
            print(f"note: no tool plan for {name}; only its start-up is measured", file=sys.stderr)
        command = [str(BIN / f"dockyard-{name}"), *server_args]
        env = {"NATIONALIZE_API_KEY": FAKE_API_KEY} if name == "name-origin" and fake_api else {}
        found.append(Subject(f"dockyard-{name}", command, calls, env=env, bytecode=ours_bytecode))
    if args.baseline:
        short, folder = export_baseline(args.baseline)
        sources = [folder / "shared" / "src", *sorted(folder.glob("servers/*/src"))]
        baseline_bytecode = compiled_share([site_packages(Path(sys.prefix)), *sources])
        path = os.pathsep.join(str(source) for source in sources)
        for subject in list(found):
            name = subject.label.removeprefix("dockyard-")
            if (folder / "servers" / name).is_dir():
                found.append(
                    Subject(
                        f"{subject.label} @{short}",
                        subject.command,
                        subject.calls,
                        env={**subject.env, "PYTHONPATH": path},
                        bytecode=baseline_bytecode,
                    )
                )
    git_peer = peer_venv("git-peer", list(GIT_PEER))
    sqlite_peer = peer_venv("sqlite-peer", list(SQLITE_PEER))
    sql = f"SELECT * FROM {DEMO_TABLE} LIMIT 10"
    repo = str(git_checkout())
    found += [
        Subject(
            "mcp-server-git (reference)",
            [str(git_peer / "bin" / "mcp-server-git"), "--repository", repo],
            [("git_status", {"repo_path": repo}), ("git_log", {"repo_path": repo, "max_count": 10})],
            reference=True,
            bytecode=compiled_share([site_packages(git_peer)]),
        ),
        Subject(
            "mcp-server-sqlite (SDK 1.x)",
            [str(sqlite_peer / "bin" / "mcp-server-sqlite"), "--db-path", str(demo)],
            [
                ("list_tables", {}),
                ("describe_table", {"table_name": DEMO_TABLE}),
                ("read_query", {"query": sql}),
            ],
            bytecode=compiled_share([site_packages(sqlite_peer)]),
        ),
    ]
    if not args.no_uvx and shutil.which("uvx"):
        found += launcher_subjects(found, repo)
    if not args.no_http:
        found.append(
            Subject(
                "dockyard serve all (HTTP)",
                [str(BIN / "dockyard"), "serve", "all"],
                [],
                "http",
                bytecode=ours_bytecode,
            )
        )
    return [s for s in found if not args.only or any(part in s.label for part in args.only)]


def launcher_subjects(found: list[Subject], repo: str) -> list[Subject]:
    """Each server launched as hosts launch it: with ``uvx``, both without and with ``--compile-bytecode``
    (the git peer from PyPI the same two ways), and with ``uv run --directory`` (this checkout)."""
    compiled = {"UV_CACHE_DIR": str(work_dir() / COMPILED_UV_CACHE)}
    launches: list[Subject] = []
    ours = [s for s in found if s.label.startswith("dockyard-") and "@" not in s.label]
    for subject in ours:
        name = subject.label.removeprefix("dockyard-")
        source = ["--from", str(ROOT / "servers" / name), subject.label, *subject.command[1:]]
        launches += [
            Subject(
                f"uvx {name}",
                ["uvx", *source],
                [],
                "launch",
                versus="uvx mcp-server-git",
                bytecode="uvx default: none",
            ),
            Subject(
                f"uvx --compile-bytecode {name}",
                ["uvx", "--compile-bytecode", *source],
                [],
                "launch",
                versus="uvx --compile-bytecode mcp-server-git",
                env=compiled,
                bytecode="compiled at install",
            ),
        ]
        launches.append(
            Subject(
                f"uv run --directory {name}",
                ["uv", "run", "--quiet", "--directory", str(ROOT), subject.label, *subject.command[1:]],
                [],
                "launch",
                bytecode=subject.bytecode,
            )
        )
    peer = ["--from", GIT_PEER[0], "mcp-server-git", "--repository", repo]
    launches += [
        Subject(
            "uvx mcp-server-git",
            ["uvx", *peer],
            [],
            "launch",
            versus="uvx mcp-server-git",
            bytecode="uvx default: none",
        ),
        Subject(
            "uvx --compile-bytecode mcp-server-git",
            ["uvx", "--compile-bytecode", *peer],
            [],
            "launch",
            versus="uvx --compile-bytecode mcp-server-git",
            env=compiled,
            bytecode="compiled at install",
        ),
    ]
    return launches
