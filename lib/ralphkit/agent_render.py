"""Owns the rendering of the output of agent CLIs other than Claude Code (issue 8): a
pass-through `PlainRenderer` for any CLI, and renderers for the JSON Lines event streams of
`codex exec --json`, `gemini --output-format stream-json`, `pi --mode json` and
`opencode run --format json`. Each has the interface of `render.StreamRenderer` (feed/close/
summary) and fills the same `SessionSummary` fields, so the loop reads cost, completion texts
(s.20.1 promise) and errors the same way whatever the agent.

Does not own Claude Code's stream-json (render.py, s.12, also used for amp, whose
`--stream-json` is Claude-compatible), reading the agent's pipe, the log file, or interpreting
the facts (usage limits, budgets: issue 7 reads `summary.error_texts` and the text tails).

Rendering follows s.12's look where the CLI says the same thing: text as is, a tool call as
`\\n🔧 <name><detail>\\n`, an end line `\\n━━ Done (<status>) | … ━━\\n`. Memory is bounded:
one partial line of at most `max_line_bytes` (longer lines are skipped) and capped tails.
"""
from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO

from ralphkit.render import MAX_LINE_BYTES, SessionSummary

_TAIL_TEXTS = 16             # texts kept for limit-message detection (as render.py)
_TAIL_TEXT_CHARS = 4096
_LAST_TEXT_CHARS = 64 * 1024  # the last assistant message is kept up to this many code points
_PLAIN_TAIL_BYTES = 64 * 1024
_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


