"""import_project's document is listed as the export's own model (ExportDocument), so strict function
calling can express it; a document sent as strict mode sends it (every property, null where one is left
out) imports the same; the store's own checks still answer a wrong document. Both eras."""

from __future__ import annotations

from typing import Any

from dockyard_shared.export import strict_schema
from dockyard_tasks.models import ExportDocument, ProjectDoc, TaskDoc, TaskPartDoc
from tests.harness import open_session
from tests.tasks.helpers import make_server


def fields(model) -> set[str]:
    return set(model.model_fields)


def as_strict_mode_sends(schema: dict[str, Any], value: Any) -> Any:
    """``value`` with every property of every object present: its default if it has one, else null."""
    if isinstance(value, list):
        return [as_strict_mode_sends(schema.get("items", {}), item) for item in value]
    if not isinstance(value, dict):
        return value
    if "anyOf" in schema:  # a task or a continuation part: the branch whose required fields it has
        schema = next(b for b in schema["anyOf"] if set(b.get("required", [])) <= set(value))
    properties = schema.get("properties", {})
    return {
        name: as_strict_mode_sends(prop, value[name]) if name in value else prop.get("default")
        for name, prop in properties.items()
    }


async def test_the_document_is_listed_as_export_document_and_strict_mode_can_express_it(sqlite_url, era):
    async with open_session(make_server(sqlite_url), era=era) as session:
        tools = {tool.name: tool.input_schema for tool in await session.list_tools()}
    document = tools["import_project"]["properties"]["document"]
    assert set(document["properties"]) == fields(ExportDocument)
    assert set(document["properties"]["project"]["properties"]) == fields(ProjectDoc)
    task, part = document["properties"]["tasks"]["items"]["anyOf"]
    assert (set(task["properties"]), set(part["properties"])) == (fields(TaskDoc), fields(TaskPartDoc))
    strict_schema(tools["import_project"])  # raises if strict mode cannot express it


async def test_a_document_sent_as_strict_mode_sends_it_imports_the_same(sqlite_url, tmp_path, era):
    async with open_session(make_server(sqlite_url, demo=True), era=era) as session:
        exported = (await session.call_ok("export_project", {"project": "TASK"})).data
        schema = {tool.name: tool.input_schema for tool in await session.list_tools()}["import_project"]
    strict = as_strict_mode_sends(schema["properties"]["document"], exported)
    tasks = [task for task in strict["tasks"] if "continues" not in task]
    assert all(set(task) == fields(TaskDoc) for task in tasks)
    async with open_session(make_server(f"sqlite:///{tmp_path / 'copy.db'}"), era=era) as session:
        imported = (await session.call_ok("import_project", {"document": strict, "key": ""})).data
        again = (await session.call_ok("export_project", {"project": "TASK"})).data
    assert imported["tasks"] == len(exported["tasks"])
    assert again == exported


async def test_a_document_that_is_not_an_object_gets_the_stores_answer(sqlite_url, era):
    async with open_session(make_server(sqlite_url), era=era) as session:
        text = await session.call_error("import_project", {"document": "TASK"})
    assert "must be a JSON object as export_project returns it" in text
