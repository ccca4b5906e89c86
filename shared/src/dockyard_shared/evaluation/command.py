"""``dockyard eval``: run the data set against a model and report how well it picks our tools."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..flags import DockyardArgumentParser
from ..problems import Problem
from .cases import DATASET, Case, load_cases
from .chat import ChatClient, EndpointError, RunStopped
from .report import render, summary
from .scoring import Verdict, score

if TYPE_CHECKING:
    import mcp.types as mt

    from ..runner import ServerEntry

__all__ = ["SYSTEM_PROMPT", "run_eval"]

SYSTEM_PROMPT = (
    "You are an assistant with the tools of the Dockyard {server} MCP server. When a tool answers the "
    "user's request, call it; when none does, answer directly without a tool call."
)


def _parser() -> DockyardArgumentParser:
    parser = DockyardArgumentParser(
        prog="dockyard eval",
        description="Score how well a model picks Dockyard's tools: each case of the data set goes to an "
        "OpenAI-compatible chat completions endpoint with the server's tools (as `dockyard tools --format "
        "openai` exports them), and the first tool call is scored. Flags this command does not know are "
        "server flags (e.g. --toolsets, --read-only), added to every case's own.",
    )
    parser.add_argument(
        "--base-url", required=True, help="e.g. https://api.openai.com/v1, http://localhost:11434/v1"
    )
    parser.add_argument("--model", required=True)
    parser.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        metavar="VAR",
        help="the environment variable holding the key (default OPENAI_API_KEY; unset: no Authorization)",
    )
    parser.add_argument(
        "--server", action="append", default=[], metavar="NAME", help="only this server's cases"
    )
    parser.add_argument(
        "--case", action="append", default=[], metavar="ID", help="only this case (repeatable)"
    )
    parser.add_argument(
        "--lang", action="append", default=[], help="only cases in this language (en, zh, ko, ru)"
    )
    parser.add_argument(
        "--cases", type=Path, metavar="FILE", help=f"a JSONL data set (default: the shipped {DATASET})"
    )
    parser.add_argument("--repeat", type=int, default=1, metavar="N", help="run every case N times")
    parser.add_argument(
        "--temperature", type=float, default=0.0, help="default 0; a negative value sends none"
    )
    parser.add_argument("--timeout", type=float, default=60.0, metavar="S", help="per request (default 60)")
    parser.add_argument("--retries", type=int, default=4, help="on 429, 5xx, timeouts (default 4)")
    parser.add_argument("--backoff", type=float, default=1.0, metavar="S", help="first retry wait (doubles)")
    parser.add_argument("--max-wait", type=float, default=60.0, metavar="S", help="longest single wait")
    parser.add_argument(
        "--min-score", type=float, metavar="F", help="exit 1 when overall accuracy is below F"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON (for CI)")
    return parser


def _listing(entry: ServerEntry, flags: Sequence[str]) -> dict[str, mt.Tool]:
    import anyio

    from ..export import listed_tools

    parser = entry.parser(with_runner=False)
    parser.prog = f"dockyard eval ({entry.name} flags)"
    server = entry.build(parser.parse_args(list(flags)))
    return {tool.name: tool for tool in anyio.run(listed_tools, server)}


def _chosen(cases: list[Case], args: Any, servers: dict[str, ServerEntry]) -> list[Case]:
    unknown = sorted({name for name in args.server if name not in servers})
    if unknown:
        raise Problem(f"no server named {unknown[0]!r}; installed: {', '.join(servers)}.")
    chosen = [
        case
        for case in cases
        if (not args.server or case.server in args.server)
        and (not args.case or case.id in args.case)
        and (not args.lang or case.lang in args.lang)
    ]
    missing = sorted({case.server for case in chosen if case.server not in servers})
    if missing:
        raise Problem(
            f"cases need the {missing[0]} server, which is not installed.", "Pass --server to skip them."
        )
    if not chosen:
        raise Problem("no case matches --server, --case and --lang.")
    return chosen


def run_eval(servers: dict[str, ServerEntry], argv: Sequence[str]) -> int:
    from ..export import openai_tools

    args, server_flags = _parser().parse_known_args(list(argv))
    if args.repeat < 1 or args.retries < 0:
        print("dockyard eval: --repeat must be at least 1 and --retries at least 0.", file=sys.stderr)
        return 2
    try:
        cases = _chosen(load_cases(args.cases), args, servers)
        listings: dict[tuple[str, tuple[str, ...]], dict[str, mt.Tool]] = {}
        for case in cases:
            key = (case.server, case.flags)
            if key not in listings:
                listings[key] = _listing(servers[case.server], [*case.flags, *server_flags])
    except (Problem, ValueError, OSError) as problem:
        what = problem.what if isinstance(problem, Problem) else str(problem)
        print(f"dockyard eval: {what}", file=sys.stderr)
        if isinstance(problem, Problem) and problem.next_step:
            print(f"  {problem.next_step}", file=sys.stderr)
        return 2
    client = ChatClient(
        args.base_url,
        args.model,
        api_key=os.environ.get(args.api_key_env) or None,
        timeout=args.timeout,
        retries=args.retries,
        backoff=args.backoff,
        max_wait=args.max_wait,
        temperature=args.temperature if args.temperature >= 0 else None,
    )
    verdicts: list[Verdict] = []
    skipped: dict[str, str] = {}
    try:
        progress = sys.stderr.isatty()
        for number, case in enumerate(cases, 1):
            tools = listings[(case.server, case.flags)]
            if case.tool is not None and case.tool not in tools:
                skipped[case.id] = f"{case.tool} is not listed with flags {[*case.flags, *server_flags]}"
                continue
            definitions = openai_tools(list(tools.values()))
            messages = [
                {"role": "system", "content": SYSTEM_PROMPT.format(server=case.server)},
                {"role": "user", "content": case.request},
            ]
            for run in range(1, args.repeat + 1):
                try:
                    answer = client.complete(messages, definitions)
                except EndpointError as error:
                    verdicts.append(Verdict(case.id, run, False, None, f"endpoint: {error}", error=True))
                    continue
                verdicts.append(score(case, answer, tools, run))
            if progress:  # a real model takes minutes over the data set: say where it is
                mark = "".join(
                    "." if v.right else "E" if v.error else "x" for v in verdicts if v.case == case.id
                )
                print(f"[{number}/{len(cases)}] {case.id} {mark}", file=sys.stderr)
    except RunStopped as stop:
        print(f"dockyard eval: {stop}", file=sys.stderr)
        return 2
    finally:
        client.close()
    meta = {
        "dataset": str(args.cases) if args.cases else DATASET,
        "model": args.model,
        "base_url": args.base_url,
        "repeat": args.repeat,
        "server_flags": server_flags,
        "requests": client.attempts,
        "retries": client.retried,
    }
    report = summary(cases, verdicts, skipped, meta)
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else render(report))
    accuracy = report["overall"]["accuracy"]
    if report["overall"]["errors"]:
        print(
            f"dockyard eval: {report['overall']['errors']} request(s) got no usable answer.", file=sys.stderr
        )
        return 1
    if args.min_score is not None and (accuracy is None or accuracy < args.min_score):
        print(f"dockyard eval: accuracy {accuracy} is below --min-score {args.min_score}.", file=sys.stderr)
        return 1
    return 0
