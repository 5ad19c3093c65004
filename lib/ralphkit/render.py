"""TEMP stand-in for the render helper's module (feat/render), with the agreed interface:
StreamRenderer(out).feed/close/summary and promise_received. Owns turning stream-json into
the readable rendering of ralph-cli.md s.12. Dropped when feat/render is merged."""
from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import BinaryIO


@dataclass
class SessionSummary:
    result_subtype: str | None = None
    is_error: bool | None = None
    total_cost_usd: float | None = None
    num_turns: int | None = None
    result_text: str | None = None
    last_assistant_text: str | None = None
    permission_denials: list = field(default_factory=list)
    rate_limit_events: list = field(default_factory=list)
    assistant_texts_tail: deque = field(default_factory=lambda: deque(maxlen=5))


def _s(value) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _tool(block: dict) -> str:
    name, inp = block.get("name"), block.get("input")
    inp_d = inp if isinstance(inp, dict) else {}
    g = lambda k: _s(inp_d.get(k))  # noqa: E731
    if name == "Read":
        d = f" {g('file_path')}"
    elif name == "Write":
        d = f" {g('file_path')}\n{g('content')[:500]}\n"
    elif name == "Edit":
        d = (f" {g('file_path')}\n   - {g('old_string')[:200].replace(chr(10), chr(10) + '   - ')}"
             f"\n   + {g('new_string')[:200].replace(chr(10), chr(10) + '   + ')}\n")
    elif name == "Bash":
        d = f"\n   $ {g('command')[:120]}"
    elif name in ("Grep", "Glob"):
        d = f" {g('pattern')} {g('path')}"
    elif name == "Task":
        d = f" [{g('subagent_type')}] {g('description')}"
    elif name == "TaskCreate":
        d = f" {g('subject')}"
    elif name == "TaskUpdate":
        d = f" #{g('taskId')} \u2192 {g('status')}"
    elif name == "TodoWrite":
        d = ""
    elif name == "Skill":
        d = f" /{g('skill')}"
    else:
        d = " " + json.dumps(inp, ensure_ascii=False, separators=(",", ":"))[:200]
    return f"\n\U0001f527 {_s(name)}{d}\n"


class StreamRenderer:
    def __init__(self, out: BinaryIO):
        self.out = out
        self.summary = SessionSummary()
        self._buf = bytearray()

    def feed(self, chunk: bytes) -> None:
        self._buf += chunk
        while True:
            i = self._buf.find(b"\n")
            if i < 0:
                return
            line = bytes(self._buf[:i])
            del self._buf[:i + 1]
            self._line(line)

    def close(self) -> None:
        if self._buf:
            line, self._buf = bytes(self._buf), bytearray()
            self._line(line)

    def _line(self, line: bytes) -> None:
        try:
            ev = json.loads(line.decode("utf-8", "surrogateescape"))
        except ValueError:
            return
        if not isinstance(ev, dict):
            return
        text = ""
        if ev.get("type") == "assistant":
            content = (ev.get("message") or {}).get("content") if isinstance(ev.get("message"), dict) else None
            if isinstance(content, list):
                texts = []
                for b in content:
                    if isinstance(b, dict) and b.get("type") == "text":
                        text += _s(b.get("text"))
                        texts.append(_s(b.get("text")))
                    elif isinstance(b, dict) and b.get("type") == "tool_use":
                        text += _tool(b)
                self.summary.last_assistant_text = "".join(texts)
        elif ev.get("type") == "result":
            s = self.summary
            s.result_subtype, s.is_error = ev.get("subtype"), ev.get("is_error")
            s.total_cost_usd, s.num_turns = ev.get("total_cost_usd"), ev.get("num_turns")
            s.result_text = ev.get("result") if isinstance(ev.get("result"), str) else None
            cost = json.dumps(ev.get("total_cost_usd"))[:6]
            text = (f"\n\u2501\u2501 Done ({_s(ev.get('subtype')) if 'subtype' in ev else 'null'}) | cost: ${cost}"
                    f" | turns: {json.dumps(ev.get('num_turns'))} \u2501\u2501\n")
        if text:
            self.out.write(text.encode("utf-8", "surrogateescape"))
            self.out.flush()


def promise_received(summary: SessionSummary, promise_text: str) -> bool:
    tag = f"<promise>{promise_text}</promise>"
    return any(tag in (t or "") for t in (summary.last_assistant_text, summary.result_text))


__all__ = ["StreamRenderer", "SessionSummary", "promise_received"]
