"""The ``traits`` toolset (off by default): predict_traits, one call into the TraitPredictor."""

from typing import Annotated, Literal

from fastmcp import Context
from fastmcp.dependencies import CurrentContext
from pydantic import Field

from dockyard_shared import OPEN_WORLD
from dockyard_shared.progress import report_progress
from dockyard_shared.results import model_result
from dockyard_shared.schema import optional
from dockyard_shared.toolsets import ToolRegistrar

from ..trait_models import TraitsResult
from ..traits import TraitPredictor

__all__ = ["register"]


def register(registrar: ToolRegistrar, traits: TraitPredictor) -> None:
    limit = traits.limits.max_trait_names

    @registrar.tool(annotations=OPEN_WORLD)
    async def predict_traits(
        names: Annotated[list[str], Field(description=f"Up to {limit}.")],
        what: Literal["gender", "age", "origin"],
        country_id: Annotated[str | None, optional("string", "ISO 3166 alpha-2; gender/age.")] = None,
        ctx: Context = CurrentContext(),
    ) -> TraitsResult:
        """Predict gender (genderize.io), age (agify.io) or origin of names, e-mail addresses, handles.

        Use when: gender or age of names; a prediction from jane.doe@x.org or jdoe_1987.
        Not for: facts about a person (see interpret_name_origin).
        Returns: per input {input, parse?, looked_up, status, gender+probability|age|country, count,
        confidence (lowered after a parse), low_sample?}, statuses, note.
        Limits: gender/age read the given name; quota shared with origin.
        """

        async def progress(done: float, total: float, message: str) -> None:
            await report_progress(ctx, done, total, message)

        result = await traits.predict(names, what, country_id, progress)
        return model_result(result, exclude_none=True)  # type: ignore[return-value]
