"""The fake genderize.io's and agify.io's answers: made up, deterministic, localised by ``country_id``.

Served by :mod:`tests.name_origin.fake_nationalize` (``RunningFake(api="genderize" | "agify")``). About one
name in ten is unknown (``count: 0`` and a null gender or age); a localised answer is drawn from fewer
records and echoes ``country_id``, as the real services do.
"""

from __future__ import annotations

import hashlib
from typing import Any

__all__ = ["age_prediction", "gender_prediction"]


def gender_prediction(name: str, country_id: str | None = None) -> dict[str, Any]:
    """genderize's deterministic answer for ``name`` (localised by ``country_id``)."""
    digest = hashlib.sha256(f"g|{country_id or ''}|{name.casefold()}".encode()).digest()
    answer: dict[str, Any] = {"count": 0, "name": name, "gender": None, "probability": 0.0}
    if digest[0] % 10 != 0:
        count = max(1, int(10 ** (digest[1] / 255 * (4.5 if country_id else 5.5))))
        gender = "female" if digest[2] % 2 else "male"
        answer = {
            "count": count,
            "name": name,
            "gender": gender,
            "probability": round(0.5 + digest[3] / 510, 2),
        }
    if country_id:
        answer["country_id"] = country_id
    return answer


def age_prediction(name: str, country_id: str | None = None) -> dict[str, Any]:
    """agify's deterministic answer for ``name`` (localised by ``country_id``)."""
    digest = hashlib.sha256(f"a|{country_id or ''}|{name.casefold()}".encode()).digest()
    answer: dict[str, Any] = {"count": 0, "name": name, "age": None}
    if digest[0] % 10 != 0:
        answer = {
            "count": max(1, int(10 ** (digest[1] / 255 * (4.5 if country_id else 5.5)))),
            "name": name,
            "age": 18 + digest[2] % 60,
        }
    if country_id:
        answer["country_id"] = country_id
    return answer
