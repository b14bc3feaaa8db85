"""A real HTTP server speaking the OpenAI /v1/chat/completions protocol, for tests. What it
answers is scripted by the test (the model's "mind"); everything between the agent and this
server — the OpenAI client, HTTP, JSON, tool-call plumbing — is the real thing."""

import json
import threading
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.local_server import LocalServer

# Given the request body, return {"tool_calls": [(name, arguments), ...]} or {"content": "..."}
# ("usage": None answers without usage; "hang": seconds holds the answer back that long, or until
# the server stops).
Script = Callable[[dict[str, Any]], dict[str, Any]]


class ChatServer(LocalServer):
    def __init__(self, script: Script) -> None:
        self.requests: list[dict[str, Any]] = []
        self.stopping = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(
                    {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                )
                answer = script(body)
                if "hang" in answer:  # a model that is slow to answer, or hung
                    server.stopping.wait(answer["hang"])
                if "raw" in answer:  # a body that is no completion, e.g. a proxy's HTML error page
                    payload = answer["raw"].encode()
                    self.send_response(answer.get("status", 200))
                    self.send_header("Content-Type", answer.get("content_type", "text/html"))
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
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

    def __exit__(self, *exc):
        self.stopping.set()
        super().__exit__(*exc)


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
    completion = {
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
    if "usage" in answer and answer["usage"] is None:  # a provider that omits usage
        del completion["usage"]
    return completion


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


# The output tool each role submits with: which role a request is for.
ROLE_OUTPUT_TOOLS = {
    "submit_plan": "planner",
    "finish_direction": "researcher",
    "submit_verdicts": "judge",
    "submit_report": "writer",
    "submit_critique": "critic",
}


def role_of(body: dict[str, Any]) -> str:
    names = {tool["function"]["name"] for tool in body.get("tools", [])}
    return next((role for tool, role in ROLE_OUTPUT_TOOLS.items() if tool in names), "unknown")


def user_text(body: dict[str, Any]) -> str:
    return next((m["content"] for m in body["messages"] if m["role"] == "user"), "")


def data_of(body: dict[str, Any]) -> Any:
    """The JSON data framed in a role's prompt (research.engine.prompts.request_prompt)."""
    text = user_text(body)
    start, end = text.find("<research_data>"), text.find("</research_data>")
    return json.loads(text[start + len("<research_data>") : end]) if start >= 0 and end > start else None


class RoleScript:
    """A model that plays every role of a research run over HTTP: the planner submits the
    request as one sub-question, the researcher is `researcher` (a Script), the judge finds that
    no document addresses a question, the writer cites every finding, the critic is satisfied.
    Pass another function for a role to change what it does."""

    def __init__(self, researcher: Script, **roles: Script) -> None:
        self.roles = {
            "planner": _plan_as_asked,
            "researcher": researcher,
            "judge": _judge_nothing,
            "writer": _write_every_finding,
            "critic": _satisfied,
            **roles,
        }
        self.calls: dict[str, int] = {}

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        role = role_of(body)
        self.calls[role] = self.calls.get(role, 0) + 1
        return self.roles[role](body)


def _plan_as_asked(body: dict[str, Any]) -> dict[str, Any]:
    text = user_text(body)
    start, end = text.find("<research_prompt>"), text.find("</research_prompt>")
    request = " ".join(text[start + len("<research_prompt>") : end].split())
    return {"tool_calls": [("submit_plan", {"sub_questions": [{"question": request, "queries": [request]}]})]}


def _judge_nothing(body: dict[str, Any]) -> dict[str, Any]:
    questions = (data_of(body) or {}).get("questions", [])
    verdicts = [{"question": q["index"], "addresses": False} for q in questions]
    return {"tool_calls": [("submit_verdicts", {"verdicts": verdicts})]}


def _write_every_finding(body: dict[str, Any]) -> dict[str, Any]:
    findings = (data_of(body) or {}).get("findings", [])
    lines = ["# Report", ""] + [f'- <cite findings="{f["id"]}">{f["claim"]}</cite>' for f in findings]
    return {"tool_calls": [("submit_report", {"markdown": "\n".join(lines)})]}


def _satisfied(body: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [("submit_critique", {"satisfied": True})]}
