"""Owns the rendering of Claude Code's `--output-format=stream-json` into the human text of
docs/contract/ralph-cli.md s.12 (byte-exact), and the per-session facts read from the same stream:
result subtype, cost, turns, the last texts (s.20.1 promise), permission denials and rate-limit
events. Beyond s.12: a `system` event of subtype `api_retry` (the CLI retrying a failed API call) is
shown as one line and counted, and one that failed authentication marks the session as one to
stop at once (`StreamRenderer.abort`): waiting cannot fix a bad key. The `system/init` event's
`claude_code_version` is kept as the session's `cli_version` (not shown).

Does not own reading the agent's pipe, the session log file (the caller copies every byte there,
s.20.3) or interpreting the facts: usage-limit detection, budgets and exit classification belong
to other modules; they read `StreamRenderer.summary`.

Memory stays bounded whatever the stream size: only a partial line of at most
MAX_LINE_BYTES is kept. A longer line is skipped (not rendered, not summarised) and rendering
resumes after its newline. Speed: only lines that can be `assistant`, `result` or
`rate_limit_event` events are decoded; the rest (big `user` tool results) are skipped after a
few byte searches.
"""
from __future__ import annotations

import json
import re
import sys
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO

from ralphpy.agents.line_feed import MAX_LINE_BYTES, LineFeed

_TAIL_TEXTS = 16                   # assistant text blocks kept for limit-message detection
_TAIL_TEXT_CHARS = 4096            # ... each cut to its first code points
_RATE_LIMIT_KEEP = 64              # most recent rate_limit_event dicts kept
_RATE_LIMIT_LINE_MAX = 64 * 1024   # a bigger rate_limit_event line is counted, not kept

# Only lines that can be `assistant`, `result` or `rate_limit_event` events are decoded
# (big `user` tool results must stay cheap). Fast path: Claude Code writes `type` as
# the first member, so a line starting `{"type":"<other>"` is skipped after one anchored match;
# a repeated `type` key later in the object is not looked for (RFC 8259 leaves duplicate names
# undefined). Other lines: decoded when a `"type"` key is followed by one of the three values,
# or when they escape an ASCII letter 0x50-0x7f (`"\u0074ype"`). Necessary conditions only:
# the full parse decides.
_FIRST_TYPE_RE = re.compile(rb'[ \t\r]*\{[ \t\r]*"type"[ \t\r]*:[ \t\r]*"([^"\\]*)"')
_WANTED = (b"assistant", b"result", b"rate_limit_event")
_AFTER_TYPE_RE = re.compile(rb'[ \t\r]*:[ \t\r]*"(?:assistant|result|rate_limit_event|system)"')
_RETRY_MARK = b'"api_retry"'       # a `system` line is decoded only when it may be a retry
_INIT_MARK = b'"init"'             # ... or the session's init (once per session)
_ESCAPED_LETTERS = (b"\\u005", b"\\u006", b"\\u007")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def _parse_float(text: str) -> float | int:
    # s.12: a JSON number is shown with the fewest digits and no decimal point when it has no
    # fractional part (2.0 -> 2), like jq; 1e400 overflows to the largest double, as in jq.
    value = float(text)
    if value in (float("inf"), float("-inf")):
        return sys.float_info.max if value > 0 else -sys.float_info.max
    if value.is_integer() and abs(value) < 1e17:
        return int(value)
    return value


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")   # NaN, Infinity: the line is not JSON


_DECODER = json.JSONDecoder(parse_float=_parse_float, parse_constant=_reject_constant)
_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


