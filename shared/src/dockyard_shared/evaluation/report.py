"""The evaluation's figures: overall, per expected tool, per server and language, the confusions, and the
failures with their reasons; as text for a person or JSON for CI."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from .cases import Case
from .scoring import Verdict

__all__ = ["render", "summary"]

NO_TOOL = "(no tool)"
TEXT_FAILURES = 40  # the text report's failure lines; --json has them all


def _rate(right: int, scored: int) -> dict[str, Any]:
    return {"right": right, "scored": scored, "accuracy": round(right / scored, 4) if scored else None}


def summary(
    cases: list[Case], verdicts: list[Verdict], skipped: dict[str, str], meta: dict[str, Any]
) -> dict:
    by_id = {case.id: case for case in cases}
    scored = [verdict for verdict in verdicts if not verdict.error]
    groups: dict[str, dict[str, list[Verdict]]] = {"tool": defaultdict(list), "server": defaultdict(list)}
    groups["lang"] = defaultdict(list)
    per_case: dict[str, list[Verdict]] = defaultdict(list)
    for verdict in scored:
        case = by_id[verdict.case]
        groups["tool"][case.tool or NO_TOOL].append(verdict)
        groups["server"][case.server].append(verdict)
        groups["lang"][case.lang].append(verdict)
        per_case[verdict.case].append(verdict)
    confusion: Counter[tuple[str, str]] = Counter()
    confused_cases: dict[tuple[str, str], list[str]] = defaultdict(list)
    for verdict in scored:
        expected = by_id[verdict.case].tool or NO_TOOL
        called = verdict.called or NO_TOOL
        if called != expected:
            confusion[(expected, called)] += 1
            if verdict.case not in confused_cases[(expected, called)]:
                confused_cases[(expected, called)].append(verdict.case)
    return {
        **meta,
        "overall": {
            **_rate(sum(v.right for v in scored), len(scored)),
            "forbidden_calls": sum(v.forbidden for v in scored),
            "errors": sum(v.error for v in verdicts),
            "skipped": len(skipped),
            "cases": len(per_case),
            "right_every_run": sum(all(v.right for v in runs) for runs in per_case.values()),
        },
        **{
            f"per_{name}": {
                key: _rate(sum(v.right for v in items), len(items)) for key, items in sorted(group.items())
            }
            for name, group in groups.items()
        },
        "confusion": [
            {
                "expected": expected,
                "called": called,
                "count": count,
                "cases": confused_cases[(expected, called)],
            }
            for (expected, called), count in confusion.most_common()
        ],
        "failures": [
            {
                "case": v.case,
                "run": v.run,
                "reason": v.reason,
                "called": v.called,
                "forbidden": v.forbidden,
                "error": v.error,
                "request": by_id[v.case].request,
            }
            for v in verdicts
            if not v.right
        ],
        "skipped": [{"case": case, "reason": reason} for case, reason in skipped.items()],
    }


def _percent(rate: dict[str, Any]) -> str:
    accuracy = rate["accuracy"]
    return f"{rate['right']}/{rate['scored']}" + (f" ({accuracy:.1%})" if accuracy is not None else "")


def render(report: dict[str, Any]) -> str:
    overall = report["overall"]
    lines = [
        f"dockyard eval: data set {report['dataset']}, model {report['model']} at {report['base_url']}, "
        f"{overall['cases']} cases × {report['repeat']} run(s)",
        f"overall: {_percent(overall)} right; {overall['forbidden_calls']} forbidden call(s); "
        f"{overall['errors']} endpoint error(s); {overall['skipped']} skipped",
    ]
    if report["repeat"] > 1:
        lines.append(f"right in every run: {overall['right_every_run']} of {overall['cases']} cases")
    for name in ("server", "lang"):
        parts = [f"{key} {_percent(rate)}" for key, rate in report[f"per_{name}"].items()]
        lines.append(f"by {name}: " + "; ".join(parts))
    lines.append("by expected tool:")
    width = max((len(tool) for tool in report["per_tool"]), default=0)
    for tool, rate in report["per_tool"].items():
        lines.append(f"  {tool:<{width}}  {_percent(rate)}")
    if report["confusion"]:
        lines.append("confusion (expected → called: times, cases):")
        for item in report["confusion"]:
            lines.append(
                f"  {item['expected']} → {item['called']}: {item['count']} ({', '.join(item['cases'][:6])}"
                + (", …" if len(item["cases"]) > 6 else "")
                + ")"
            )
    failures = report["failures"]
    if failures:
        lines.append("failures:")
        for item in failures[:TEXT_FAILURES]:
            mark = " [forbidden]" if item["forbidden"] else " [endpoint error]" if item["error"] else ""
            lines.append(f"  {item['case']} run {item['run']}{mark}: {item['reason']}")
        if len(failures) > TEXT_FAILURES:
            lines.append(f"  … {len(failures) - TEXT_FAILURES} more (--json lists them all)")
    for item in report["skipped"]:
        lines.append(f"skipped {item['case']}: {item['reason']}")
    return "\n".join(lines)
