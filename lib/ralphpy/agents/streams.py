"""Owns the renderers of the JSON Lines event streams of `codex exec --json`,
`gemini --output-format stream-json`, `pi --mode json` and `opencode run --format json`
(event shapes as each CLI documents them). Each maps its events
to docs/contract/ralph-cli.md s.12's look (text as is, tool calls as tool lines, an end line) and
fills the shared `AgentSummary`: last assistant message, cost or tokens, turns, result status, error
texts.

Does not own line splitting, memory bounds or the summary type (summary.py), nor
Claude Code's or amp's stream-json (render.py).
"""
from __future__ import annotations

from typing import Any, BinaryIO

from ralphpy.agents.summary import (LAST_TEXT_CHARS, JsonLinesRenderer, done_line, field_text,
                                   tool_line)


class CodexRenderer(JsonLinesRenderer):
    """`codex exec --json`: thread/turn/item events. Agent messages are shown as text,
    commands, file changes, MCP calls and searches as tool lines, `turn.completed` as the end
    line with its token usage; `turn.failed` and `error` as warnings (and error_texts).
    codex prints a failure twice, as an `error` event and then as `turn.failed`: it is shown
    once, and is the session's result text, where a usage-limit message is looked for."""

    def __init__(self, out: BinaryIO, **kw: Any) -> None:
        super().__init__(out, **kw)
        self._shown: set[str] = set()
        self._last_error: Any = None

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
            s.result_text = field_text(message) or None
            shown = "" if message == self._last_error else self._error(message)
            return shown + done_line("error")
        if kind == "error":
            self._last_error = event.get("message")
            return self._error(self._last_error)
        return ""

    def _item(self, item: dict, completed: bool) -> str:
        kind, item_id = item.get("type"), field_text(item.get("id"))
        if kind == "agent_message":
            if not completed:
                return ""
            text = field_text(item.get("text"))
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
            listed = ", ".join(f"{field_text(c.get('kind'))} {field_text(c.get('path'))}"
                               for c in changes if isinstance(c, dict))
            return f"\n\U0001F527 Edit {listed}\n"
        if kind == "mcp_tool_call":
            return tool_line(f"{field_text(item.get('server'))}.{field_text(item.get('tool'))}",
                             item.get("arguments"))
        return f"\n\U0001F527 WebSearch {field_text(item.get('query'))}\n"


class GeminiRenderer(JsonLinesRenderer):
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
            text = field_text(event.get("content"))
            if not event.get("delta"):
                self._end_message()
            self._current.append(text)
            self._current_len += len(text)
            while self._current_len > LAST_TEXT_CHARS and len(self._current) > 1:
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
            status = field_text(event.get("status")) or None
            s.result_subtype, s.is_error = status, status == "error" if status else None
            stats = event.get("stats") if isinstance(event.get("stats"), dict) else {}
            self._add_tokens(stats.get("input_tokens"), stats.get("output_tokens"))
            error = event.get("error")
            warn = ""
            if isinstance(error, dict):     # the session's result: a refused key, a limit
                warn = self._error(error.get("message"))
                s.result_text = field_text(error.get("message")) or s.result_text
            return warn + done_line(status, tokens=(s.input_tokens, s.output_tokens))
        return ""

    def _final(self) -> str:
        self._end_message()
        return ""


class PiRenderer(JsonLinesRenderer):
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
                return field_text(update.get("delta"))
            return ""
        if kind == "tool_execution_start":
            return tool_line(event.get("toolName"), event.get("args"))
        if kind == "message_end":
            message = event.get("message")
            if not isinstance(message, dict) or message.get("role") != "assistant":
                return ""
            content = message.get("content") if isinstance(message.get("content"), list) else []
            text = "".join(field_text(b.get("text")) for b in content
                           if isinstance(b, dict) and b.get("type") == "text")
            self._assistant_message(text)
            usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
            cost = usage.get("cost")
            self._add_cost(cost.get("total") if isinstance(cost, dict) else None)
            self._add_tokens(usage.get("input"), usage.get("output"))
            self._stop = field_text(message.get("stopReason")) or None
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


class OpencodeRenderer(JsonLinesRenderer):
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
            text = field_text(part.get("text"))
            self._texts.append(text)
            while len(self._texts) > 1 and sum(map(len, self._texts)) > LAST_TEXT_CHARS:
                self._texts.pop(0)               # bounded: only the tail can hold a promise
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
            reason = field_text(part.get("reason")) or None
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


__all__ = ["CodexRenderer", "GeminiRenderer", "PiRenderer", "OpencodeRenderer"]