def _field(value: Any) -> str:
    """A table field (s.12): missing or null -> '', string as is, anything else its JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else _compact(value)


def _result_field(value: Any) -> str:
    """A result-line field (s.12): missing or null -> 'null', string as is, else its JSON."""
    if value is None:
        return "null"
    return value if isinstance(value, str) else _compact(value)


def _tool_detail(name: Any, block: dict) -> str:
    """`<detail>` of a tool_use block by tool name (s.12 table)."""
    inp = block.get("input")
    get = inp.get if isinstance(inp, dict) else {}.get

    def f(key: str) -> str:
        return _field(get(key))

    if name == "Read":
        return " " + f("file_path")
    if name == "Write":
        return f" {f('file_path')}\n{f('content')[:500]}\n"
    if name == "Edit":
        old = f("old_string")[:200].replace("\n", "\n   - ")
        new = f("new_string")[:200].replace("\n", "\n   + ")
        return f" {f('file_path')}\n   - {old}\n   + {new}\n"
    if name == "Bash":
        return "\n   $ " + f("command")[:120]
    if name == "Grep" or name == "Glob":
        return f" {f('pattern')} {f('path')}"
    if name == "Task":
        return f" [{f('subagent_type')}] {f('description')}"
    if name == "TaskCreate":
        return " " + f("subject")
    if name == "TaskUpdate":
        return f" #{f('taskId')} \u2192 {f('status')}"
    if name == "TodoWrite":
        return ""
    if name == "Skill":
        return " /" + f("skill")
    return " " + _compact(inp)[:200]   # a missing input is null


def _may_be_wanted(line: bytes) -> bool:
    first = _FIRST_TYPE_RE.match(line)
    if first:
        kind = first.group(1)
        return kind in _WANTED or (kind == b"system" and (_RETRY_MARK in line
                                                          or _INIT_MARK in line))
    find = line.find
    pos = find(b'"type"')
    while pos >= 0:
        pos += 6
        if _AFTER_TYPE_RE.match(line, pos):
            return True
        pos = find(b'"type"', pos)
    esc = _ESCAPED_LETTERS
    return esc[0] in line or esc[1] in line or esc[2] in line


def _encode(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:   # a lone surrogate from a `\ud800` escape: show U+FFFD, as jq
        return _SURROGATE_RE.sub("\ufffd", text).encode("utf-8")


@dataclass
class SessionSummary:
    """Facts of one session's stream. Result fields come from the last `result` event (None
    when absent or of the wrong JSON type); texts from the last `assistant` event."""

    result_subtype: str | None = None
    is_error: bool | None = None
    total_cost_usd: float | None = None
    num_turns: int | None = None
    result_text: str | None = None
    last_assistant_text: str | None = None
    permission_denials: list = field(default_factory=list)
    rate_limit_events: list[dict] = field(default_factory=list)
    assistant_texts_tail: list[str] = field(default_factory=list)
    events_seen: dict[str, int] = field(default_factory=dict)
    api_retries: int = 0               # `system`/`api_retry` events
    auth_error: str | None = None      # the first api_retry that failed authentication, shown
    cli_version: str | None = None     # the release of the agent CLI, where its stream names it


def _retry_field(value: Any) -> str:
    return _field(value) if value is not None else "?"


def api_retry_line(event: dict) -> str:
    """One line for an `api_retry` event: attempt, HTTP status, error, the wait before the next
    attempt (Claude Code 2.1: attempt, max_retries, error_status, error, retry_delay_ms)."""
    attempt, most = event.get("attempt"), event.get("max_retries")
    status, error, delay = event.get("error_status"), event.get("error"), event.get("retry_delay_ms")
    what = " ".join(_field(v) for v in (status, error) if v not in (None, "")) or "error"
    wait = (f"{delay / 1000:.1f}s" if isinstance(delay, (int, float)) and not isinstance(delay, bool)
            else "?")
    return (f"\nAPI retry {_retry_field(attempt)}/{_retry_field(most)}: {what}; "
            f"next attempt in {wait}\n")


def is_auth_retry(event: dict) -> bool:
    """An api_retry that failed authentication: 401, or the CLI's `authentication_failed`."""
    return event.get("error_status") == 401 or event.get("error") in (
        "authentication_failed", "authentication_error")


