"""Parameter types the tools share: the signature is the schema and the validation."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

TaskId = Annotated[str, Field(description="E.g. WEB-12.")]
ProjectKey = Annotated[str, Field(description="E.g. WEB.")]
Status = Literal["todo", "in_progress", "blocked", "done", "cancelled"]
Priority = Literal["urgent", "high", "medium", "low"]
ExpectedVersion = Annotated[
    int | None,
    Field(description="The version you read."),
]
Force = Annotated[bool, Field(description="Done despite open blockers or criteria.")]
Labels = Annotated[list[str], Field(description="E.g. bug, frontend.")]
