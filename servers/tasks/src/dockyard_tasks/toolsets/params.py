"""Parameter types the tools share: the signature is the schema and the validation."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

TaskId = Annotated[str, Field(description="A task id such as WEB-12 (list_tasks shows them).")]
ProjectKey = Annotated[str, Field(description="A project key such as WEB (list_projects shows them).")]
Status = Literal["todo", "in_progress", "blocked", "done", "cancelled"]
Priority = Literal["urgent", "high", "medium", "low"]
ExpectedVersion = Annotated[
    int | None,
    Field(description="The version you read; if the task moved on, a conflict says what changed."),
]
Force = Annotated[bool, Field(description="Close (done) despite open blockers/criteria.")]
