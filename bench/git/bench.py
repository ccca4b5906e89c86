"""dockyard-git vs the reference mcp-server-git on a large history, side by side.

    uv run python bench/git/bench.py [--repo PATH] [--repeat 5]

Without --repo it builds (once) a 50,000-commit history with make_history.py in a temporary folder
(``$TMPDIR/dockyard-bench/big-history``, kept between runs: it takes a minute to build), never inside the
checkout: there it would become one more repository of this checkout, which bench/startup and bench/load
serve. Any local clone works too.
Both servers are driven over stdio by the same SDK client. The report gives median latency per call, the
ratio peer/ours (above 1 means we are faster), response bytes and each server's peak memory.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import CLIENTS, ROOT, Case, client_label, peer_venv, report, run_side_by_side, selected
from make_history import DEFAULT_PATH, build


def rev(repo: Path, expression: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", expression], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()


def find_commit(repo: Path, subject: str) -> str:
    out = subprocess.run(
        ["git", "log", "--format=%H", f"--grep=^{subject}", "-n", "1"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", default=None)
    parser.add_argument("--only", action="append", help="run only the cases whose name contains this")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--client", choices=CLIENTS, default="python", help="the MCP client that drives both")
    args = parser.parse_args()
    stale = ROOT / "bench" / ".work" / "big-history"  # where earlier versions built it, inside the checkout
    if stale.exists():
        print(
            f"note: remove {stale}: left by an earlier version of this benchmark, it is served as one more "
            "repository of this checkout by bench/startup and bench/load",
            file=sys.stderr,
        )
    repo = Path(args.repo).resolve() if args.repo else build(DEFAULT_PATH, 50_000, 3_000)
    peer = peer_venv("git-peer", ["mcp-server-git==2026.10.19"])
    big = find_commit(repo, "big refactor") or rev(repo, "HEAD")
    before_huge = find_commit(repo, "grow the big files") or rev(repo, "HEAD~1")
    r = args.repeat
    path = str(repo)
    cases = [
        Case("git_status", ("git_status", {}), ("git_status", {"repo_path": path}), r),
        Case(
            "git_log 10", ("git_log", {"max_count": 10}), ("git_log", {"repo_path": path, "max_count": 10}), r
        ),
        Case(
            "git_log 1000",
            ("git_log", {"max_count": 1000}),
            ("git_log", {"repo_path": path, "max_count": 1000}),
            r,
        ),
        Case(
            "git_diff vs HEAD~200",
            ("git_diff", {"base": "HEAD~200"}),
            ("git_diff", {"repo_path": path, "target": "HEAD~200"}),
            r,
        ),
        Case(
            "git_show big commit",
            ("git_show", {"revision": big}),
            ("git_show", {"repo_path": path, "revision": big}),
            r,
        ),
        Case(
            "git_show unknown revision (error)",
            ("git_show", {"revision": "no-such-branch"}),
            ("git_show", {"repo_path": path, "revision": "no-such-branch"}),
            r,
        ),
        Case(
            "git_log unbounded (-1)",
            ("git_log", {"max_count": -1}),
            ("git_log", {"repo_path": path, "max_count": -1}),
            1,
            300,
        ),
        Case(
            "git_diff 25 MB",
            ("git_diff", {"base": before_huge}),
            ("git_diff", {"repo_path": path, "target": before_huge}),
            1,
            300,
        ),
    ]
    cases = selected(cases, args.only)
    peaks = await run_side_by_side(
        cases,
        [str(ROOT / ".venv" / "bin" / "dockyard-git"), "--root", path],
        [str(peer / "bin" / "mcp-server-git"), "--repository", path],
        args.client,
    )
    memory = {"dockyard-git": peaks["ours"], "mcp-server-git": peaks["peer"]}
    commits = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()
    title = f"dockyard-git vs mcp-server-git, {commits} commits ({repo.name}), driven by {client_label(args.client)}"
    print(report(title, cases, memory))


if __name__ == "__main__":
    asyncio.run(main())
