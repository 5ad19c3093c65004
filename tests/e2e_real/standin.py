"""A scripted stand-in for the Anthropic Messages API on 127.0.0.1, for the real `claude` CLI.

The CLI is pointed at it with ANTHROPIC_BASE_URL. Requests that offer tools are the agent's
turns: `brain(request, n)` (n counts those turns from 0) returns what the model says, one of
Text, Tool, Fail or Stall. Requests without tools (titles, summaries, quota probes) get a short
text. Every request is kept in `requests` (path, headers, JSON body) for assertions.

A request the stand-in cannot answer (a path it does not serve: 404, or one its script failed
on) is kept in `unanswered`; with `RALPH_CANARY_STANDIN_LOG` set (canary/run.py), they are
appended there as JSON lines when the stand-in stops, so a newer CLI asking for what the
stand-in lacks is told from an adapter that broke.

Streams follow the Messages API's SSE: message_start, content_block_start/delta/stop per
block (text_delta, input_json_delta), message_delta with the stop reason, message_stop.
"""
from __future__ import annotations

import itertools
import json
import os
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

MODEL = "claude-sonnet-4-5"


@dataclass
class Text:
    text: str


@dataclass
class Tool:
    """A tool_use block (name, input), optionally after a text."""
    name: str
    input: dict
    text: str = ""


@dataclass
class Fail:
    """An HTTP error: status, JSON error type and message, extra headers, and more members of
    the error object where an API has them (the Responses API's `resets_at`)."""
    status: int
    kind: str
    message: str
    headers: dict = field(default_factory=dict)
    error: dict = field(default_factory=dict)


@dataclass
class Stall:
    """message_start, then nothing until the server stops (an idle stream)."""


def bash(command: str, text: str = "") -> Tool:
    return Tool("Bash", {"command": command, "description": "run"}, text)


class StandIn:
    def __init__(self, brain: Callable[[dict, int], Any],
                 headers: Callable[[dict], dict] | None = None):
        self.brain = brain
        self.headers = headers           # extra headers of each answer (rate-limit windows)
        self.requests: list[dict] = []
        self.unanswered: list[str] = []
        self.turns = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ids = itertools.count(1)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "StandIn":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()
        log = os.environ.get("RALPH_CANARY_STANDIN_LOG")
        if log and self.unanswered:
            test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
            with open(log, "a", encoding="utf-8") as out:
                out.writelines(json.dumps({"test": test, "request": r}) + "\n"
                               for r in self.unanswered)

    def agent_turns(self) -> list[dict]:
        return [r for r in self.requests if r["body"].get("tools")]

    # ------------------------------------------------------------------ answering
    def _answer(self, body: dict) -> Any:
        if not body.get("tools"):
            return Text("Ralph task")
        with self._lock:
            n = self.turns
            self.turns += 1
        return self.brain(body, n)

    def next_id(self) -> int:
        return next(self._ids)

    def stall(self, handler: "Handler") -> None:
        """Hold the open stream until the server stops, then drop the connection."""
        self._stop.wait()
        handler.close_connection = True

    def respond(self, handler: "Handler", path: str, body: dict) -> None:
        """Answer one POST: the Messages API. Another API's stand-in overrides this."""
        if not path.endswith("/v1/messages"):
            if path.endswith("/count_tokens"):
                return handler.send_json(200, {"input_tokens": 100})
            return handler.send_json(404, {"type": "error", "error": {
                "type": "not_found_error", "message": "not here"}})
        answer = self._answer(body)
        extra = self.headers(body) if self.headers else {}
        if isinstance(answer, Fail):
            return handler.send_json(answer.status, {"type": "error", "error": {
                "type": answer.kind, "message": answer.message}}, {**extra, **answer.headers})
        blocks = []
        if isinstance(answer, Text):
            blocks = [{"type": "text", "text": answer.text}]
        elif isinstance(answer, Tool):
            if answer.text:
                blocks.append({"type": "text", "text": answer.text})
            blocks.append({"type": "tool_use", "id": f"toolu_{self.next_id():06d}",
                           "name": answer.name, "input": answer.input})
        stop = "tool_use" if isinstance(answer, Tool) else "end_turn"
        if not body.get("stream"):
            return handler.send_json(200, _message(blocks, stop), extra)
        handler.start_stream(extra)
        handler.event("message_start", {"type": "message_start", "message": _message([], None)})
        if isinstance(answer, Stall):
            return self.stall(handler)
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            handler.event("content_block_start", {"type": "content_block_start",
                                                  "index": index, "content_block": start})
            handler.event("content_block_delta", {"type": "content_block_delta",
                                                  "index": index, "delta": delta})
            handler.event("content_block_stop", {"type": "content_block_stop", "index": index})
        handler.event("message_delta", {
            "type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 12}})
        handler.event("message_stop", {"type": "message_stop"})
        handler.end_stream()

    def _handler(self) -> type:
        return type("BoundHandler", (Handler,), {"standin": self})


class Handler(BaseHTTPRequestHandler):
    """Records every POST and hands it to its StandIn; writes JSON answers and chunked SSE."""
    protocol_version = "HTTP/1.1"
    standin: StandIn

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_json(200 if self.path.rstrip("/") == "" else 404, {})

    def unanswered(self, why: str) -> None:
        with self.standin._lock:
            self.standin.unanswered.append(f"{self.command} {self.path.split('?')[0]}: {why}")

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(size) if size else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        with self.standin._lock:
            self.standin.requests.append({"path": self.path, "headers": dict(self.headers),
                                          "body": body})
        try:
            self.standin.respond(self, self.path.split("?")[0], body)
        except Exception as err:          # the script could not answer what the CLI sent
            self.unanswered(f"the stand-in failed: {type(err).__name__}: {err}")
            raise

    def send_json(self, status: int, payload: dict, headers: dict | None = None) -> None:
        if status == 404:
            self.unanswered("not served (404)")
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("request-id", f"req_{self.standin.next_id()}")
        for key, value in (headers or {}).items():
            self.send_header(key, str(value))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self, headers: dict | None = None) -> None:
        self.send_response(200)
        for key, value in (headers or {}).items():
            self.send_header(key, str(value))
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", f"req_{self.standin.next_id()}")
        self.end_headers()

    def event(self, name: str, payload: dict) -> None:
        data = f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _message(content: list, stop: str | None) -> dict:
    return {"id": "msg_standin", "type": "message", "role": "assistant", "model": MODEL,
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 20, "output_tokens": 1, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0}}


def text_of(content: object) -> str:
    """A tool result's text: a string as it is, or the text of a list of content parts."""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def tool_results(body: dict) -> list[str]:
    """The text of every tool_result the CLI sent back in this request, oldest first."""
    return [text_of(block.get("content")) for message in body.get("messages", [])
            if isinstance(message.get("content"), list) for block in message["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"]


def first_user_text(body: dict) -> str:
    """All text the first user message carries (the prompt, with any reminders)."""
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


__all__ = ["StandIn", "Text", "Tool", "Fail", "Stall", "bash", "tool_results", "text_of",
           "first_user_text", "MODEL"]
