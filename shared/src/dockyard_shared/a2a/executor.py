"""A2A requests run as MCP tool calls on one server, through an in-process MCP client session.

A request is a message whose part is the data ``{"tool": NAME, "arguments": {...}}``. The tool runs through
``fastmcp.Client(server)``, so it meets the same middleware, argument validation, bounds, confirmations and
errors as a host's call. The task's life:

* working → completed, with one artifact: the structured result (a data part) and its text;
* working → failed, the status message carrying the tool's model-facing error text;
* working → input-required when the tool asks the user to confirm (MCP elicitation): the call waits,
  suspended, for the caller's next message on the same task — a data part (``{"confirm": true}``) or the
  text ``yes`` / ``no`` — then goes on; progress the tool reports arrives as working status updates;
* no answer within ``answer_timeout`` (15 minutes): the question counts as cancelled, and the tool says
  what it did then (a destructive one: nothing);
* canceled: the running call (waiting for an answer or not) is cancelled.

A plain text message gets one agent message back: the skills and the data shape expected. The calls in
flight live in this process (:class:`ToolCallExecutor` holds them by task id) and the task store is the
a2a-sdk's in-memory one, so an ``input-required`` task is answerable only by the process that asked.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp.types as mt
from a2a.helpers import (
    get_data_parts,
    get_text_parts,
    new_data_part,
    new_message,
    new_task_from_user_message,
    new_text_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import TaskState
from fastmcp import Client, FastMCP
from fastmcp.client.elicitation import ElicitResult

from ..problems import InvalidArgument, did_you_mean
from .card import request_shape, skills_text

__all__ = ["ToolCallExecutor", "parse_request"]

log = logging.getLogger("dockyard.a2a")

# How long a call waits for the caller's answer to a confirmation before it goes on as "cancelled" (the
# tool then reports that nothing was changed): an abandoned input-required task must not hold a session.
ANSWER_TIMEOUT = 900.0
_YES = {"yes", "y", "confirm", "ok", "go ahead"}
_NO = {"no", "n", "decline", "cancel", "stop"}


def _integral(value: Any) -> Any:
    """``value`` with whole floats made ints again: a data part (google.protobuf.Value) keeps every number
    as a double, and a tool's ``limit: 5`` must not arrive as ``5.0``."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_integral(item) for item in value]
    if isinstance(value, dict):
        return {key: _integral(item) for key, item in value.items()}
    return value


def parse_request(data: Any, tools: Sequence[mt.Tool]) -> tuple[str, dict[str, Any]]:
    """The tool and arguments a data part names, or :class:`InvalidArgument` saying what to send. The name
    is the server's to judge: a switched-off tool answers how to switch it on."""
    if not isinstance(data, dict) or not isinstance(data.get("tool"), str):
        raise InvalidArgument(
            'The data part must be an object {"tool": NAME, "arguments": {...}}.',
            next_step=f"Send e.g. {json.dumps(request_shape(tools[0]))}." if tools else None,
        )
    unknown = set(data) - {"tool", "arguments"}
    if unknown:
        raise InvalidArgument(
            f"The request has keys {sorted(unknown)} besides 'tool' and 'arguments'.",
            next_step='Put every argument inside "arguments".',
        )
    name, arguments = data["tool"], data.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise InvalidArgument(f'"arguments" must be an object, not {type(arguments).__name__}.')
    return name, _integral(arguments)


@dataclass
class _Call:
    """One tool call in flight, and the A2A task it belongs to."""

    task_id: str
    context_id: str
    queue: EventQueue
    # Set whenever the call stops needing the request that drives it: finished, or waiting for input.
    paused: asyncio.Event = field(default_factory=asyncio.Event)
    answer: asyncio.Future[ElicitResult] | None = None
    requested: dict[str, Any] = field(default_factory=dict)  # the schema the pending question asks for
    runner: asyncio.Task[None] | None = None

    def updater(self) -> TaskUpdater:
        return TaskUpdater(self.queue, self.task_id, self.context_id)