@dataclass
class AgentSummary(SessionSummary):
    """SessionSummary plus what other CLIs report instead of a cost: token counts, and the
    error messages of the stream (usage-limit texts show up there for codex/gemini/opencode)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    error_texts: list[str] = field(default_factory=list)


def _text(value: Any) -> str:
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
            detail = "\n   $ " + _text(command)[:120]
        elif path is not None:
            detail = " " + path
        else:
            detail = " " + _compact(args)[:200]
    elif args is not None:
        detail = " " + _compact(args)[:200]
    return f"\n\U0001F527 {_text(name)}{detail}\n"


def done_line(status: Any, *, cost: Any = None, turns: Any = None,
              tokens: tuple[Any, Any] | None = None) -> str:
    """The end line, with only the facts the CLI reported."""
    parts = [f"\n\u2501\u2501 Done ({_text(status) or 'null'})"]
    if cost is not None:
        parts.append(f"cost: ${_compact(cost)[:6]}")
    if turns is not None:
        parts.append(f"turns: {turns}")
    if tokens is not None and tokens != (None, None):
        parts.append(f"tokens: in {tokens[0]}, out {tokens[1]}")
    return " | ".join(parts) + " \u2501\u2501\n"


class _Lines:
    """Bounded line splitting shared by the JSON renderers: feed() any chunks, each complete
    line that decodes to a JSON object goes to `_event`, whose text is written and flushed."""

    def __init__(self, out: BinaryIO, *, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self._out = out
        self._max = max_line_bytes
        self._partial = bytearray()
        self._skipping = False
        self._closed = False
        self._s = AgentSummary(events_seen={"lines": 0, "oversized": 0})
        self._tail: deque[str] = deque(maxlen=_TAIL_TEXTS)
        self._errors: deque[str] = deque(maxlen=_TAIL_TEXTS)

    @property
    def summary(self) -> AgentSummary:
        return replace(self._s, assistant_texts_tail=list(self._tail),
                       error_texts=list(self._errors), events_seen=dict(self._s.events_seen),
                       permission_denials=list(self._s.permission_denials),
                       rate_limit_events=list(self._s.rate_limit_events))

    def feed(self, chunk: bytes) -> None:
        if self._closed:
            raise ValueError("feed() after close()")
        parts: list[str] = []
        lines = chunk.split(b"\n")
        for i, piece in enumerate(lines[:-1]):
            if self._skipping:
                self._skipping = False
                self._s.events_seen["lines"] += 1
                continue
            if i == 0 and self._partial:
                piece = bytes(self._partial) + piece
                self._partial.clear()
            self._line(piece, parts)
        self._keep(lines[-1])
        self._emit(parts)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        parts: list[str] = []
        if self._partial and not self._skipping:
            self._line(bytes(self._partial), parts)
        self._partial.clear()
        parts.append(self._final())
        self._emit(parts)

    def _keep(self, rest: bytes) -> None:
        if not rest or self._skipping:
            return
        if len(self._partial) + len(rest) > self._max:
            self._partial.clear()
            self._skipping = True
            self._s.events_seen["oversized"] += 1
            return
        self._partial += rest

    def _emit(self, parts: list[str]) -> None:
        text = "".join(parts)
        if text:
            self._out.write(text.encode("utf-8", "replace"))
            self._out.flush()

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
            kind = _text(event.get("type"))
            self._s.events_seen[kind] = self._s.events_seen.get(kind, 0) + 1
            parts.append(self._event(kind, event))

    # Hooks and helpers for the backends.
    def _event(self, kind: str, event: dict) -> str:
        raise NotImplementedError

    def _final(self) -> str:
        return ""

    def _assistant_message(self, text: str) -> None:
        """One finished assistant message: the s.20.1 'last assistant text'."""
        self._s.last_assistant_text = text[-_LAST_TEXT_CHARS:]
        if text:
            self._tail.append(text[:_TAIL_TEXT_CHARS])

    def _error(self, message: Any) -> str:
        text = _text(message)
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


class CodexRenderer(_Lines):
    """`codex exec --json`: thread/turn/item events. Agent messages are shown as text,
    commands, file changes, MCP calls and searches as tool lines, `turn.completed` as the end
    line with its token usage; `turn.failed` and `error` as warnings (and error_texts)."""

    def __init__(self, out: BinaryIO, **kw: Any) -> None:
        super().__init__(out, **kw)
        self._shown: set[str] = set()

    def _event(self, kind: str, event: dict) -> str:
        s = self._s
        if kind in ("item.started", "item.completed"):
            item = event.get("item")
            return self._item(item, kind == "item.completed") if isinstance(item, dict) else ""
        if kind == "turn.completed":
            usage = event.get("usage") if isinstance(event.get("usage"), dict) else {}
            self._add_tokens(usage.get("input_tokens"), usage.get("output_tokens"))
            s.num_turns = (s.num_turns or 0) + 1
            s.result_subtype, s.is_error = "success", False
            return done_line("success", tokens=(s.input_tokens, s.output_tokens))
        if kind == "turn.failed":
            error = event.get("error")
            s.num_turns = (s.num_turns or 0) + 1
            s.result_subtype, s.is_error = "error", True
            message = error.get("message") if isinstance(error, dict) else error
            return self._error(message) + done_line("error")
        if kind == "error":
            return self._error(event.get("message"))
        return ""

    def _item(self, item: dict, completed: bool) -> str:
        kind, item_id = item.get("type"), _text(item.get("id"))
        if kind == "agent_message":
            if not completed:
                return ""
            text = _text(item.get("text"))
            self._assistant_message(text)
            return text
        if kind == "error":
            return self._error(item.get("message")) if completed else ""
        if kind not in ("command_execution", "file_change", "mcp_tool_call", "web_search"):
            return ""   # reasoning and todo_list are not shown (s.12 hides thinking, TodoWrite)
        if item_id and item_id in self._shown:   # shown when it started
            self._shown.discard(item_id)
            return ""
        if not completed and item_id:
            self._shown.add(item_id)
        if kind == "command_execution":
            return tool_line("Bash", {"command": item.get("command")})
        if kind == "file_change":
            changes = item.get("changes") if isinstance(item.get("changes"), list) else []
            listed = ", ".join(f"{_text(c.get('kind'))} {_text(c.get('path'))}"
                               for c in changes if isinstance(c, dict))
            return f"\n\U0001F527 Edit {listed}\n"
        if kind == "mcp_tool_call":
            return tool_line(f"{_text(item.get('server'))}.{_text(item.get('tool'))}",
                             item.get("arguments"))
        return f"\n\U0001F527 WebSearch {_text(item.get('query'))}\n"


class GeminiRenderer(_Lines):
    """`gemini --output-format stream-json`: init/message/tool_use/tool_result/error/result.
    Assistant message chunks are shown as they come; a message ends at the next tool call."""

    def __init__(self, out: BinaryIO, **kw: Any) -> None:
        super().__init__(out, **kw)
        self._current: list[str] = []
        self._current_len = 0

    def _end_message(self) -> None:
        if self._current:
            self._assistant_message("".join(self._current))
            self._current, self._current_len = [], 0

    def _event(self, kind: str, event: dict) -> str:
        s = self._s
        if kind == "message":
            if event.get("role") != "assistant":   # the echoed prompt: never a promise
                self._end_message()
                return ""
            text = _text(event.get("content"))
            if not event.get("delta"):
                self._end_message()
            self._current.append(text)
            self._current_len += len(text)
            while self._current_len > _LAST_TEXT_CHARS and len(self._current) > 1:
                self._current_len -= len(self._current.pop(0))
            if not event.get("delta"):
                self._end_message()
            return text
        if kind == "tool_use":
            self._end_message()
            return tool_line(event.get("tool_name"), event.get("parameters"))
        if kind == "tool_result":
            error = event.get("error")
            if event.get("status") == "error" and isinstance(error, dict):
                return self._error(error.get("message"))
            return ""
        if kind == "error":
            return self._error(event.get("message"))
        if kind == "result":
            self._end_message()
            status = _text(event.get("status")) or None
            s.result_subtype, s.is_error = status, status == "error" if status else None
            stats = event.get("stats") if isinstance(event.get("stats"), dict) else {}
            self._add_tokens(stats.get("input_tokens"), stats.get("output_tokens"))
            error = event.get("error")
            warn = self._error(error.get("message")) if isinstance(error, dict) else ""
            return warn + done_line(status, tokens=(s.input_tokens, s.output_tokens))
        return ""

    def _final(self) -> str:
        self._end_message()
        return ""


class PiRenderer(_Lines):
    """`pi --mode json`: session/agent/turn/message/tool_execution events. Text deltas are
    shown live, tool executions as tool lines; `message_end` of an assistant message gives the
    authoritative text, cost (`usage.cost.total`) and tokens; `agent_end` the end line."""

    def __init__(self, out: BinaryIO, **kw: Any) -> None:
        super().__init__(out, **kw)
        self._streamed = False
        self._stop: str | None = None

    def _event(self, kind: str, event: dict) -> str:
        s = self._s
        if kind == "message_update":
            update = event.get("assistantMessageEvent")
            if isinstance(update, dict) and update.get("type") == "text_delta":
                self._streamed = True
                return _text(update.get("delta"))
            return ""
        if kind == "tool_execution_start":
            return tool_line(event.get("toolName"), event.get("args"))
        if kind == "message_end":
            message = event.get("message")
            if not isinstance(message, dict) or message.get("role") != "assistant":
                return ""
            content = message.get("content") if isinstance(message.get("content"), list) else []
            text = "".join(_text(b.get("text")) for b in content
                           if isinstance(b, dict) and b.get("type") == "text")
            self._assistant_message(text)
            usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
            cost = usage.get("cost")
            self._add_cost(cost.get("total") if isinstance(cost, dict) else None)
            self._add_tokens(usage.get("input"), usage.get("output"))
            self._stop = _text(message.get("stopReason")) or None
            shown = "" if self._streamed else text   # no deltas came: show the whole text
            self._streamed = False
            if self._stop in ("error", "aborted"):
                shown += self._error(message.get("errorMessage") or self._stop)
            return shown
        if kind == "turn_end":
            s.num_turns = (s.num_turns or 0) + 1
            return ""
        if kind == "agent_end":
            status = "success" if self._stop in (None, "stop", "toolUse") else self._stop
            s.result_subtype, s.is_error = status, status != "success"
            return done_line(status, cost=s.total_cost_usd, turns=s.num_turns,
                             tokens=(s.input_tokens, s.output_tokens))
        return ""


class OpencodeRenderer(_Lines):
    """`opencode run --format json`: step_start/text/tool_use/step_finish/error events. Text
    parts are shown, tool parts as tool lines; each step_finish adds its cost and tokens; the
    end line is written when the stream closes (opencode has no final event)."""

    def __init__(self, out: BinaryIO, **kw: Any) -> None:
        super().__init__(out, **kw)
        self._message_id: Any = None
        self._texts: list[str] = []
        self._steps = 0

    def _event(self, kind: str, event: dict) -> str:
        s = self._s
        part = event.get("part") if isinstance(event.get("part"), dict) else {}
        if kind == "text":
            if part.get("messageID") != self._message_id:
                self._message_id, self._texts = part.get("messageID"), []
            text = _text(part.get("text"))
            self._texts.append(text)
            self._assistant_message("".join(self._texts))
            return text
        if kind == "tool_use":
            state = part.get("state") if isinstance(part.get("state"), dict) else {}
            line = tool_line(part.get("tool"), state.get("input"))
            if state.get("status") == "error":
                line += self._error(state.get("error"))
            return line
        if kind == "step_finish":
            self._steps += 1
            self._add_cost(part.get("cost"))
            tokens = part.get("tokens") if isinstance(part.get("tokens"), dict) else {}
            self._add_tokens(tokens.get("input"), tokens.get("output"))
            reason = _text(part.get("reason")) or None
            s.result_subtype = "success" if reason == "stop" else reason
            s.is_error = False if reason == "stop" else s.is_error
            return ""
        if kind == "error":
            error = event.get("error")
            if isinstance(error, dict):
                data = error.get("data") if isinstance(error.get("data"), dict) else {}
                error = data.get("message") or error.get("message") or error.get("name")
            s.result_subtype, s.is_error = "error", True
            return self._error(error)
        return ""

    def _final(self) -> str:
        s = self._s
        if not self._steps and s.result_subtype is None:
            return ""
        s.num_turns = self._steps
        return done_line(s.result_subtype, cost=s.total_cost_usd, turns=self._steps,
                         tokens=(s.input_tokens, s.output_tokens))


class PlainRenderer:
    """Any CLI's plain output (issue 8 `command` backend): every byte is copied to `out` as it
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


__all__ = ["AgentSummary", "PlainRenderer", "CodexRenderer", "GeminiRenderer", "PiRenderer",
           "OpencodeRenderer"]
