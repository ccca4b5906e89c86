from __future__ import annotations

import pytest

from dockyard_shared import (
    Conflict,
    ErrorCategory,
    InternalError,
    InvalidArgument,
    LimitExceeded,
    NotFound,
    PermissionDenied,
    UpstreamUnavailable,
    did_you_mean,
)


@pytest.mark.parametrize(
    ("problem_type", "category", "retryable"),
    [
        (InvalidArgument, ErrorCategory.INVALID_ARGUMENT, False),
        (NotFound, ErrorCategory.NOT_FOUND, False),
        (PermissionDenied, ErrorCategory.PERMISSION_DENIED, False),
        (Conflict, ErrorCategory.CONFLICT, False),
        (LimitExceeded, ErrorCategory.LIMIT_EXCEEDED, False),
        (UpstreamUnavailable, ErrorCategory.UPSTREAM_UNAVAILABLE, True),
        (InternalError, ErrorCategory.INTERNAL, False),
    ],
)
def test_every_problem_says_what_category_retry_and_next_step(problem_type, category, retryable):
    problem = problem_type("the thing failed.", next_step="Do the other thing.")
    text = problem.for_model()
    lines = text.splitlines()
    assert lines[0] == f"Error ({category.value}): the thing failed."
    assert (
        lines[1].startswith("Retry: may succeed")
        if retryable
        else lines[1].startswith("Retry: will not help")
    )
    assert lines[2] == "Next step: Do the other thing."
    assert str(problem) == text


def test_a_raiser_can_mark_a_usually_permanent_problem_as_retryable():
    locked = Conflict("the database is locked.", retryable=True)
    assert locked.retryable
    assert "may succeed if retried" in locked.for_model()
    assert not Conflict("dirty tree").retryable


def test_did_you_mean_suggests_close_names_case_insensitively():
    assert did_you_mean("nme", ["id", "name", "email"]) == "Did you mean 'name'?"
    assert "'People'" in did_you_mean("peple", ["People", "orders"])


def test_did_you_mean_lists_valid_values_when_nothing_is_close():
    text = did_you_mean("zzz", [f"table{i}" for i in range(12)], kind="table")
    assert text.startswith("Valid tables: 'table0', 'table1'")
    assert text.endswith("and 2 more.")
    assert did_you_mean("x", [], kind="table") == "There is no valid table at all."


def test_a_problem_quoting_a_huge_argument_stays_within_the_hosts_result_budget():
    from dockyard_shared import NotFound

    text = NotFound(f"no word {'A' * 100_000!r}.", next_step="B" * 50_000).for_model()
    assert len(text) < 9_000
    assert text.count("more characters not shown]") == 2


@pytest.mark.parametrize(
    "problem_type",
    [
        InvalidArgument,
        NotFound,
        PermissionDenied,
        Conflict,
        LimitExceeded,
        UpstreamUnavailable,
        InternalError,
    ],
)
def test_a_problem_raised_without_a_next_step_still_says_what_to_do_next(problem_type):
    lines = problem_type("the thing failed.").for_model().splitlines()
    assert len(lines) == 3 and lines[2].startswith("Next step: ") and len(lines[2]) > len("Next step: ") + 10
