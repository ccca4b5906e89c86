"""The ``predict`` toolset (batch_predict) and the ``details`` toolset (predict_origin, quota_status, off by
default), each tool one call into the Predictor."""

from typing import Annotated, Any

from fastmcp import Context
from fastmcp.dependencies import CurrentContext
from pydantic import Field

from dockyard_shared import OPEN_WORLD, READ_ONLY
from dockyard_shared.progress import report_progress
from dockyard_shared.results import model_result
from dockyard_shared.toolsets import ToolRegistrar

from ..models import OriginReply, Prediction, QuotaStatus
from ..predict import Predictor
from ..replies import origin_reply

__all__ = ["register", "register_details"]


def register(registrar: ToolRegistrar, predictor: Predictor, *, task: Any = None) -> None:
    """``task``: batch_predict's task configuration when the server serves the tasks extension."""
    limits = predictor.limits

    @registrar.tool(annotations=OPEN_WORLD, task=task)
    async def batch_predict(
        names: Annotated[list[str], Field(description=f"Up to {limits.max_names:,}.")],
        offset: Annotated[int, Field(ge=0)] = 0,
        ctx: Context = CurrentContext(),
    ) -> OriginReply:
        """Where names are most common, from nationalize.io: one or many in one call.

        Use when: a name's likely country of origin.
        Not for: a name's meaning; facts about its bearer.
        Returns: per name, in order, {name, count (sample size), country [[code, probability]] top 3,
        confidence, status if not ok}; note, statuses, retry_at if some are missing.
        Limits: a name not fetched is listed, never guessed. A long reply pages: pass next_offset with the
        same names.
        """

        async def progress(done: float, total: float, message: str) -> None:
            await report_progress(ctx, done, total, message)

        result = await predictor.predict_many(names, offset=offset, progress=progress)
        return model_result(origin_reply(result), exclude_none=True)  # type: ignore[return-value]


def register_details(registrar: ToolRegistrar, predictor: Predictor) -> None:
    @registrar.tool(annotations=OPEN_WORLD)
    async def predict_origin(
        name: Annotated[str, Field(description="A surname or full name says most.")],
    ) -> Prediction:
        """Where one name is most common, in full: every country, named, with notes and cache time.

        Use when: one name in detail.
        Not for: several names (batch_predict); facts about a person.
        Returns: name (as looked up), count, country [{country_id, probability, country_name}], confidence,
        status ok|unknown (no record), cached, fetched_at, note.
        Limits: 100 characters, with a letter.
        """
        return await predictor.predict_one(name)

    @registrar.tool(annotations=READ_ONLY)
    async def quota_status() -> QuotaStatus:
        """Show nationalize.io's quota as last seen, the circuit breaker and the cache; calls nothing.

        Use when: planning a large batch, or after a quota or availability error.
        Not for: predictions.
        Returns: limit, remaining, reset_at, observed_at (null until a first answer), circuit, offline,
        cache {enabled, backend, entries, ttl_days, hits, misses, hit_rate}, note.
        Limits: as of observed_at; other clients of the key or IP may have spent more.
        """
        return await predictor.quota_status()
