from __future__ import annotations

from dockyard_shared import ADDITIVE, DESTRUCTIVE, OPEN_WORLD, READ_ONLY, missing_description_sections

GOOD = """Run one read-only SQL statement.

Use when: you need rows from a table.
Not for: writes — use execute.
Returns: columns and rows.
Limits: 100 rows per page; pass the cursor for more.
"""


def test_presets_say_what_a_host_needs_to_decide_on_confirmation():
    assert READ_ONLY.read_only_hint and not READ_ONLY.destructive_hint and not READ_ONLY.open_world_hint
    assert not ADDITIVE.read_only_hint and not ADDITIVE.destructive_hint
    assert DESTRUCTIVE.destructive_hint and not DESTRUCTIVE.read_only_hint
    assert OPEN_WORLD.read_only_hint and OPEN_WORLD.open_world_hint


def test_a_complete_description_has_nothing_missing():
    assert missing_description_sections(GOOD) == []


def test_missing_and_out_of_order_sections_are_reported():
    assert missing_description_sections(GOOD.replace("Limits:", "Bounds:")) == ["Limits:"]
    swapped = GOOD.replace("Use when:", "TMP").replace("Not for:", "Use when:").replace("TMP", "Not for:")
    assert missing_description_sections(swapped) == ["Not for:"]
    assert missing_description_sections("Use when: x\nNot for: y\nReturns: z\nLimits: w") == ["summary"]
    assert missing_description_sections(None) == ["summary", "Use when:", "Not for:", "Returns:", "Limits:"]
