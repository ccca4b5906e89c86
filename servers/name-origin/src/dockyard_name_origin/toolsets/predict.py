"""The ``predict`` toolset: predict_origin, batch_predict and quota_status, each one call into the Predictor."""

from typing import Annotated, Any

from fastmcp import Context
from fastmcp.dependencies import CurrentContext
from pydantic import Field

from dockyard_shared import OPEN_WORLD, READ_ONLY
from dockyard_shared.results import model_result
from dockyard_shared.toolsets import ToolRegistrar

from ..models import BatchResult, Prediction, QuotaStatus
from ..predict import Predictor

__all__ = ["register"]


def register(registrar: ToolRegistrar, predictor: Predictor, *, task: Any = None) -> None:
    """``task``: batch_predict's task configuration when the server serves the tasks extension."""
    limits = predictor.limits

    @registrar.tool(annotations=OPEN_WORLD)
    async def predict_origin(
        name: Annotated[str, Field(description="A surname or full name says most.")],
    ) -> Prediction:
        """Predict where one name is most common, from nationalize.io's records.

        Use when: one name.
        Not for: several names (batch_predict); facts about a person.
        Returns: name (trimmed, lower case), count (records: the sample size), country [{country_id,
        probability, country_name}], confidence (none/low/medium/high), status ok|unknown (no record: not an
        error), cached, fetched_at, note.
        Limits: 100 characters, with a letter.
        """
        return await predictor.predict_one(name)

    @registrar.tool(annotations=OPEN_WORLD, task=task)
    async def batch_predict(
        names: Annotated[list[str], Field(description=f"Up to {limits.max_names:,}.")],
        offset: Annotated[int, Field(description="From next_offset.", ge=0)] = 0,
        ctx: Context = CurrentContext(),
    ) -> BatchResult:
        """Predict where each of many names is most common, in one call.

        Use when: more than one name.
        Not for: one name (predict_origin gives every country and notes).
        Returns: results in input order, each {input (if normalising changed it), name, status (ok, unknown,
        invalid, not fetched: quota exhausted | upstream unavailable | offline), count, country (top 3),
        confidence, reason}; statuses counted, retry_at, note saying what to do next.
        Limits: names not fetched are listed, never guessed. Over ~80,000 characters next_offset is set: call
        again with the same names and it (cache only: a name not fetched stays so; offset 0 retries it).
        """

        async def progress(done: float, total: float, message: str) -> None:
            await ctx.report_progress(done, total, message)

        result = await predictor.predict_many(names, offset=offset, progress=progress)
        return model_result(result, exclude_none=True)  # type: ignore[return-value]

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
