"""Refuse, before git runs, a regular expression that would make the regex engine explode.

git grep -E and git log --grep/--author compile patterns with the C library's regcomp, which writes a
bounded repetition out: ``x{n,m}`` becomes m copies of ``x``, and nested repetitions multiply. Measured
with glibc 2.36 (git 2.39, one small file): ``a{1,1000}`` 21 MB, ``a{1,10000}`` 1.5 GB and 2 s,
``a{1,32767}`` 16 GB and 62 s; ``(.{1,100}){1,100}`` 151 MB and 17 s. The limits below keep compiling
small (at most about 220 MB was seen across this repository's files with ``-i``); what matching a
pattern costs on a large tree is bounded by each git process's CPU-time and memory limits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dockyard_shared import InvalidArgument

__all__ = ["MAX_EXPANDED", "MAX_NESTED_REPEAT", "MAX_PATTERN_CHARS", "MAX_REPEAT", "check_pattern"]

MAX_PATTERN_CHARS = 1_000
MAX_REPEAT = 255  # the largest bound of one {n,m} (POSIX guarantees RE_DUP_MAX ≥ 255, and no more)
MAX_NESTED_REPEAT = 255  # the bounds of repetitions nested inside each other, multiplied
MAX_EXPANDED = 1_000  # elements of the pattern once every repetition is written out

_INTERVAL = re.compile(r"(\d*)(,(\d*))?")
_NEXT_STEP = (
    "Use smaller repetition bounds (e.g. .{0,80} rather than .{0,5000}), avoid repeating a group that "
    "itself repeats, or search for a shorter fragment and narrow with paths."
)


@dataclass
class _Group:
    size: int = 0  # elements written out so far
    nesting: int = 1  # the largest product of nested repetition bounds inside
    last: tuple[int, int] | None = None  # (size, nesting) of the last item, which a quantifier repeats


def _refuse(what: str, why: str) -> InvalidArgument:
    return InvalidArgument(f"The {what} {why}", next_step=_NEXT_STEP)


def check_pattern(pattern: str, *, what: str, extended: bool) -> None:
    """Raise :class:`InvalidArgument` naming the limit if ``pattern`` (an extended regular expression,
    or a basic one when ``extended`` is false) is too long or expands too far."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise _refuse(what, f"is {len(pattern)} characters long; at most {MAX_PATTERN_CHARS} are allowed.")
    stack = [_Group()]

    def item(size: int, nesting: int = 1) -> None:
        group = stack[-1]
        group.size += size
        group.nesting = max(group.nesting, nesting)
        group.last = (size, nesting)

    def repeat(times: int, bound: int = 1) -> None:
        """The last item written out ``times`` times; ``bound`` is what it counts for in nesting (a
        star or plus repeats without bound but is compiled as a loop, so it counts as 1)."""
        group = stack[-1]
        if group.last is None:
            item(1)  # a quantifier with nothing before it is a literal character
            return
        size, nesting = group.last
        group.size += size * (times - 1)
        group.last = (size * times, nesting * bound)
        group.nesting = max(group.nesting, nesting * bound)

    def interval(text: str) -> None:
        match = _INTERVAL.fullmatch(text)
        if match is None or not (match.group(1) or match.group(3)):
            item(1)  # not an interval: git reads it as text (or refuses it)
            return
        low = int(match.group(1) or 0)
        if match.group(2) is None:  # {n}
            high = times = low
        elif match.group(3):  # {n,m} or {,m}
            high = times = int(match.group(3))
        else:  # {n,}: n copies, then a star
            high, times = low, low + 1
        bound = max(low, high)
        if bound > MAX_REPEAT:
            raise _refuse(
                what,
                f"repeats something up to {bound} times; at most {MAX_REPEAT} are allowed (the regex engine "
                "writes every repetition out).",
            )
        repeat(max(times, 1), max(bound, 1))

    index, length = 0, len(pattern)
    while index < length:
        char = pattern[index]
        index += 1
        if char == "\\" and index < length:
            escaped = pattern[index]
            index += 1
            if extended:
                item(1)
            elif escaped == "(":
                stack.append(_Group())
            elif escaped == ")" and len(stack) > 1:
                inner = stack.pop()
                item(inner.size, inner.nesting)
            elif escaped == "{":
                end = pattern.find("\\}", index)
                if end < 0:
                    item(1)
                else:
                    interval(pattern[index:end])
                    index = end + 2
            elif escaped in "+?":
                repeat(2 if escaped == "+" else 1)
            elif escaped == "|":
                stack[-1].last = None
            else:
                item(1)
        elif char == "[":
            index = _bracket_end(pattern, index)
            item(1)
        elif extended and char == "(":
            stack.append(_Group())
        elif extended and char == ")" and len(stack) > 1:
            inner = stack.pop()
            item(inner.size, inner.nesting)
        elif extended and char == "|":
            stack[-1].last = None
        elif extended and char == "{":
            end = pattern.find("}", index)
            if end < 0 or not _INTERVAL.fullmatch(pattern[index:end]) or end == index:
                item(1)
            else:
                interval(pattern[index:end])
                index = end + 1
        elif char == "*" or (extended and char in "+?"):
            repeat(2 if char == "+" else 1)
        else:
            item(1)
    while len(stack) > 1:  # an unclosed group: git refuses it, but count it anyway
        inner = stack.pop()
        item(inner.size, inner.nesting)
    root = stack[0]
    if root.nesting > MAX_NESTED_REPEAT:
        raise _refuse(
            what,
            f"nests repetitions whose bounds multiply to {root.nesting}; at most {MAX_NESTED_REPEAT} are "
            "allowed.",
        )
    if root.size > MAX_EXPANDED:
        raise _refuse(
            what,
            f"comes to about {root.size} elements once its repetitions are written out; at most "
            f"{MAX_EXPANDED} are allowed.",
        )


def _bracket_end(pattern: str, index: int) -> int:
    """The index just past the bracket expression whose ``[`` is just before ``index``."""
    length = len(pattern)
    if index < length and pattern[index] == "^":
        index += 1
    if index < length and pattern[index] == "]":
        index += 1  # a ']' first is a member
    while index < length:
        char = pattern[index]
        if char == "[" and index + 1 < length and pattern[index + 1] in ":.=":
            close = pattern.find(pattern[index + 1] + "]", index + 2)
            index = close + 2 if close >= 0 else length
            continue
        if char == "]":
            return index + 1
        index += 1
    return length
