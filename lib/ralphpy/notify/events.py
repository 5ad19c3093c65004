"""Owns which events of events.jsonl become notifications and what they say: run_end (with a
category: finished, budget, breaker, scope change, interrupted, error ...), usage_limit_wait
(start), usage_limit_wait_end (derived: the first event of the run after a wait), task_held and
scope_changed, and the questions agents ask a person (question: asked; question_default and
question_timeout: its deadline passed, with or without a default; question_answered). A
notification is one JSON object; its `title` is one line for a desktop or a
chat message. Knows nothing of delivery."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ralphpy.durations import format_duration
from ralphpy.report.model import STOP_KINDS
from ralphpy.report.events import ends_limit_wait

KINDS = ("run_end", "usage_limit_wait", "usage_limit_wait_end", "task_held", "scope_changed",
         "question", "question_answered", "question_default", "question_timeout")
_QUESTIONS = KINDS[5:]


def _title(name: str, record: dict[str, Any], category: str | None) -> str:
    if name == "run_end":
        code, reason = record.get("exit_code"), record.get("reason") or "-"
        head = {"finished": "run ended", "interrupted": "run interrupted"}.get(
            category or "", f"run stopped ({category})")
        return f"ralph: {head}: {reason} (exit {code})"
    if name == "usage_limit_wait":
        until = record.get("resume_at")
        return "ralph: waiting for the usage limit" + (f" until {until}" if until else "")
    if name == "usage_limit_wait_end":
        return f"ralph: usage-limit wait over after {format_duration(record['waited_s'])}"
    if name in _QUESTIONS:
        return f"ralph: {record.get('message') or name}"
    if name == "task_held":
        return f"ralph: task {record.get('task')} held: {record.get('message') or '-'}"
    changes = record.get("changes") or []
    return "ralph: the frozen scope changed" + (f": {changes[-1]}" if changes else "")


class Tracker:
    """Turns the events of one run into notifications; remembers an open limit wait."""

    def __init__(self, ralph_dir: Path, run_id: str):
        self.project, self.run_id = str(Path(ralph_dir).absolute().parent), run_id
        self.wait_started: float | None = None

    def _make(self, name: str, record: dict[str, Any], **fields: Any) -> dict[str, Any]:
        category = fields.get("category")
        payload = {"event": name, "runId": self.run_id, "ts": record.get("ts"),
                   "project": self.project, **fields}
        payload["title"] = _title(name, {**record, **fields}, category)
        payload["record"] = record
        return payload

    def notifications(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        name, kind = record.get("event"), record.get("kind")
        found = []
        if self.wait_started is not None and ends_limit_wait(record):
            waited = max(0.0, time.monotonic() - self.wait_started)
            self.wait_started = None
            found.append(self._make("usage_limit_wait_end", record, waited_s=round(waited, 3),
                                    next=name))
        if name == "run_end":
            code = record.get("exit_code")
            found.append(self._make("run_end", record, category=STOP_KINDS.get(code, "error"),
                                    exitCode=code, reason=record.get("reason")))
        elif name == "scope_changed":
            found.append(self._make("scope_changed", record))
        elif name == "log" and kind == "usage_limit_wait":
            self.wait_started = time.monotonic()
            found.append(self._make("usage_limit_wait", record,
                                    resumeAt=record.get("resume_at")))
        elif name == "log" and kind in _QUESTIONS:     # a reply: `ralph answer`, answerWith
            found.append(self._make(kind, record, task=record.get("task"),
                                    question=record.get("question"),
                                    **({"answer": record["answer"]} if "answer" in record else
                                       {"answerWith": record.get("answer_with")})))
        elif name == "log" and kind == "task_held":
            found.append(self._make("task_held", record, task=record.get("task"),
                                    reason=record.get("message")))
        return found


__all__ = ["Tracker", "KINDS"]
