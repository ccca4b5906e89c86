"""A loopback fake of OpenAI's chat completions API: a real HTTP server speaking the documented contract.

As ``POST /v1/chat/completions`` does:

* the request is JSON ``{model, messages, tools?, tool_choice?, temperature?, ...}``; a tool is
  ``{"type": "function", "function": {"name", "description", "parameters", "strict"?}}`` and a name must
  match ``^[a-zA-Z0-9_-]{1,64}$``; a bad request is 400 with ``{"error": {"message", "type":
  "invalid_request_error", "param", "code"}}``;
* ``Authorization: Bearer KEY``: a missing or wrong key is 401 (``invalid_api_key``) when the fake has a
  key; an unknown model is 404 (``model_not_found``);
* the answer is ``{"id", "object": "chat.completion", "created", "model", "choices": [{"index": 0,
  "message": {"role": "assistant", "content", "refusal", "tool_calls"?}, "finish_reason"}], "usage"}``;
  a tool call is ``{"id", "type": "function", "function": {"name", "arguments"}}`` with the arguments as a
  JSON *string*, and ``finish_reason`` is ``tool_calls``.

Answers are scripted per user request (the last user message's text): :meth:`FakeChat.script` queues
replies for one request, consumed in order (the last one repeats); a request with no script gets
:attr:`FakeChat.default` (a plain text answer). A reply is a tool call (arguments given as an object, or as
raw text to send malformed JSON), a text, a refusal, an HTTP error (429 with ``Retry-After``, 500, 503…),
a hang past the client's timeout, or a body that is not a chat completion. Every request is recorded.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(frozen=True)
class Reply:
    kind: str  # call, raw, text, refusal, status, hang, garbage
    tool: str | None = None
    arguments: Any = None  # an object (sent as its JSON text) or a str (sent as is)
    text: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    extra: tuple[tuple[str, Any], ...] = ()  # further tool calls after the first


def call(tool: str, arguments: Any = None, *more: tuple[str, Any]) -> Reply:
    return Reply("call", tool, {} if arguments is None else arguments, extra=tuple(more))


def text(content: str) -> Reply:
    return Reply("text", text=content)


def refusal(reason: str) -> Reply:
    return Reply("refusal", text=reason)


def status(code: int, message: str = "", **headers: str) -> Reply:
    return Reply(
        "status", status=code, text=message, headers={k.replace("_", "-"): v for k, v in headers.items()}
    )


def raw_calls(*calls: Any) -> Reply:
    """``tool_calls`` exactly as given (a call with no name, arguments as an object as some local servers
    send them, …)."""
    return Reply("raw", arguments=list(calls))


HANG = Reply("hang")
GARBAGE = Reply("garbage")


@dataclass
class FakeChat:
    models: tuple[str, ...] = ("fake-model",)
    key: str | None = None
    default: Reply = field(default_factory=lambda: text("I can answer that without tools."))
    scripts: dict[str, list[Reply]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    released: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: itertools.count = field(default_factory=itertools.count)

    def script(self, request: str, *replies: Reply) -> None:
        self.scripts[request] = list(replies)

    def next_reply(self, request: str) -> Reply:
        with self._lock:
            queue = self.scripts.get(request)
            if not queue:
                return self.default
            return queue.pop(0) if len(queue) > 1 else queue[0]

    def asked(self, request: str) -> int:
        return sum(1 for body in self.requests if _user_text(body) == request)


def _user_text(body: dict[str, Any]) -> str:
    users = [m for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
    content = users[-1].get("content", "") if users else ""
    return content if isinstance(content, str) else ""


def _bad(param: str, message: str) -> tuple[int, dict[str, Any]]:
    return 400, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": None}}


def _check(body: Any, fake: FakeChat) -> tuple[int, dict[str, Any]] | None:
    if not isinstance(body, dict):
        return _bad("", "We could not parse the JSON body of your request.")
    if not isinstance(body.get("model"), str):
        return _bad("model", "you must provide a model parameter")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return _bad("messages", "'messages' must be a non-empty array")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in (
            "system",
            "developer",
            "user",
            "assistant",
            "tool",
        ):
            return _bad(f"messages[{index}]", f"Invalid value for 'messages[{index}].role'.")
    for index, tool in enumerate(body.get("tools") or []):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(function, dict):
            return _bad(f"tools[{index}]", f"Invalid value for 'tools[{index}]': expected a function tool.")
        if not NAME.match(str(function.get("name", ""))):
            return _bad(
                f"tools[{index}].function.name",
                "Invalid 'tools[].function.name': string does not match pattern.",
            )
        parameters = function.get("parameters")
        if parameters is not None and (
            not isinstance(parameters, dict) or parameters.get("type") != "object"
        ):
            return _bad(
                f"tools[{index}].function.parameters",
                "Invalid schema for function: must be a JSON Schema of 'type: \"object\"'.",
            )
    if body["model"] not in fake.models:
        message = f"The model `{body['model']}` does not exist or you do not have access to it."
        return 404, {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": None,
                "code": "model_not_found",
            }
        }
    return None


class _Handler(BaseHTTPRequestHandler):
    fake: FakeChat

    def log_message(self, *args: Any) -> None:
        pass

    def _json(self, code: int, value: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(value).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, item in (headers or {}).items():
            self.send_header(name, item)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        fake = self.fake
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._json(
                404,
                {
                    "error": {
                        "message": f"Invalid URL (POST {self.path})",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": None,
                    }
                },
            )
            return
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with fake._lock:
            fake.requests.append(body if isinstance(body, dict) else {})
            fake.headers.append(dict(self.headers))
        if fake.key is not None and self.headers.get("Authorization") != f"Bearer {fake.key}":
            message = (
                "Incorrect API key provided."
                if self.headers.get("Authorization")
                else "You didn't provide an API key."
            )
            self._json(
                401,
                {
                    "error": {
                        "message": message,
                        "type": "invalid_request_error",
                        "param": None,
                        "code": "invalid_api_key",
                    }
                },
            )
            return
        problem = _check(body, fake)
        if problem:
            self._json(*problem)
            return
        reply = fake.next_reply(_user_text(body))
        if reply.kind == "hang":
            fake.released.wait(30)
            return
        if reply.kind == "status":
            message = reply.text or {
                429: "Rate limit reached for requests",
                500: "The server had an error while processing your request.",
            }.get(reply.status, "error")
            kind = "rate_limit_exceeded" if reply.status == 429 else "server_error"
            self._json(
                reply.status,
                {"error": {"message": message, "type": kind, "param": None, "code": None}},
                reply.headers,
            )
            return
        if reply.kind == "garbage":
            data = b"<html>502 Bad Gateway</html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
        finish = "stop"
        if reply.kind in ("text", "refusal"):
            message["content" if reply.kind == "text" else "refusal"] = reply.text
        elif reply.kind == "raw":
            message["tool_calls"] = reply.arguments
            finish = "tool_calls"
        else:
            calls = []
            for tool, arguments in ((reply.tool, reply.arguments), *reply.extra):
                text_arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
                calls.append(
                    {
                        "id": f"call_{next(fake._ids)}",
                        "type": "function",
                        "function": {"name": tool, "arguments": text_arguments},
                    }
                )
            message["tool_calls"] = calls
            finish = "tool_calls"
        self._json(
            200,
            {
                "id": f"chatcmpl-{next(fake._ids)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )


class RunningFakeChat:
    """``with RunningFakeChat(fake) as running:`` serves ``fake`` on 127.0.0.1 (a free port) in a thread;
    ``running.base_url`` is what ``--base-url`` takes."""

    def __init__(self, fake: FakeChat | None = None) -> None:
        self.fake = fake or FakeChat()
        handler = type("Handler", (_Handler,), {"fake": self.fake})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> RunningFakeChat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.fake.released.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)
