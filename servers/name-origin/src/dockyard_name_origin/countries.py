"""ISO 3166-1 alpha-2 codes and their English short names (from pycountry's copy of the standard)."""

from __future__ import annotations

from functools import cache

import pycountry

__all__ = ["country_name", "country_table"]

# Codes nationalize answers with that ISO 3166-1 leaves to its users: Kosovo's XK is the common one.
_USER_ASSIGNED = {"XK": "Kosovo"}


@cache
def country_table() -> dict[str, str]:
    """Every code → its English short name, in code order."""
    table = {country.alpha_2: country.name for country in pycountry.countries}
    table.update(_USER_ASSIGNED)
    return dict(sorted(table.items()))


def country_name(code: str) -> str | None:
    return country_table().get(code.upper())
