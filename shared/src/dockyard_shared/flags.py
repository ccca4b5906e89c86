"""The command-line parser every Dockyard command uses: argparse, plus "did you mean" for a mistyped flag.

Python 3.11's argparse says ``unrecognized arguments: --alow-write`` and stops there; a person starting a
server from a host config reads that in a log, far from the ``--help`` that lists the right spelling. The
close match is found among the options the parser's own usage line names (public API, no internals).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from difflib import get_close_matches
from typing import NoReturn

__all__ = ["DockyardArgumentParser", "StartupRefused", "network_argument", "positive_argument"]


class StartupRefused(Exception):
    """A configuration the runner will not start with; the message says how to fix it."""


_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
_UNRECOGNIZED = "unrecognized arguments: "
_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)$")


class DockyardArgumentParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors suggest the closest valid flag or choice."""

    def add_subparsers(self, **kwargs):  # type: ignore[no-untyped-def]
        # Kept so that an option of a subcommand (which the top parser reports as unrecognized) is matched.
        self._commands = super().add_subparsers(**kwargs)
        return self._commands

    def _usages(self) -> str:
        commands = getattr(self, "_commands", None)
        parsers = list(commands.choices.values()) if commands is not None else []
        return " ".join([self.format_usage(), *(parser.format_usage() for parser in parsers)])

    def error(self, message: str) -> NoReturn:
        super().error(self._with_suggestions(message))

    def _with_suggestions(self, message: str) -> str:
        if message.startswith(_UNRECOGNIZED):
            options = set(_OPTION.findall(self._usages()))
            hints = []
            for word in message[len(_UNRECOGNIZED) :].split():
                flag = word.split("=", 1)[0]
                if not flag.startswith("-"):
                    continue
                match = get_close_matches(flag, sorted(options), n=1, cutoff=0.6)
                if match:
                    hints.append(f"{flag}: did you mean {match[0]}?")
            return message + ("\n" + "\n".join(hints) if hints else "")
        if choice := _CHOICE.search(message):
            valid = re.findall(r"'([^']*)'", choice.group(2))
            match = get_close_matches(choice.group(1), valid, n=1, cutoff=0.6)
            return message + (f"; did you mean {match[0]!r}?" if match else "")
        return message


def positive_argument(kind: Callable[[str], float]) -> Callable[[str], float]:
    """An argparse type: ``kind`` of the text, which must be a positive, finite number."""

    def parse(text: str) -> float:
        value = kind(text)
        if not 0 < value < float("inf"):
            raise argparse.ArgumentTypeError(f"must be a positive number, not {text!r}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its "invalid value" message
    return parse


def network_argument(text: str) -> str:
    """An argparse type: an address or a network in CIDR form, e.g. a trusted proxy's."""
    import ipaddress

    try:
        ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an address or network (CIDR) such as 10.0.0.0/8: {text!r}"
        ) from None
    return text.strip()
