"""The README's function-calling loop runs as printed: `dockyard tools sqlite --format openai` for the
definitions, the official MCP client session to execute the calls, against a loopback fake of OpenAI's
chat completions API (what the openai client sends and reads: bearer key, tools, tool_calls, tool messages)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from tests.harness import REPO_ROOT, VENV_BIN

pytestmark = pytest.mark.slow


def readme_loop() -> str:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- function-calling-loop:.*?-->\n```python\n(.*?)```", text, re.S)
    assert found, "the README's function-calling loop is missing"
    return found.group(1)


class FakeChatCompletions(BaseHTTPRequestHandler):
    """First request: asks for list_tables as a strict-mode model would (every argument, null for the
    ones left out). Second: answers with what the tool returned."""

    requests: ClassVar[list[dict]] = []

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        if self.path != "/v1/chat/completions" or self.headers.get("Authorization") != "Bearer test-key":
            self._reply(
                401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
            )
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append(body)
        tool_messages = [m for m in body["messages"] if m.get("role") == "tool"]
        if not tool_messages:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "list_tables", "arguments": json.dumps({"database": None})},
                    }
                ],
            }
            finish = "tool_calls"
        else:
            tables = json.loads(tool_messages[-1]["content"])["tables"]
            biggest = max(tables, key=lambda table: table["row_count"])["name"]
            message, finish = {"role": "assistant", "content": f"The biggest table is {biggest}."}, "stop"
        self._reply(
            200,
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 1_800_000_000,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )

    def _reply(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_the_readme_loop_lists_calls_and_answers(tmp_path):
    FakeChatCompletions.requests = []
    fake = ThreadingHTTPServer(("127.0.0.1", 0), FakeChatCompletions)
    threading.Thread(target=fake.serve_forever, daemon=True).start()
    try:
        done = subprocess.run(
            [sys.executable, "-c", readme_loop()],
            capture_output=True,
            text=True,
            timeout=180,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            env={
                "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
                "HOME": str(tmp_path),
                "XDG_DATA_HOME": str(tmp_path / "data"),
                "XDG_CACHE_HOME": str(tmp_path / "cache"),
                "FASTMCP_CHECK_FOR_UPDATES": "off",
                "OPENAI_BASE_URL": f"http://127.0.0.1:{fake.server_address[1]}/v1",
                "OPENAI_API_KEY": "test-key",
            },
        )
    finally:
        fake.shutdown()
    assert done.returncode == 0, done.stderr[-3000:]
    first, second = FakeChatCompletions.requests
    assert {tool["function"]["name"] for tool in first["tools"]} >= {"list_tables", "query"}
    assert all(tool["function"]["strict"] for tool in first["tools"])
    assert second["messages"][-1]["role"] == "tool" and second["messages"][-1]["tool_call_id"] == "call_1"
    assert re.fullmatch(r"The biggest table is \w+\.\n", done.stdout)