class ToolCallExecutor(AgentExecutor):
    """Runs the A2A requests for one server (``name``) on its tools."""

    def __init__(
        self, name: str, server: FastMCP, tools: Sequence[mt.Tool], *, answer_timeout: float = ANSWER_TIMEOUT
    ) -> None:
        self.name = name
        self.answer_timeout = answer_timeout
        self.server = server
        self.tools = list(tools)
        self._calls: dict[str, _Call] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None and context.task_id and context.context_id
        data = get_data_parts(message.parts)
        call = self._calls.get(context.task_id)
        if call is not None and call.answer is not None and not call.answer.done():
            call.queue = event_queue
            await self._answer(call, data, " ".join(get_text_parts(message.parts)))
            return
        task = context.current_task
        if not data and task is None:  # a question, not a request: answer it without opening a task
            text = skills_text(self.name, self.tools)
            await event_queue.enqueue_event(new_text_message(text, context_id=context.context_id))
            return
        if task is None:
            await event_queue.enqueue_event(new_task_from_user_message(message))
        call = _Call(context.task_id, context.context_id, event_queue)
        try:
            name, arguments = parse_request(data[0] if data else None, self.tools)
        except InvalidArgument as problem:
            await call.updater().failed(new_text_message(problem.for_model(), context_id=call.context_id))
            return
        await call.updater().start_work()
        self._calls[call.task_id] = call
        call.runner = asyncio.create_task(self._run(call, name, arguments), name=f"a2a {self.name} {name}")
        await self._until_paused(call)

    async def _until_paused(self, call: _Call) -> None:
        try:
            await call.paused.wait()
        except asyncio.CancelledError:  # the request was cancelled: so is its call
            if call.runner is not None:
                call.runner.cancel()
            raise

    async def _answer(self, call: _Call, data: list[Any], text: str) -> None:
        """Resume a call waiting for the user's confirmation with this message's answer."""
        assert call.answer is not None
        answer: dict[str, Any] | None = data[0] if data and isinstance(data[0], dict) else None
        if answer is not None and "tool" in answer and "tool" not in call.requested.get("properties", {}):
            answer = None  # a new request sent to a task that is waiting for an answer: ask again
        word = text.strip().lower()
        if answer is None and "confirm" in call.requested.get("properties", {}) and word in _YES | _NO:
            answer = {"confirm": word in _YES}
        if answer is None:
            await call.updater().requires_input(
                self._question("That answer was not understood. ", call.requested, call)
            )
            return
        call.paused.clear()
        call.answer.set_result(ElicitResult(action="accept", content=_integral(answer)))
        await self._until_paused(call)

    def _question(self, text: str, schema: dict[str, Any], call: _Call):
        shape = {
            name: True if spec.get("type") == "boolean" else "…"
            for name, spec in schema.get("properties", {}).items()
        }
        return new_message(
            [
                new_text_part(
                    f"{text}Reply on this task with a data part {json.dumps(shape)} (for a yes/no "
                    "question, the text 'yes' or 'no' also does), or cancel the task."
                ),
                new_data_part({"requestedSchema": schema}),
            ],
            context_id=call.context_id,
            task_id=call.task_id,
        )

    async def _run(self, call: _Call, name: str, arguments: dict[str, Any]) -> None:
        async def elicit(message: str, response_type: Any, params: Any, context: Any) -> ElicitResult:
            call.requested = dict(getattr(params, "requested_schema", None) or {})
            call.answer = asyncio.get_running_loop().create_future()
            await call.updater().requires_input(self._question(f"{message}\n", call.requested, call))
            call.paused.set()
            try:
                return await asyncio.wait_for(asyncio.shield(call.answer), self.answer_timeout)
            except TimeoutError:
                log.info(
                    "A2A task %s: no answer within %gs; the question is cancelled",
                    call.task_id,
                    self.answer_timeout,
                )
                return ElicitResult(action="cancel")
            finally:
                call.answer = None

        async def progress(done: float, total: float | None, message: str | None) -> None:
            of = f"/{total:g}" if total else ""
            text = f"{name}: {message or 'working'} ({done:g}{of})"
            await call.updater().update_status(TaskState.TASK_STATE_WORKING, new_text_message(text))

        try:
            async with Client(self.server, elicitation_handler=elicit) as client:
                result = await client.call_tool(
                    name, arguments, raise_on_error=False, progress_handler=progress
                )
            text = "\n".join(block.text for block in result.content if isinstance(block, mt.TextContent))
            updater = call.updater()
            if result.is_error:
                if name not in {tool.name for tool in self.tools} and text.startswith("Unknown tool"):
                    # A name the server does not know at all (one it knows but does not serve has its own
                    # answer, how to switch it on, which stands): say which names are close.
                    names = [tool.name for tool in self.tools]
                    text = InvalidArgument(
                        f"This agent has no tool {name!r}.", next_step=did_you_mean(name, names, kind="tool")
                    ).for_model()
                await updater.failed(new_text_message(text, context_id=call.context_id))
            else:
                parts = [new_text_part(text)] if text else []
                if result.structured_content is not None:
                    parts.insert(0, new_data_part(result.structured_content))
                await updater.add_artifact(parts or [new_text_part("(no output)")], name=f"{name} result")
                await updater.complete()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("A2A call of %s on %s failed", name, self.name)
            await self._publish_failure(call, name)
        finally:
            self._calls.pop(call.task_id, None)
            call.paused.set()

    async def _publish_failure(self, call: _Call, name: str) -> None:
        try:
            await call.updater().failed(
                new_text_message(
                    f"The call of {name} failed inside dockyard-{self.name} (the server's log has the "
                    "details). Retrying the same call is unlikely to help; tell the user.",
                    context_id=call.context_id,
                )
            )
        except Exception:  # the task's queue is gone (the task was released): the log has the failure
            log.debug("A2A task %s: the failure could not be published", call.task_id, exc_info=True)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        call = self._calls.pop(context.task_id or "", None)
        if call is not None and call.runner is not None:
            call.runner.cancel()
            try:
                await call.runner
            except asyncio.CancelledError:
                pass
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel(
            new_text_message("Cancelled; the tool call was stopped.", context_id=context.context_id)
        )
