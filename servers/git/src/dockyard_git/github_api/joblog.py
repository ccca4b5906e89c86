"""One step's part of a GitHub Actions job log, cut from the log as it streams in, in bounded memory.

A job's log is plain text, each line opening with its time (``2026-01-02T00:00:03.1234567Z ``); the
job's steps carry when each started and completed (to the second). A step's lines are those stamped
within its window: from its start to its completion, inclusive to the second (a neighbour's line in the
same second may come along). ``##[error]`` lines are GitHub's error annotations, wherever they are.

Nothing here holds more than the reply can show: the step's first lines, a tail of its last ones
bounded in characters, the error lines, and a tail of the whole log for when no line falls in the
window (a log without stamps).
"""

from __future__ import annotations

import codecs
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from ..bounds import json_chars

__all__ = ["StepCut", "cut_step"]

_STAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?Z ?")


@dataclass
class StepCut:
    """What a step's cut keeps. ``window``: the step's (start, end) as epoch seconds, or None to keep the
    whole log as one step; ``from_line``: show the step's lines from this one (1-based) on, else its first
    ``head_lines`` and as many of its last as fit ``max_chars``."""

    window: tuple[float, float] | None
    from_line: int | None
    max_chars: int
    max_line_chars: int
    head_lines: int
    max_errors: int
    lines: int = 0  # the step's lines seen
    head: list[tuple[int, str]] = field(default_factory=list)
    head_chars: int = 0
    tail: deque[tuple[int, str]] = field(default_factory=deque)
    tail_chars: int = 0
    errors: list[str] = field(default_factory=list)
    error_count: int = 0
    all_lines: int = 0
    all_tail: deque[tuple[int, str]] = field(default_factory=deque)
    all_tail_chars: int = 0

    def add(self, raw: str) -> None:
        self.all_lines += 1
        stamp = _STAMP.match(raw)
        text = raw[stamp.end() :] if stamp else raw
        text = text.rstrip("\r")[: self.max_line_chars]
        if "##[error]" in text:
            self.error_count += 1
            if len(self.errors) < self.max_errors:
                self.errors.append(text)
        self._keep_tail(self.all_tail, (self.all_lines, text), "all_tail_chars")
        if self.window is not None:
            if stamp is None:
                return  # an unstamped line (rare): it cannot be placed
            second = _epoch(stamp.group(1))
            if second is None or not self.window[0] <= second <= self.window[1]:
                return
        self.lines += 1
        entry = (self.lines, text)
        if self.from_line is not None:
            size = json_chars(text) + 2
            if self.lines >= self.from_line and self.tail_chars + size <= self.max_chars:
                self.tail.append(entry)
                self.tail_chars += size
            return
        size = json_chars(text) + 2
        if (
            len(self.head) == self.lines - 1
            and len(self.head) < self.head_lines
            and (self.head_chars + size <= self.max_chars // 4)
        ):  # the step's first lines, while they take at most a quarter of the room
            self.head.append(entry)
            self.head_chars += size
            return
        self._keep_tail(self.tail, entry, "tail_chars", self.max_chars - self.head_chars)

    def _keep_tail(
        self, tail: deque[tuple[int, str]], entry: tuple[int, str], counter: str, limit: int | None = None
    ) -> None:
        """Add ``entry`` to a tail kept within ``limit`` characters as JSON (a line's newline included)."""
        limit = self.max_chars if limit is None else limit
        tail.append(entry)
        size = getattr(self, counter) + json_chars(entry[1]) + 2
        while size > limit and len(tail) > 1:
            size -= json_chars(tail.popleft()[1]) + 2
        setattr(self, counter, size)

    def shown(self) -> list[tuple[int, str]]:
        """The step's lines to show, numbered within the step; with no line in the window, the log's end."""
        if self.lines == 0 and self.window is not None:
            return list(self.all_tail)
        return [*self.head, *self.tail]


def _epoch(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text + "+00:00").timestamp()
    except ValueError:
        return None


def cut_step(chunks: Iterable[bytes], cut: StepCut) -> StepCut:
    """Feed a log arriving in ``chunks`` (UTF-8, possibly split anywhere) to ``cut``, line by line; a line
    longer than the cut keeps is cut as it arrives, so no line is held whole."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""
    limit = cut.max_line_chars + 64  # room for the time stamp
    for chunk in chunks:
        text = pending + decoder.decode(chunk)
        *complete, pending = text.split("\n")
        for line in complete:
            cut.add(line)
        if len(pending) > limit:
            pending = pending[:limit]  # the rest of an over-long line is dropped as it comes
    pending += decoder.decode(b"", final=True)
    if pending:
        cut.add(pending)
    return cut
