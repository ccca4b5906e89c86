"""A person's likely name from an e-mail address or a handle: pure logic, no network, no MCP.

``jane.doe@example.com`` -> given ``jane``, surname ``doe``; ``jdoe_1987`` -> initial ``j``, surname ``doe``;
``Michael Smith`` is a plain name and is left as it is. The parse is a guess, so it is always shown, and a
prediction made from it has its confidence lowered (:func:`lowered`):

* one level (high -> medium, medium -> low) when separators (``.``, ``_``, ``-``, ``+``, digits, camel case)
  split the text into pieces: most addresses read given.surname, but some read surname.given, some hold
  a nickname, and a mailbox need not be its holder's own name;
* two levels (to low) when one run of letters had to be read without any separator (``jdoe``, ``janed``):
  whether it is a given name, a surname or an initial plus a surname is a guess from its spelling alone.

The domain of an address is never used, and nothing here is sent anywhere: only the parsed given name (or
full name) is looked up, never the address. Digits are dropped and never read as a birth year. A role
mailbox (``info@``, ``noreply@``) names no person and is refused with that reason.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

__all__ = ["MAX_INPUT_CHARS", "Parse", "lowered", "parse"]

MAX_INPUT_CHARS = 320  # an e-mail address is at most 254; a handle far less
Source = Literal["name", "email", "handle"]
_LEVELS = ("none", "low", "medium", "high")

# Mailboxes that name a role, not a person.
ROLE_MAILBOXES = frozenset(
    [
        "admin",
        "administrator",
        "billing",
        "contact",
        "hello",
        "help",
        "hr",
        "info",
        "jobs",
        "mail",
        "marketing",
        "newsletter",
        "no-reply",
        "noreply",
        "donotreply",
        "office",
        "postmaster",
        "press",
        "root",
        "sales",
        "security",
        "support",
        "team",
        "webmaster",
        "abuse",
        "careers",
        "accounts",
        "enquiries",
        "inquiries",
        "service",
    ]
)
# Two-consonant starts of English given names; a handle starting with any other consonant pair reads as
# an initial plus a surname (jdoe, msmith, kjones).
_ONSETS = frozenset(
    [
        "bl",
        "br",
        "ch",
        "cl",
        "cr",
        "dr",
        "dw",
        "fl",
        "fr",
        "gl",
        "gr",
        "gw",
        "kh",
        "kl",
        "kn",
        "kr",
        "ph",
        "pl",
        "pr",
        "rh",
        "sc",
        "sh",
        "sk",
        "sl",
        "sm",
        "sn",
        "sp",
        "st",
        "sv",
        "sw",
        "th",
        "tr",
        "ts",
        "tw",
        "vl",
        "wh",
        "wr",
        "zh",
    ]
)
_VOWELS = frozenset("aeiouyàáâãäåæèéêëìíîïòóôõöøùúûüýÿ")
_SEPARATORS = re.compile(r"[\s._\-+'`~^|/\\,;:!?#$%&*=(){}\[\]<>\"]+|[0-9]+")
_CAMEL = re.compile(r"(?<=[a-zà-ÿ])(?=[A-ZÀ-Þ])")


@dataclass(frozen=True)
class Parse:
    """What an input was read as. ``given``/``surname`` are lower case; ``initial`` when only one letter
    of the given name is there. ``lowered_by`` is how many confidence levels a prediction loses."""

    source: Source
    given: str | None
    surname: str | None
    initial: str | None = None
    lowered_by: int = 0
    why: str | None = None  # why the parse is uncertain, or why there is no name

    @property
    def full(self) -> str | None:
        parts = [part for part in (self.given or self.initial, self.surname) if part]
        return " ".join(parts) if self.given or self.surname else None

    def shown(self) -> str:
        """``email -> given 'jane', surname 'doe'``: the parse in words, for a reply."""
        bits = []
        if self.given:
            bits.append(f"given {self.given!r}")
        elif self.initial:
            bits.append(f"initial {self.initial!r}")
        if self.surname:
            bits.append(f"surname {self.surname!r}")
        return f"{self.source} -> {', '.join(bits) or 'no name'}"


class Unparsable(ValueError):
    """The input holds no name to look up (``reason`` says why, for the model)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def lowered(confidence: str, by: int) -> str:
    """``confidence`` lowered ``by`` levels, never below low (none stays none: there is no prediction)."""
    if confidence == "none" or by <= 0:
        return confidence
    return _LEVELS[max(1, _LEVELS.index(confidence) - by)]


