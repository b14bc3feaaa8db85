"""A real HTTP server speaking the OpenAI /v1/chat/completions protocol, for tests. What it
answers is scripted by the test (the model's "mind"); everything between the agent and this
server — the OpenAI client, HTTP, JSON, tool-call plumbing — is the real thing."""

import json
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.local_server import LocalServer

# Given the request body, return {"tool_calls": [(name, arguments), ...]} or {"content": "..."}.
Script = Callable[[dict[str, Any]], dict[str, Any]]


class ChatServer(LocalServer):
    def __init__(self, script: Script) -> None:
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(
                    {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                )
                answer = script(body)
                if "status" in answer:  # a provider failure: 429, 5xx, 401 ...
                    payload = json.dumps(
                        {"error": {"message": "scripted failure", "type": "server_error"}}
                    ).encode()
                    self.send_response(answer["status"])
                    for name, value in answer.get("headers", {}).items():
                        self.send_header(name, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                payload = json.dumps(_completion(body, answer)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        super().__init__(Handler)


def _completion(body: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.get("content")}
    if answer.get("tool_calls"):
        message["tool_calls"] = [
            {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for name, arguments in answer["tool_calls"]
        ]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "scripted"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if answer.get("tool_calls") else "stop",
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


def tool_results(body: dict[str, Any]) -> list[Any]:
    """The tool results the agent sent back so far, decoded, oldest first."""
    results = []
    for message in body["messages"]:
        if message.get("role") == "tool":
            content = message.get("content")
            try:
                results.append(json.loads(content))
            except (TypeError, ValueError):
                results.append(content)
    return results
