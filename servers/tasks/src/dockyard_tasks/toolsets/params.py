"""Parameter types the tools share: the signature is the schema and the validation."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import Field, PlainValidator

from dockyard_shared.schema import optional

from ..models import ExportDocument

# Their form is said once, in the server's instructions ("task ids look like WEB-12"), not per argument.
TaskId = str
ProjectKey = str
Status = Literal["todo", "in_progress", "blocked", "done", "cancelled"]
Priority = Literal["urgent", "high", "medium", "low"]
ExpectedVersion = Annotated[
    int | None,
    optional("integer", "The version you read."),
]
# Optional forms (null: not given) of the types above, as dockyard_shared.schema.optional writes them.
StatusOrNone = Annotated[Status | None, optional("string", enum=list(get_args(Status)))]
PriorityOrNone = Annotated[Priority | None, optional("string", enum=list(get_args(Priority)))]
TextOrNone = Annotated[str | None, optional("string")]
Force = Annotated[bool, Field(description="Done despite open blockers or criteria.")]
Labels = Annotated[list[str], Field(description="E.g. bug, frontend.")]

# Declared as the export's own document model (so strict function calling and Gemini can express it), and
# handed to the store as the JSON it is: the store checks it (format, size, each field) with errors that say
# what to fix, and takes an export page whole (its next_cursor and note are left aside).
ExportDocumentArgument = Annotated[
    dict[str, Any],
    PlainValidator(lambda document: document, json_schema_input_type=ExportDocument),
    Field(description="An export_project document."),
]
