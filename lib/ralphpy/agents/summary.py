"""Owns what every non-Claude agent renderer shares: the `AgentSummary` (render's
`SessionSummary` plus token counts and error texts), the s.12-looking tool and end lines, the
bounded JSON Lines splitter the per-CLI renderers of agent_streams.py build on, and the
`PlainRenderer` of the `command` backend, which copies any CLI's output through.

Each renderer has the interface of `render.StreamRenderer` (feed(bytes) in any chunking /
close() / summary), so the loop reads cost, completion texts (docs/contract/ralph-cli.md s.20.1
promise) and errors the same way whatever the agent. Does not own Claude Code's stream-json
(render.py, also used for amp, whose `--stream-json` is Claude-compatible), reading the agent's
pipe, the log file, or interpreting the facts (usage limits, budgets: unattended/ reads the result
and the text tails; a renderer makes a failed turn's message the result. `error_texts` is not read
there: it holds failed tools' output too, which may quote any wording). Memory is bounded: one
partial line of at most `max_line_bytes` (longer lines are skipped, as render.py does) and
capped tails.
"""
from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO

from ralphpy.agents.line_feed import MAX_LINE_BYTES, LineFeed
from ralphpy.agents.claude_render import SessionSummary

_TAIL_TEXTS = 16             # texts kept for limit-message detection (as render.py)
_TAIL_TEXT_CHARS = 4096
LAST_TEXT_CHARS = 64 * 1024  # the last assistant message is kept up to this many code points
_PLAIN_TAIL_BYTES = 64 * 1024
_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


@dataclass
class AgentSummary(SessionSummary):
    """SessionSummary plus what other CLIs report instead of a cost: token counts, and the
    error messages of the stream (usage-limit texts show up there for codex/gemini/opencode)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    error_texts: list[str] = field(default_factory=list)


def field_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else _compact(value)


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def tool_line(name: Any, args: Any) -> str:
    """`\\n🔧 <name><detail>\\n`: a command shows as s.12's Bash detail, a path as Read's, anything
    else as the first 200 characters of its compact JSON (s.12's rule for other tools)."""
    detail = ""
    if isinstance(args, dict):
        command = args.get("command") or args.get("cmd")
        path = next((args[k] for k in ("file_path", "filePath", "absolute_path", "path")
                     if isinstance(args.get(k), str)), None)
        if command is not None:
            detail = "\n   $ " + field_text(command)[:120]
        elif path is not None:
            detail = " " + path
        else:
            detail = " " + _compact(args)[:200]
    elif args is not None:
        detail = " " + _compact(args)[:200]
    return f"\n\U0001F527 {field_text(name)}{detail}\n"


def done_line(status: Any, *, cost: Any = None, turns: Any = None,
              tokens: tuple[Any, Any] | None = None) -> str:
    """The end line, with only the facts the CLI reported."""
    parts = [f"\n\u2501\u2501 Done ({field_text(status) or 'null'})"]
    if cost is not None:
        parts.append(f"cost: ${_compact(cost)[:6]}")
    if turns is not None:
        parts.append(f"turns: {turns}")
    if tokens is not None and tokens != (None, None):
        parts.append(f"tokens: in {tokens[0]}, out {tokens[1]}")
    return " | ".join(parts) + " \u2501\u2501\n"


class JsonLinesRenderer(LineFeed):
    """The JSON renderers' base: each complete line (line_feed) that decodes to a JSON object
    goes to `_event`, whose text is written and flushed."""

    def __init__(self, out: BinaryIO, *, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        super().__init__(out, max_line_bytes=max_line_bytes)
        self._s = AgentSummary(events_seen={"lines": 0, "oversized": 0})
        self._tail: deque[str] = deque(maxlen=_TAIL_TEXTS)
        self._errors: deque[str] = deque(maxlen=_TAIL_TEXTS)

    @property
    def summary(self) -> AgentSummary:
        return replace(self._s, assistant_texts_tail=list(self._tail),
                       error_texts=list(self._errors), events_seen=dict(self._s.events_seen),
                       permission_denials=list(self._s.permission_denials),
                       rate_limit_events=list(self._s.rate_limit_events))

    def _line(self, line: bytes, parts: list[str]) -> None:
        self._s.events_seen["lines"] += 1
        if len(line) > self._max:
            self._s.events_seen["oversized"] += 1
            return
        try:
            event = json.loads(line.decode("utf-8", "replace"))
        except (ValueError, RecursionError):   # plain text or broken JSON: ignored, as s.12
            return
        if isinstance(event, dict):
            kind = field_text(event.get("type"))
            seen = self._s.events_seen
            if kind in seen or len(seen) < 64:    # bounded, whatever types a stream invents
                seen[kind] = seen.get(kind, 0) + 1
            parts.append(self._event(kind, event))

    # Hooks and helpers for the backends.
    def _event(self, kind: str, event: dict) -> str:
        raise NotImplementedError

    def _assistant_message(self, text: str) -> None:
        """One finished assistant message: the s.20.1 'last assistant text'."""
        self._s.last_assistant_text = text[-LAST_TEXT_CHARS:]
        if text:
            self._tail.append(text[:_TAIL_TEXT_CHARS])

    def _error(self, message: Any) -> str:
        text = field_text(message)
        self._errors.append(text[:_TAIL_TEXT_CHARS])
        return f"\n\u26a0 {text}\n"

    def _add_tokens(self, inp: Any, outp: Any) -> None:
        s = self._s
        if _number(inp) is not None:
            s.input_tokens = (s.input_tokens or 0) + inp
        if _number(outp) is not None:
            s.output_tokens = (s.output_tokens or 0) + outp

    def _add_cost(self, cost: Any) -> None:
        if _number(cost) is not None:
            # rounded: per-message costs summed in binary floats show as 0.0150 otherwise
            self._s.total_cost_usd = round((self._s.total_cost_usd or 0) + cost, 10)


class PlainRenderer:
    """Any CLI's plain output (the `command` backend): every byte is copied to `out` as it
    comes and flushed. Only the last `tail_bytes` are kept; they stand for the 'last assistant
    text' of s.20.1, so a promise printed near the end of the output is seen."""

    def __init__(self, out: BinaryIO, *, tail_bytes: int = _PLAIN_TAIL_BYTES) -> None:
        self._out = out
        self._cap = tail_bytes
        self._tail = bytearray()
        self._bytes = 0
        self._closed = False

    def feed(self, chunk: bytes) -> None:
        if self._closed:
            raise ValueError("feed() after close()")
        self._bytes += len(chunk)
        self._tail += chunk[-self._cap:]
        if len(self._tail) > self._cap:
            del self._tail[:len(self._tail) - self._cap]
        if chunk:
            self._out.write(chunk)
            self._out.flush()

    def close(self) -> None:
        self._closed = True

    @property
    def summary(self) -> AgentSummary:
        text = self._tail.decode("utf-8", "replace")
        lines = [line for line in text.splitlines() if line.strip()][-_TAIL_TEXTS:]
        return AgentSummary(last_assistant_text=text or None,
                            assistant_texts_tail=[line[:_TAIL_TEXT_CHARS] for line in lines],
                            events_seen={"bytes": self._bytes})



__all__ = ["AgentSummary", "PlainRenderer", "JsonLinesRenderer", "tool_line", "done_line",
           "field_text", "LAST_TEXT_CHARS"]
