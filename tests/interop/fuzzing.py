"""Building blocks of the fuzz tests (tests/interop/test_fuzz.py).

* :func:`arguments_for` — a Hypothesis strategy for a tool's arguments, built from its own input schema,
  with hostile strings (:data:`HOSTILE`) mixed into every string and plausible values (``hints``) mixed
  into the properties a test names, so that calls also get past validation and reach the real work.
* :func:`check_answer` — what every answer must be: a result, or an error result written for the model.
* :class:`StdioPeer` — a raw JSON-RPC client over a real server process's stdin/stdout. Neither client
  library can send a lone surrogate (both encode with pydantic, which refuses them); this one writes
  the bytes itself, so hostile Unicode really crosses the wire.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

__all__ = [
    "HOSTILE",
    "MAX_REPLY_CHARS",
    "StdioPeer",
    "arguments_for",
    "check_answer",
    "leaked_paths",
    "strings_in",
]

HOSTILE = [
    "",
    " ",
    "A" * 100_000,
    "\x00",
    "\x1b[31m",
    "\r\n",
    "\ud800",
    "\udfff\ud800",
    "a\udc80b",
    "😀" * 500,
    "\u202e",
    "\ufeff",
    "../../../../etc/passwd",
    "/etc/shadow",
    "--output=/tmp/dockyard-fuzz",
    "-rf",
    "$(touch /tmp/dockyard-fuzz)",
    "`id`",
    "'; DROP TABLE customers; --",
    '" OR 1=1 --',
    "%s%n%x",
    ":(top)",
    "HEAD@{-1}",
    "..",
    "~",
    "*",
    "[",
    "\\",
    "NULL",
    "1e309",
]
# One popular host refuses a result over 25,000 tokens (about 4 characters a token); the SDK's HTTP client
# refuses one SSE event over 1 MiB. Every reply stays under the first, so under both.
MAX_REPLY_CHARS = 100_000


def _text() -> st.SearchStrategy[str]:
    return st.one_of(st.text(max_size=40), st.sampled_from(HOSTILE))


def _key() -> st.SearchStrategy[str]:
    """A hostile object key that a client library can still send: pydantic encodes a lone surrogate in
    a value but refuses one in a key, before the request leaves the client (StdioPeer sends those)."""
    sendable = [text for text in HOSTILE if not any("\ud800" <= c <= "\udfff" for c in text)]
    return st.one_of(st.text(max_size=40), st.sampled_from(sendable))


def strategy(
    schema: dict[str, Any], defs: dict[str, Any], hints: Mapping[str, Iterable[Any]] | None = None
) -> st.SearchStrategy[Any]:
    """Values matching ``schema`` (a JSON Schema as FastMCP writes them), strings mixed with hostile ones."""
    hints = hints or {}
    if "$ref" in schema:
        return strategy(defs[schema["$ref"].split("/")[-1]], defs, hints)
    if "anyOf" in schema or "oneOf" in schema:
        return st.one_of([strategy(s, defs, hints) for s in schema.get("anyOf", schema.get("oneOf"))])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([strategy({**schema, "type": k}, defs, hints) for k in kind])
    if kind == "string":
        return _text()
    if kind == "integer":
        low = schema.get("minimum", schema.get("exclusiveMinimum", -(10**12)))
        return st.one_of(st.integers(min_value=low, max_value=low + 50), st.integers(-(10**12), 10**12))
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(strategy(schema.get("items", {"type": "string"}), defs, hints), max_size=3)
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        if not properties:
            return st.dictionaries(_key(), st.one_of(st.none(), st.integers(), _text()), max_size=3)
        required = set(schema.get("required", []))

        def of(name: str, sub: dict[str, Any]) -> st.SearchStrategy[Any]:
            drawn = strategy(sub, defs, hints)
            if name in hints:
                return st.one_of(st.sampled_from(list(hints[name])), drawn)
            return drawn

        return st.fixed_dictionaries(
            {k: of(k, v) for k, v in properties.items() if k in required},
            optional={k: of(k, v) for k, v in properties.items() if k not in required},
        )
    return st.one_of(st.none(), st.integers(), _text(), st.lists(st.integers(), max_size=2))


def arguments_for(
    input_schema: dict[str, Any], hints: Mapping[str, Iterable[Any]] | None = None
) -> st.SearchStrategy[dict[str, Any]]:
    return strategy(input_schema, input_schema.get("$defs", {}), hints)


# Absolute POSIX paths of at least two segments (as dockyard_shared.errors scrubs them).
_PATH = re.compile(r"(?<![\w.])(?:/[^\s/'\"`:()\[\]{},;]+){2,}/?")


def strings_in(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


def leaked_paths(text: str, allowed_roots: Iterable[Path], arguments: Any) -> list[str]:
    """Host paths in ``text`` outside ``allowed_roots`` that the call did not itself name."""
    roots = [str(r).rstrip("/") for r in allowed_roots]
    echoed = list(strings_in(arguments))
    leaks = []
    for match in _PATH.finditer(text):
        path = match.group(0).rstrip("/.")
        if any(path == r or path.startswith(r + "/") for r in roots):
            continue
        if any(path in s or path in repr(s) for s in echoed):
            continue  # the model's own argument, echoed back
        leaks.append(path)
    return leaks


def check_answer(
    tool: str,
    arguments: Any,
    *,
    is_error: bool,
    text: str,
    structured: Any,
    allowed_roots: Iterable[Path],
    internal_ok: bool = False,
) -> None:
    """A result, or an error result in Dockyard's four-part form; never a traceback or a host path."""
    where = f"{tool}({_short(arguments)})"
    assert len(text) < MAX_REPLY_CHARS, f"{where}: a {len(text):,}-character reply"
    if is_error:
        assert text.startswith("Error ("), f"{where}: not a Dockyard error: {text[:500]!r}"
        assert "\nRetry: " in text, f"{where}: the error does not say whether to retry: {text[:500]!r}"
        if not internal_ok:
            assert not text.startswith("Error (internal)"), f"{where}: an unexpected failure: {text[:500]!r}"
        assert "Traceback" not in text, f"{where}: a traceback reached the client: {text[:2000]}"
        leaks = leaked_paths(text, allowed_roots, arguments)
        assert not leaks, (
            f"{where}: host paths outside the served roots in the error: {leaks}: {text[:500]!r}"
        )
    else:
        assert structured is not None or text, f"{where}: an empty result"
        json.dumps(structured)  # a real, serialisable result


