"""Owns what the live view (`ralph status --watch`) reads beyond the run's status: elapsed times,
the agent's last line (the end of the session log; a stream-json event becomes its text, its
tool or its result) and the backlog's queue. Read-only; knows nothing of the screen."""
from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ralphpy.durations import format_duration
from ralphpy.report import collect, events

TAIL_BYTES = 65536
EMPTY = {"runElapsed": None, "sessionElapsed": None, "lastLine": None, "queue": None,
         "activeTasks": []}


def _from_event(line: str) -> str:
    """A stream-json line as a person would read it; anything else as it is."""
    try:
        event = json.loads(line)
    except ValueError:
        return line
    if not isinstance(event, dict):
        return line
    kind = event.get("type")
    if kind == "assistant":
        content = (event.get("message") or {}).get("content") or []
        for block in reversed(content if isinstance(content, list) else []):
            if isinstance(block, dict) and block.get("type") == "text" and block.get("text"):
                return str(block["text"]).strip().splitlines()[-1]
            if isinstance(block, dict) and block.get("type") == "tool_use":
                return f"tool: {block.get('name')}"
    if kind == "result":
        return f"result: {event.get('subtype') or '-'}"
    return f"({kind or 'event'})"


def last_line(log: Path) -> str | None:
    """The agent's last output line: the end of its session log."""
    try:
        with open(log, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - TAIL_BYTES))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return _from_event(lines[-1]) if lines else None


def _since(stamp: Any) -> str | None:
    moment = events.epoch(stamp)
    return None if moment is None else format_duration(max(0.0, time.time() - moment))


def live(status: dict[str, Any], ralph_dir: Path) -> dict[str, Any]:
    """What --watch adds to `ralph status`'s dict: elapsed times, last line, queue."""
    if not status.get("runId"):
        return dict(EMPTY)
    active = status.get("active") or {}
    rows = collect.backlog_rows(Path(ralph_dir).parent, os.environ)
    queue = Counter("held" if r.get("held") is not None else str(r.get("status"))
                    for r in rows or [] if not r.get("deleted_at"))
    log = active.get("log")
    return {"runElapsed": _since(status.get("startedAt")) if not status.get("endedAt") else None,
            "sessionElapsed": _since(active.get("startedAt")) if active else None,
            "lastLine": last_line(Path(ralph_dir).parent / str(log)) if log else None,
            "queue": dict(queue) if rows is not None else None,
            "activeTasks": [str(r.get("id")) for r in rows or [] if r.get("status") == "active"]}


__all__ = ["live", "last_line", "EMPTY"]
