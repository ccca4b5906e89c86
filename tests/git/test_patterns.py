"""The regex guard (patterns.py): what it lets through and what it refuses, before any git runs."""

from __future__ import annotations

import pytest

from dockyard_git.operations.patterns import check_pattern
from dockyard_shared import InvalidArgument


@pytest.mark.parametrize(
    "pattern",
    [
        "version",
        "[0-9a-f]{40}",
        r"(\d{1,3}\.){3}\d{1,3}",
        ".{0,80}",
        "a{255}",
        "a{255,}",
        "(ab|cd){1,100}",
        "x*y+z?",
        r"(\w+\s*){1,255}",
        "[]{]{1,3}",
        "[[:alpha:]]{1,200}",
        "{not an interval}",
        ".{250}x{250}y{250}z{250}",
    ],
)
def test_ordinary_extended_patterns_pass(pattern):
    check_pattern(pattern, what="pattern", extended=True)


@pytest.mark.parametrize(
    ("pattern", "limit"),
    [
        ("a{1,32767}", "at most 255 are allowed"),  # the worst case of issue 12: 16 GB, 62 s in git
        ("a{1,10000}", "at most 255 are allowed"),
        ("a{256}", "at most 255 are allowed"),
        ("a{1000,}", "at most 255 are allowed"),
        ("(a{1,100}){1,100}", "multiply to 10000; at most 255"),
        ("((a{1,10}){1,10}){1,10}", "multiply to 1000; at most 255"),
        ("(.{1,31}){1,31}", "multiply to 961; at most 255"),
        (".{255}.{255}.{255}.{255}.{255}", "about 1275 elements"),
        ("(a|b|.){1,255}(c|d|.){1,255}", "about 1530 elements"),
        ("a" * 1001, "1001 characters long; at most 1000"),
    ],
)
def test_patterns_that_would_explode_are_refused_naming_the_limit(pattern, limit):
    with pytest.raises(InvalidArgument, match=limit.replace("(", r"\(")):
        check_pattern(pattern, what="pattern", extended=True)


def test_basic_patterns_count_escaped_intervals_and_groups_only():
    check_pattern("a{1,32767}", what="grep", extended=False)  # braces are text in a basic pattern
    check_pattern(r"\(ab\)\{1,200\}", what="grep", extended=False)
    with pytest.raises(InvalidArgument, match="at most 255"):
        check_pattern(r"a\{1,300\}", what="grep", extended=False)
    with pytest.raises(InvalidArgument, match="multiply to 10000"):
        check_pattern(r"\(a\{1,100\}\)\{1,100\}", what="grep", extended=False)
