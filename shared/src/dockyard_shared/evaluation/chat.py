"""A client for an OpenAI-compatible ``POST {base_url}/chat/completions`` with tools: any hosted API,
ollama (``http://localhost:11434/v1``), llama.cpp's server, vLLM.

Retries, bounded: 408, 409, 429 and 5xx answers, timeouts and connection failures, at most ``retries``
times, waiting what ``Retry-After`` says (seconds or an HTTP date) or ``backoff * 2**attempt``, never
more than ``max_wait`` seconds at once. A 401, 403 or 404 stops the run (wrong key, URL or model: no case
can pass); another 4xx is that case's error, with the endpoint's message.
"""

from __future__ import annotations

import email.utils
import json
import time
from dataclasses import dataclass
from typing import Any

import httpx

from .scoring import Answer

__all__ = ["ChatClient", "EndpointError", "RunStopped"]

RETRIED = {408, 409, 429, 500, 502, 503, 504}
FATAL = {401, 403, 404}


class EndpointError(Exception):
    """The endpoint gave no usable answer to one case (after the retries)."""


class RunStopped(Exception):
    """An answer no case can get past: a wrong key, URL or model."""


def _message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
        text = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        text = None
    return str(text or response.text[:300] or response.reason_phrase)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


@dataclass
class ChatClient:
    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 60.0
    retries: int = 4
    backoff: float = 1.0
    max_wait: float = 60.0
    temperature: float | None = 0.0
    attempts: int = 0  # requests sent, retries included
    retried: int = 0

    def __post_init__(self) -> None:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        self._http = httpx.Client(timeout=self.timeout, headers=headers)

    def close(self) -> None:
        self._http.close()

    def _wait(self, attempt: int, hinted: float | None) -> None:
        self.retried += 1
        delay = hinted if hinted is not None else self.backoff * 2**attempt
        time.sleep(min(delay, self.max_wait))

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Answer:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "tools": tools,
            "tool_choice": "auto",
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        url = self.base_url.rstrip("/") + "/chat/completions"
        last = ""
        for attempt in range(self.retries + 1):
            self.attempts += 1
            try:
                response = self._http.post(url, json=body)
            except httpx.TimeoutException:
                last = f"no answer within {self.timeout:g} s"
            except httpx.TransportError as error:
                last = f"connection failed ({type(error).__name__}: {error})"
            else:
                if response.status_code == 200:
                    return _answer(response)
                last = f"HTTP {response.status_code}: {_message(response)}"
                if response.status_code in FATAL:
                    raise RunStopped(f"{url} answered {last}; check --base-url, --model and the key.")
                if response.status_code not in RETRIED:
                    raise EndpointError(last)
                if attempt < self.retries:
                    self._wait(attempt, _retry_after(response))
                continue
            if attempt < self.retries:
                self._wait(attempt, None)
        raise EndpointError(f"{last} (after {self.retries + 1} attempts)")


def _answer(response: httpx.Response) -> Answer:
    try:
        message = response.json()["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise EndpointError(f"not a chat completion: {response.text[:200]!r}") from None
    if not isinstance(message, dict):
        raise EndpointError("not a chat completion: the message is not an object")
    calls = message.get("tool_calls") or []
    text = message.get("content") or ""
    refusal = message.get("refusal")
    if not calls:
        return Answer(text=text if isinstance(text, str) else str(text), refusal=refusal, calls=0)
    first = calls[0] if isinstance(calls, list) else None
    function = first.get("function") if isinstance(first, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        return Answer(calls=len(calls), malformed=f"no function name in {json.dumps(first)[:120]}")
    arguments = function.get("arguments")
    if isinstance(arguments, dict):  # some local servers send an object rather than its JSON text
        arguments = json.dumps(arguments)
    return Answer(
        tool=function["name"], arguments=arguments, text=str(text), refusal=refusal, calls=len(calls)
    )
