"""Reading a name from an e-mail address or a handle: examples, then hostile strings (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from dockyard_name_origin.handles import MAX_INPUT_CHARS, Parse, Unparsable, lowered, parse


@pytest.fixture(autouse=True, scope="module")
def hypothesis_home_in_tmp(tmp_path_factory):
    """Hypothesis keeps its caches under pytest's tmp folder, never in the checkout."""
    set_hypothesis_home_dir(str(tmp_path_factory.mktemp("hypothesis")))


@pytest.mark.parametrize(
    ("raw", "source", "given_name", "surname", "initial", "lowered_by"),
    [
        ("jane.doe@example.com", "email", "jane", "doe", None, 1),
        ("Jane_Doe+news@example.com", "email", "jane", "doe", None, 1),
        ("j.doe@example.org", "email", None, "doe", "j", 1),
        ("jdoe_1987", "handle", None, "doe", "j", 2),
        ("msmith", "name", "msmith", None, None, 0),  # no separator, no @: a plain name, read as given
        ("@chris_1990", "handle", "chris", None, None, 2),
        ("JaneDoe", "handle", "jane", "doe", None, 1),
        ("jane.d@example.com", "email", "jane", None, None, 1),
        ("Zoë Müller", "name", "zoë", "müller", None, 0),
        ("mary-ann.smith@x.org", "email", "mary", "smith", None, 1),
    ],
)
def test_a_parse_reads_the_likely_given_name_and_surname(
    raw, source, given_name, surname, initial, lowered_by
):
    result = parse(raw)
    assert (result.source, result.given, result.surname, result.initial) == (
        source,
        given_name,
        surname,
        initial,
    )
    assert result.lowered_by == lowered_by
    assert (result.why is None) == (lowered_by == 0)


def test_the_domain_and_the_digits_are_never_part_of_the_name():
    result = parse("anna.berg1987@koch-family.de")
    assert result.full == "anna berg" and "koch" not in result.shown() and "1987" not in result.shown()


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("info@example.com", "role mailbox"),
        ("no_reply@example.com", "role mailbox"),
        ("12345", "no letters"),
        ("___", "no letters"),
        ("", "empty"),
        ("   ", "empty"),
        ("x_1", "single letter"),
        ("ann\x00e.doe", "control"),
        ("ann\u202ee.doe", "control"),  # a right-to-left override: a format character
        ("a" * (MAX_INPUT_CHARS + 1), "longer than"),
    ],
)
def test_an_input_without_a_name_is_refused_with_the_reason(raw, reason):
    with pytest.raises(Unparsable) as refused:
        parse(raw)
    assert reason in refused.value.reason


@pytest.mark.parametrize(
    ("confidence", "by", "expected"),
    [("high", 1, "medium"), ("high", 2, "low"), ("medium", 1, "low"), ("low", 2, "low"), ("none", 2, "none")],
)
def test_confidence_is_lowered_by_levels_but_never_below_low(confidence, by, expected):
    assert lowered(confidence, by) == expected


hostile = st.one_of(
    st.text(max_size=400),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=50).map(lambda s: s + "@" + s),
    st.from_regex(r"[0-9_.\-+@ ]{0,80}", fullmatch=True),
    st.text(alphabet=st.characters(categories=["Cc", "Cf", "Zs", "Mn"]), max_size=40),
    st.integers(min_value=1, max_value=100_000).map(lambda n: "a." * n),
)


@settings(max_examples=400, deadline=None, database=None, derandomize=True)
@given(hostile)
def test_any_string_parses_or_is_refused_never_anything_else(raw):
    try:
        result = parse(raw)
    except Unparsable as refused:
        assert refused.reason and len(refused.reason) < 200
        return
    assert isinstance(result, Parse)
    assert len(raw) <= MAX_INPUT_CHARS
    for part in (result.given, result.surname, result.initial):
        if part is not None:
            assert part and all(char.isalpha() for char in part)
            assert part == part.casefold()
            assert (
                part in raw.casefold() or part in __import__("unicodedata").normalize("NFC", raw).casefold()
            )
    assert result.given or result.surname or result.initial
    assert 0 <= result.lowered_by <= 2


@settings(max_examples=100, deadline=None, database=None, derandomize=True)
@given(st.from_regex(r"[0-9]{1,300}", fullmatch=True))
def test_only_digits_is_never_a_name(raw):
    with pytest.raises(Unparsable):
        parse(raw)