def _short(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text):,} characters)"


# -- a raw JSON-RPC peer over stdio -------------------------------------------------------------------

LEGACY_ERA = "2025-11-25"


class ServerGone(AssertionError):
    pass


class StdioPeer:
    """A server process spoken to in raw JSON-RPC lines (protocol 2025-11-25, sessions and ``ping``).

    ``send`` writes a message as UTF-8 with lone surrogates passed through as their (invalid) bytes,
    so invalid Unicode reaches the server's reader; ``send_line`` writes any bytes as they are.
    """

    def __init__(self, command: list[str], *, env: dict[str, str], cwd: str | None, log_path: Path) -> None:
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, env=env, cwd=cwd
        )
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._next_id = 0

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-4000:]

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def send_line(self, data: bytes) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(data.rstrip(b"\n") + b"\n")
            self.process.stdin.flush()
        except BrokenPipeError as error:
            raise ServerGone(f"the server closed its stdin:\n{self.log()}") from error

    def send(self, message: dict[str, Any]) -> None:
        self.send_line(json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass"))

    def receive(self, request_id: Any, timeout: float) -> dict[str, Any]:
        """The next message answering ``request_id`` (or an answer with ``id: null``); notifications are
        skipped and requests from the server refused."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no answer to request {request_id} within {timeout:.0f}s")
            try:
                line = self._lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise ServerGone(f"the server exited ({self.process.poll()}):\n{self.log()}")
            try:
                message = json.loads(line)
            except ValueError as error:
                raise AssertionError(f"the server wrote a line that is not JSON: {line[:500]!r}") from error
            assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", (
                f"not JSON-RPC: {line[:500]!r}"
            )
            if "method" in message:
                if "id" in message:  # a request from the server: this client offers no capability
                    self.send(
                        {
                            "jsonrpc": "2.0",
                            "id": message["id"],
                            "error": {"code": -32601, "message": "Method not found"},
                        }
                    )
                continue
            if message.get("id") in (request_id, None):
                return message
            raise AssertionError(f"an answer to a request never made ({request_id} awaited): {line[:500]!r}")

    def request(self, method: str, params: dict[str, Any] | None, *, timeout: float) -> dict[str, Any]:
        request_id = self.new_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.receive(request_id, timeout)

    def initialize(self, timeout: float = 60) -> dict[str, Any]:
        reply = self.request(
            "initialize",
            {
                "protocolVersion": LEGACY_ERA,
                "capabilities": {},
                "clientInfo": {"name": "dockyard-fuzz", "version": "0"},
            },
            timeout=timeout,
        )
        assert "result" in reply, reply
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply["result"]

    def ping(self, timeout: float = 30) -> bool:
        return self.request("ping", None, timeout=timeout).get("result") == {}

    def close(self) -> None:
        if self.process.stdin is not None:
            try:
                self.process.stdin.close()
            except BrokenPipeError:
                pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def environment(extra: Mapping[str, str]) -> dict[str, str]:
    return {**os.environ, "FASTMCP_CHECK_FOR_UPDATES": "off", **extra}
