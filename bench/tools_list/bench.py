"""What each server's tool list costs a host's context, beside the peers': tools/list over stdio.

Hosts put every listed tool's description and input schema into the model's context on every turn, so this
is paid on every message. For each Dockyard server (every installed one, each toolset alone and all of them
at once) and each peer, it lists the tools through the official SDK client over stdio and reports the
number of tools, the mean and largest description + input schema per tool (characters: the description plus
the schema as compact JSON, as it travels), and the whole tools/list reply. No timing: sizes are exact.

    uv run python bench/tools_list/bench.py            # prints a Markdown table
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import ROOT, peer_venv, serve, work_dir

from dockyard_shared.cli import discover_servers

# What each server needs to start without any external service (a GitHub token is read only when a
# github_* tool is called, so a dummy one lists the github toolset).
NEEDS: dict[str, list[str]] = {
    "sqlite": ["--demo"],
    "git": ["--root", str(ROOT)],
    "name-origin": ["--offline"],
}
ENV = {"GITHUB_TOKEN": "bench-token-not-used"}  # XDG_DATA_HOME: the work folder (main)


def tool_size(tool) -> int:
    schema = json.dumps(tool.input_schema, separators=(",", ":"), ensure_ascii=False)
    return len(tool.description or "") + len(schema)


async def measure(label: str, command: Sequence[str]) -> dict:
    async with serve(label, command, env=ENV) as server:
        listing = await server.session.list_tools()
    sizes = [tool_size(tool) for tool in listing.tools]
    reply = len(json.dumps(listing.model_dump(mode="json", by_alias=True, exclude_none=True)))
    return {
        "label": label,
        "tools": len(sizes),
        "mean": round(sum(sizes) / len(sizes)) if sizes else 0,
        "max": max(sizes, default=0),
        "max_description": max((len(t.description or "") for t in listing.tools), default=0),
        "reply": reply,
    }


def our_commands() -> list[tuple[str, list[str]]]:
    commands = []
    for name, entry in discover_servers().items():
        script = str(Path(sys.executable).parent / f"dockyard-{name}")
        base = [script, *NEEDS.get(name, [])]
        for toolset in entry.toolsets:
            commands.append(
                (f"dockyard-{name} --toolsets {toolset.name}", [*base, "--toolsets", toolset.name])
            )
        commands.append((f"dockyard-{name} (default flags)", base))
        commands.append((f"dockyard-{name} --toolsets all", [*base, "--toolsets", "all"]))
    return commands


def peer_commands(demo: Path) -> list[tuple[str, list[str]]]:
    git_peer = peer_venv("git-peer", ["mcp-server-git==2026.10.19"])
    sqlite_peer = peer_venv("sqlite-peer", ["mcp-server-sqlite==2025.4.25", "mcp<2"])
    return [
        ("mcp-server-git (reference)", [str(git_peer / "bin" / "mcp-server-git"), "--repository", str(ROOT)]),
        (
            "mcp-server-sqlite (reference)",
            [str(sqlite_peer / "bin" / "mcp-server-sqlite"), "--db-path", str(demo)],
        ),
    ]


async def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-peers", action="store_true", help="only Dockyard's servers")
    args = parser.parse_args(argv)
    ENV["XDG_DATA_HOME"] = str(work_dir() / "tools-list-data")
    from dockyard_sqlite.demo import ensure_demo_database

    demo = ensure_demo_database(work_dir() / "tools-list-demo.db")
    rows = []
    for label, command in [*our_commands(), *([] if args.no_peers else peer_commands(demo))]:
        try:
            rows.append(await measure(label, command))
        except Exception as error:  # one server that fails to start must not hide the others' figures
            print(f"{label}: failed to list tools ({type(error).__name__}: {error})", file=sys.stderr)
    print(
        "| server and flags | tools | mean chars/tool | largest tool | longest description | tools/list reply |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['label']} | {row['tools']} | {row['mean']:,} | {row['max']:,} | "
            f"{row['max_description']:,} | {row['reply']:,} |"
        )


if __name__ == "__main__":
    os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")
    anyio.run(main)