def _clean(raw: str) -> str:
    if len(raw) > MAX_INPUT_CHARS:
        raise Unparsable(f"it is longer than {MAX_INPUT_CHARS} characters")
    text = unicodedata.normalize("NFC", raw).strip()
    if not text:
        raise Unparsable("it is empty")
    if any(unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Cn") for char in text):
        raise Unparsable("it holds control, format, private-use or unassigned characters")
    return text


def _pieces(text: str) -> list[str]:
    """Lower-case runs of letters: split at separators, digits and camel case; anything else dropped."""
    pieces = []
    for chunk in _SEPARATORS.split(text):
        for piece in _CAMEL.split(chunk):
            letters = "".join(char for char in piece if char.isalpha())
            if letters and letters == piece:  # a piece with symbols left inside it is not a name part
                pieces.append(letters.casefold())
    return pieces


def _initial_and_surname(piece: str) -> bool:
    """Whether one run of letters reads as an initial plus a surname: two leading consonants that do not
    start English given names, then a vowel within the next two letters (jdoe, msmith; not chris)."""
    if len(piece) < 4 or not piece.isascii():
        return False
    first, second = piece[0], piece[1]
    if first in _VOWELS or second in _VOWELS or piece[:2] in _ONSETS:
        return False
    return any(char in _VOWELS for char in piece[2:4])


def parse(raw: str) -> Parse:
    """``raw`` read as a plain name, an e-mail address or a handle; :class:`Unparsable` when it holds none."""
    text = _clean(raw)
    if "@" in text.lstrip("@"):
        source: Source = "email"
        local = text.rpartition("@")[0].partition("+")[0]  # the domain is never used; +tags dropped
        if (
            local.casefold().replace(".", "").replace("_", "-") in ROLE_MAILBOXES
            or local.casefold() in ROLE_MAILBOXES
        ):
            raise Unparsable(f"{local[:40]!r} is a role mailbox, not a person's name")
    elif (
        text.startswith("@")
        or (not any(char.isspace() for char in text) and _SEPARATORS.search(text) is not None)
        or _CAMEL.search(text)
    ):
        source, local = "handle", text.lstrip("@")
    else:
        source, local = "name", text
    pieces = _pieces(local)
    if not pieces:
        raise Unparsable("it has no letters to read as a name (digits and symbols are not a name)")
    if source == "name":
        given = pieces[0] if len(pieces[0]) > 1 else None
        return Parse(
            "name",
            given,
            pieces[-1] if len(pieces) > 1 else None,
            initial=None if given else pieces[0],
        )
    if len(pieces) == 1:
        (piece,) = pieces
        if len(piece) == 1:
            raise Unparsable("it holds a single letter, not a name")
        why = f"one run of letters ({piece!r}) with no separator: reading it is a guess"
        if _initial_and_surname(piece):
            return Parse(source, None, piece[1:], initial=piece[0], lowered_by=2, why=why)
        return Parse(source, piece, None, lowered_by=2, why=why)
    first, last = pieces[0], pieces[-1]
    why = "split at separators: read as given name then surname (some addresses put the surname first)"
    if len(first) == 1:
        return Parse(source, None, last, initial=first, lowered_by=1, why=why)
    if len(last) == 1:  # jane.d: a surname initial
        return Parse(source, first, None, lowered_by=1, why=why)
    return Parse(source, first, last, lowered_by=1, why=why)
