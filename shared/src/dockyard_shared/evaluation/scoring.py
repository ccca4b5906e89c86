"""Scoring a model's answer to one case: its FIRST tool call, or that it made none.

Right when:

* the case expects a tool: the first tool call names it, its arguments are a JSON object the tool's
  input schema accepts (nulls dropped first: strict mode's way of leaving an argument out), and every
  expected argument matches (:func:`.cases.matches`);
* the case expects no tool: the answer has no tool call (text, or a refusal).

Wrong otherwise, with the reason: another tool (a confusion), no call, a missing or different argument,
arguments that are not JSON or not an object, a tool the server does not list, arguments its schema
refuses. A call is *forbidden* when the case names it, or when it is a write (not ``readOnlyHint``)
where the expected answer is a read or no tool.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .cases import Case, matches

if TYPE_CHECKING:
    import mcp.types as mt

__all__ = ["Answer", "Verdict", "score"]


@dataclass(frozen=True)
class Answer:
    """What the chat completion's first choice said: its first tool call (name, raw argument text) if any,
    the text, and a refusal if the model gave one."""

    tool: str | None = None
    arguments: str | None = None
    text: str = ""
    refusal: str | None = None
    calls: int = 0
    malformed: str | None = None  # the first tool call could not be read at all: why


@dataclass(frozen=True)
class Verdict:
    case: str
    run: int
    right: bool
    called: str | None
    reason: str = ""
    forbidden: bool = False
    error: bool = False  # the endpoint failed: not the model's answer, not scored
    arguments: Any = None


def _is_write(tool: mt.Tool | None) -> bool:
    annotations = tool.annotations if tool is not None else None
    return not (annotations is not None and annotations.read_only_hint)


def _schema_problem(tool: mt.Tool, arguments: dict[str, Any]) -> str | None:
    import jsonschema

    validator = jsonschema.Draft202012Validator(tool.input_schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path) or "arguments"
    return f"{where}: {error.message}"


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def score(case: Case, answer: Answer, tools: dict[str, mt.Tool], run: int = 1) -> Verdict:
    """The verdict on ``answer`` to ``case``, ``tools`` being what the server listed to the model."""
    if answer.malformed:
        return Verdict(case.id, run, False, None, f"malformed tool call: {answer.malformed}")
    if answer.tool is None:
        if case.tool is None:
            return Verdict(case.id, run, True, None)
        reason = f"refused: {answer.refusal}" if answer.refusal else "answered without a tool call"
        return Verdict(case.id, run, False, None, f"{reason}; expected {case.tool}")
    called = answer.tool
    expected_tool = tools.get(case.tool) if case.tool else None
    forbidden = called in case.forbidden or (
        called != case.tool
        and called in tools  # a tool nobody lists is wrong, not a write
        and _is_write(tools[called])
        and (case.tool is None or not _is_write(expected_tool))
    )

    def wrong(reason: str, arguments: Any = None) -> Verdict:
        return Verdict(case.id, run, False, called, reason, forbidden, arguments=arguments)

    if called not in tools:
        return wrong(f"called {called!r}, a tool the server does not list")
    try:
        arguments = json.loads(answer.arguments or "{}")
    except ValueError as error:
        return wrong(f"{called}: arguments are not JSON ({error.msg}): {_short(answer.arguments)}")
    if not isinstance(arguments, dict):
        return wrong(f"{called}: arguments are not a JSON object: {_short(arguments)}", arguments)
    given = {key: value for key, value in arguments.items() if value is not None}
    if case.tool is None:
        return wrong(f"called {called} where no tool was needed", given)
    if called != case.tool:
        return wrong(f"called {called}; expected {case.tool}", given)
    problem = _schema_problem(tools[called], given)
    if problem:
        return wrong(f"{called}: the tool's schema refuses the arguments ({problem})", given)
    for key, value in case.args.items():
        if key not in given:
            return wrong(f"{called}: argument {key} missing; expected {_short(value)}", given)
        if not matches(value, given[key]):
            return wrong(f"{called}: argument {key} is {_short(given[key])}; expected {_short(value)}", given)
    return Verdict(case.id, run, True, called, arguments=given)
