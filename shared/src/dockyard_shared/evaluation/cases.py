"""The evaluation data set: cases, and how an expected argument is compared with what a model sent.

A case is one JSON line::

    {"id": "tasks-en-001", "server": "tasks", "flags": [], "lang": "en",
     "request": "show me alice's todo tasks",
     "expect": {"tool": "list_tasks", "args": {"assignee": "alice", "status": "todo"}},
     "forbidden": ["next_task"], "note": "near-miss: a listing, not a pick"}

* ``flags``: the server flags the case needs (``["--toolsets", "all"]`` for a write toolset that is off
  by default); the tools the model sees are the server's listing with exactly these flags (plus any the
  command line adds);
* ``expect.tool`` is ``null`` when the right answer is no tool call (a question the tools do not answer);
* ``expect.args`` lists the arguments that matter, not all of them (see :func:`matches`);
* ``forbidden``: tools that are worse than wrong here (besides the automatic rule in scoring: a write
  where a read, or nothing, answers).

Comparison (:func:`matches`), expected against sent, after the sent arguments' nulls are dropped (a null
is how a strict-mode model leaves an optional argument out):

* the expected arguments are a subset: extra arguments the model sent are not held against it;
* strings: equal after trimming, collapsing whitespace and case-folding;
* numbers by value (``2 == 2.0``; a bool is not a number); booleans exactly;
* lists: the same length, each expected item matching a different sent item, in any order;
* objects: recursively, as a subset;
* matchers, an object with one ``$`` key: ``{"$any": [A, B]}`` one of several; ``{"$contains": [...]}``
  a string holding every fragment (normalised as above: for SQL, where many texts are right);
  ``{"$exact": "s"}`` a string equal with case (paths, branch names where case is meaningful).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

__all__ = ["DATASET", "Case", "load_cases", "matches", "witness"]

DATASET = "v1"
MATCHERS = ("$any", "$contains", "$exact")


@dataclass(frozen=True)
class Case:
    id: str
    server: str
    request: str
    tool: str | None
    args: dict[str, Any] = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    lang: str = "en"
    forbidden: tuple[str, ...] = ()
    note: str = ""


def _case(line: str, where: str) -> Case:
    try:
        raw = json.loads(line)
        expect = raw["expect"]
        return Case(
            id=raw["id"],
            server=raw["server"],
            request=raw["request"],
            tool=expect["tool"],
            args=dict(expect.get("args") or {}),
            flags=tuple(raw.get("flags") or ()),
            lang=raw.get("lang", "en"),
            forbidden=tuple(raw.get("forbidden") or ()),
            note=raw.get("note", ""),
        )
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{where}: not a case ({error})") from None


def load_cases(path: Path | None = None) -> list[Case]:
    """The cases in ``path`` (JSON lines), or the shipped data set :data:`DATASET`."""
    if path is None:
        text = files(__package__).joinpath("data", f"{DATASET}.jsonl").read_text(encoding="utf-8")
        name = f"{DATASET}.jsonl"
    else:
        text, name = path.read_text(encoding="utf-8"), str(path)
    cases = [
        _case(line, f"{name}:{number}")
        for number, line in enumerate(text.splitlines(), 1)
        if line.strip() and not line.lstrip().startswith("//")
    ]
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise ValueError(f"{name}: case id {case.id!r} appears twice")
        seen.add(case.id)
    return cases


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip()).casefold()


def _matcher(expected: Any) -> tuple[str, Any] | None:
    if isinstance(expected, dict) and len(expected) == 1:
        ((key, value),) = expected.items()
        if key in MATCHERS:
            return key, value
    return None


def matches(expected: Any, sent: Any) -> bool:
    """Whether ``sent`` is right where ``expected`` was wanted (the rules in this module's docstring)."""
    matcher = _matcher(expected)
    if matcher:
        key, value = matcher
        if key == "$any":
            return any(matches(option, sent) for option in value)
        if key == "$exact":
            return isinstance(sent, str) and sent.strip() == value
        return isinstance(sent, str) and all(_norm(fragment) in _norm(sent) for fragment in value)
    if isinstance(expected, bool) or isinstance(sent, bool):
        return isinstance(expected, bool) and isinstance(sent, bool) and expected == sent
    if isinstance(expected, (int, float)):
        return isinstance(sent, (int, float)) and expected == sent
    if isinstance(expected, str):
        return isinstance(sent, str) and _norm(expected) == _norm(sent)
    if isinstance(expected, list):
        if not isinstance(sent, list) or len(sent) != len(expected):
            return False
        left = list(sent)
        for item in expected:
            found = next((index for index, candidate in enumerate(left) if matches(item, candidate)), None)
            if found is None:
                return False
            left.pop(found)
        return True
    if isinstance(expected, dict):
        return isinstance(sent, dict) and all(
            key in sent and matches(value, sent[key]) for key, value in expected.items()
        )
    return expected == sent


def witness(expected: Any, choice: int = 0) -> Any:
    """A concrete value ``expected`` accepts (``$any``: its option ``choice``, clamped), for checking the
    data set against the tools' schemas and for a fake model that answers right."""
    matcher = _matcher(expected)
    if matcher:
        key, value = matcher
        if key == "$any":
            return witness(value[min(choice, len(value) - 1)], choice)
        if key == "$exact":
            return value
        return " ".join(value)
    if isinstance(expected, list):
        return [witness(item, choice) for item in expected]
    if isinstance(expected, dict):
        return {key: witness(value, choice) for key, value in expected.items()}
    return expected
