"""GitHub's values as reply fields: text written by others fenced, every cap counted in the characters a
field takes as JSON, texts sharing a budget fairly, and a reply kept under REPLY_BUDGET."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import pydantic_core
from pydantic import BaseModel

from dockyard_shared.untrusted import fence_cut, plain_name

from ..bounds import fit, take
from ..settings import MAX_BODY_CHARS, MAX_NAME_CHARS, MAX_TITLE_CHARS, PER_PAGE, REPLY_BUDGET

__all__ = [
    "at",
    "fair_shares",
    "fenced",
    "fitting",
    "iso",
    "join_notes",
    "json_size",
    "label_fields",
    "largest_fitting",
    "listed_title",
    "login_field",
    "name_field",
    "next_page",
    "shared_out",
    "title_and_body",
    "url_of",
]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
_URL = re.compile(r"https?://[^\s\"'<>\\^`{|}]+")


def json_cap(text: str | None, cap: int) -> int:
    """How many characters of ``text`` take at most ``cap`` characters as JSON: caps count what a reply
    carries, so text full of quotes or backslashes cannot double a bounded reply."""
    return len(fit((text or "")[:cap], cap)) if cap > 0 else cap


def fenced(text: str | None, source: str, *, cap: int, rest: str) -> tuple[str, bool]:
    """:func:`~dockyard_shared.untrusted.fence_cut` with ``cap`` counted as JSON characters."""
    return fence_cut(text, source, cap=json_cap(text, cap), rest=rest)


def name_field(value: object, source: str, *, where: str, cap: int = MAX_NAME_CHARS) -> str | None:
    """:func:`~dockyard_shared.untrusted.plain_name` with ``cap`` counted as JSON characters."""
    text = None if value is None else str(value)
    return plain_name(value, source, where=where, cap=max(json_cap(text, cap), 1))


def title_and_body(item: Any, what: str, url: str, notes: list[str]) -> tuple[str, str]:
    """The fenced title and body of a pull request or issue (``what``: "pull request #7"); a cut body
    adds a note saying where the whole is."""
    title, _ = fenced(item.title, f"title of {what}", cap=MAX_TITLE_CHARS, rest=f"full title {at(url)}")
    body, body_cut = fenced(
        item.body, f"body of {what}", cap=MAX_BODY_CHARS, rest=f"read the whole text {at(url)}"
    )
    if body_cut:
        notes.append(f"The description is cut at {MAX_BODY_CHARS:,} characters; the whole is {at(url)}.")
    return title, body


def login_field(user: Any, source: str, *, where: str) -> str | None:
    return name_field(user.login, source, where=where) if user is not None else None


def url_of(value: object) -> str:
    """A URL from GitHub's answer, or "" when it does not look like one."""
    text = str(value or "")
    return text if len(text) <= 500 and _URL.fullmatch(text) else ""


def at(url: str, suffix: str = "") -> str:
    return f"at {url}{suffix}" if url else "on GitHub"


def shared_out(
    texts: list[str],
    budget: int,
    cap: int,
    *,
    source: Callable[[int], str],
    rest: Callable[[int], str],
) -> tuple[list[str], int]:
    """Each text :func:`fenced` within its share of ``budget`` (shares fair, see :func:`fair_shares`),
    ``source(position)`` naming it and ``rest(position)`` saying where the whole is; and how many were cut."""
    shares = fair_shares([len(text) for text in texts], budget, cap)
    results = [
        fenced(text, source(i), cap=share, rest=rest(i))
        for i, (text, share) in enumerate(zip(texts, shares, strict=True))
    ]
    return [field for field, _ in results], sum(cut for _, cut in results)


def fair_shares(lengths: list[int], total: int, cap: int) -> list[int]:
    """Characters each text may show: short texts whole, the rest of ``total`` split evenly among
    the longer ones (water-filling), none above ``cap``."""
    shares = [0] * len(lengths)
    order = sorted(range(len(lengths)), key=lambda i: min(lengths[i], cap))
    remaining = total
    for position, index in enumerate(order):
        share = min(lengths[index], cap, remaining // (len(order) - position))
        shares[index] = share
        remaining -= share
    return shares


# -- reading ---------------------------------------------------------------------------------------


def iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat() if value else None


def label_fields(item: Any, number: int, kind: str, limit: int, where: str) -> tuple[list[str], int]:
    names = [label.name for label in item.labels]
    shown = [
        name_field(n, f"label {i} of {kind} #{number}", where=where) or ""
        for i, n in enumerate(names[:limit], 1)
    ]
    return shown, max(0, len(names) - limit)


def fitting(items: list[T], what: str, notes: list[str]) -> list[T]:
    """As many of a page's ``items`` as fit in one reply (all of them, unless their text is unusually
    long); a note says when some were left out."""
    kept, cut, _ = take(items, max_items=len(items), max_chars=REPLY_BUDGET - 5_000)
    if cut:
        notes.append(
            f"Only the first {len(kept)} of this page's {len(items)} {what} fit in one reply (their titles "
            "and names are long); see the others on GitHub."
        )
    return kept


def largest_fitting(reply_with: Callable[[int], M], budget: int) -> M:
    """``reply_with(budget)``, with the budget (for patches or comments) lowered by what the reply exceeds
    REPLY_BUDGET until it fits, or is zero (then the backstop in GitContext refuses what still does not)."""
    while True:
        reply = reply_with(max(budget, 0))
        excess = json_size(reply) - REPLY_BUDGET
        if excess <= 0 or budget <= 0:
            return reply
        budget -= excess + 1_000


def json_size(model: BaseModel) -> int:
    """Characters ``model`` takes as the JSON a reply carries."""
    return len(pydantic_core.to_json(model).decode())


def join_notes(notes: list[str]) -> str | None:
    return " ".join(notes) if notes else None


def listed_title(item: Any, kind: str) -> tuple[int, str, str]:
    """A listed pull request's or issue's number, url and title (fenced, cut at MAX_TITLE_CHARS with a
    pointer to the full one)."""
    number = int(item.number)
    url = url_of(item.html_url)
    title, _ = fenced(
        item.title, f"title of {kind} #{number}", cap=MAX_TITLE_CHARS, rest=f"full title {at(url)}"
    )
    return number, url, title


def next_page(listed: int, page: int) -> tuple[bool, list[str]]:
    """Whether a page that listed ``listed`` items may have a next one, and the note that says how to get it
    (GitHub does not say how many there are)."""
    more = listed >= PER_PAGE
    return more, ([f"There may be more: call again with page={page + 1}."] if more else [])