class StreamRenderer(LineFeed):
    """Feed it the agent's stdout in chunks of any size; it writes the s.12 rendering of each
    line to `out` and flushes once per chunk that completed a line with output. A line longer
    than `max_line_bytes` is not rendered. Errors of `out.write` propagate from feed()/close()
    after the state is updated, so a caller may catch them and keep feeding."""

    def __init__(self, out: BinaryIO, *, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        super().__init__(out, max_line_bytes=max_line_bytes)
        self._s = SessionSummary(events_seen={
            "lines": 0, "assistant": 0, "result": 0, "rate_limit_event": 0, "oversized": 0})
        self._tail: deque[str] = deque(maxlen=_TAIL_TEXTS)
        self._limits: deque[dict] = deque(maxlen=_RATE_LIMIT_KEEP)

    @property
    def abort(self) -> str | None:
        """Why the session should be stopped now (the CLI is retrying a failed login), or None."""
        return self._s.auth_error

    @property
    def summary(self) -> SessionSummary:
        """A snapshot of what the stream said so far."""
        return replace(self._s, permission_denials=list(self._s.permission_denials),
                       rate_limit_events=list(self._limits),
                       assistant_texts_tail=list(self._tail),
                       events_seen=dict(self._s.events_seen))

    def _encode(self, text: str) -> bytes:
        return _encode(text)

    def _line(self, line: bytes, parts: list[str]) -> None:
        seen = self._s.events_seen
        seen["lines"] += 1
        if len(line) > self._max:
            seen["oversized"] += 1
            return
        if not _may_be_wanted(line):
            return
        try:   # invalid UTF-8 shows as U+FFFD, as jq does (s.12: it never stops rendering)
            event = _DECODER.decode(line.decode("utf-8", "replace"))
        except (ValueError, RecursionError):   # not JSON, or nested too deep to parse
            return
        if not isinstance(event, dict):
            return
        kind = event.get("type")
        if kind == "assistant":
            seen["assistant"] += 1
            parts.append(self._assistant(event))
        elif kind == "result":
            seen["result"] += 1
            parts.append(self._result(event))
        elif kind == "rate_limit_event":
            seen["rate_limit_event"] += 1
            if len(line) <= _RATE_LIMIT_LINE_MAX:
                self._limits.append(event)
        elif kind == "system" and event.get("subtype") == "api_retry":
            self._s.api_retries += 1
            shown = api_retry_line(event)
            if self._s.auth_error is None and is_auth_retry(event):
                self._s.auth_error = shown.strip()
            parts.append(shown)
        elif kind == "system" and event.get("subtype") == "init":
            version = event.get("claude_code_version")
            self._s.cli_version = version if isinstance(version, str) and version else None

    def _assistant(self, event: dict) -> str:
        message = event.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        texts: list[str] = []
        parts: list[str] = []
        if isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if kind == "text":
                    text = _field(block.get("text"))
                    texts.append(text)
                    parts.append(text)
                elif kind == "tool_use":
                    name = block.get("name")
                    parts.append(f"\n\U0001F527 {_field(name)}{_tool_detail(name, block)}\n")
        self._s.last_assistant_text = "".join(texts)
        self._tail.extend(text[:_TAIL_TEXT_CHARS] for text in texts)
        return "".join(parts)

    def _result(self, event: dict) -> str:
        s = self._s
        subtype, cost = event.get("subtype"), event.get("total_cost_usd")
        turns, text = event.get("num_turns"), event.get("result")
        is_error, denials = event.get("is_error"), event.get("permission_denials")
        s.result_subtype = subtype if isinstance(subtype, str) else None
        s.is_error = is_error if isinstance(is_error, bool) else None
        s.total_cost_usd = (cost if isinstance(cost, (int, float)) and not isinstance(cost, bool)
                            else None)
        s.num_turns = (turns if isinstance(turns, int) and not isinstance(turns, bool)
                       else None)
        s.result_text = text if isinstance(text, str) else None
        s.permission_denials = denials if isinstance(denials, list) else []
        return (f"\n\u2501\u2501 Done ({_result_field(subtype)}) | "
                f"cost: ${_result_field(cost)[:6]} | turns: {_result_field(turns)} "
                f"\u2501\u2501\n")


def promise_received(summary: SessionSummary, promise_text: str) -> bool:
    """s.20.1: `<promise>TEXT</promise>`, literal and case-sensitive, in the last assistant
    event's text blocks or the last result event's `result` string; nowhere else."""
    needle = f"<promise>{promise_text}</promise>"
    return any(needle in text for text in (summary.last_assistant_text, summary.result_text)
               if text)


__all__ = ["StreamRenderer", "SessionSummary", "promise_received", "api_retry_line",
           "is_auth_retry", "MAX_LINE_BYTES"]
