"""Owns the progress record of a run: .ralph/runs/<runId>/events.jsonl (machine: one JSON line per
event, append-only, one write per line) and .ralph/progress.md (human: counters, the active
session, the latest outcomes; rewritten atomically after every session). Knows nothing of the
loop or of `ralph status` (status.py reads what this module writes); never prints."""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from ralphpy.atomic_file import append_line, write_atomic
from ralphpy.runs.state import RunState

LATEST_OUTCOMES = 10
# Called with (ralph_dir, run_id, record) after each appended event: notifications listen here.
Listener = Callable[[Path, str, dict], None]
_LISTENERS: list[Listener] = []


def events_path(ralph_dir: Path, run_id: str) -> Path:
    return Path(ralph_dir) / "runs" / run_id / "events.jsonl"


def progress_path(ralph_dir: Path) -> Path:
    return Path(ralph_dir) / "progress.md"


def _ts() -> str:
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def append_event(ralph_dir: Path, run_id: str, event: str, **fields: Any) -> dict[str, Any]:
    """Append {"ts", "event", **fields} as one line and return it. EnvironmentFailure when the
    disk is full or read-only. Values that are not JSON are written as their str()."""
    record = {"ts": _ts(), "event": event, **fields}
    line = json.dumps(record, ensure_ascii=False, default=str, separators=(",", ":"))
    append_line(events_path(ralph_dir, run_id), line)
    for listener in tuple(_LISTENERS):
        listener(ralph_dir, run_id, record)
    return record


def add_listener(listener: Listener) -> None:
    _LISTENERS.append(listener)


def remove_listener(listener: Listener) -> None:
    if listener in _LISTENERS:
        _LISTENERS.remove(listener)


def read_events(ralph_dir: Path, run_id: str) -> list[dict[str, Any]]:
    """Every event that parses; a torn last line (crash mid-write) or garbage is skipped."""
    try:
        raw = events_path(ralph_dir, run_id).read_bytes()
    except OSError:
        return []
    events = []
    for line in raw.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("event"), str):
            events.append(record)
    return events


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _outcomes(state: RunState) -> list[dict[str, Any]]:
    merged = [{**e, "outcome": e.get("outcome", "completed")} for e in state.completed]
    merged += [{**e, "outcome": e.get("outcome", "failed")} for e in state.failed]
    # `at` has whole seconds: within one, the later session (n), then the later record
    order = {id(e): i for i, e in enumerate(merged)}
    merged.sort(key=lambda e: (str(e.get("at", "")), e.get("n") if isinstance(e.get("n"), int)
                               else 0, order[id(e)]), reverse=True)
    return merged[:LATEST_OUTCOMES]


def keep_outcome(state: RunState, n: Any, kind: str, detail: str, counts_as_failure: bool) -> None:
    """How session n ended (unattended.outcome's class), newest first, for progress.md's
    "How the latest sessions ended" (both loops)."""
    record = {"n": n, "class": kind, "detail": detail, "counts_as_failure": counts_as_failure}
    state.extra["outcomes"] = ([record] + state.extra.get("outcomes", []))[:LATEST_OUTCOMES]


def render_progress(state: RunState) -> str:
    limit = f"{state.iteration} of {state.max_iterations}" if state.max_iterations else (
        f"{state.iteration} (no limit)")
    status = "running" if state.ended_at is None else (
        f"ended {state.ended_at}: {state.exit_reason} (exit {state.exit_code})")
    lines = [
        f"# ralph run {state.run_id}", "",
        f"- Mode: {state.mode}",
        f"- Status: {status}",
        f"- Started: {state.started_at}",
        f"- Updated: {state.updated_at or state.started_at}",
        f"- Iteration: {limit}",
        f"- Sessions started: {state.sessions_started}",
        f"- Completed: {len(state.tasks_done())}",
        f"- Failed: {len(state.failed)}",
    ]
    if state.resume_at:
        lines.append(f"- Waiting until: {state.resume_at}")
    lines += ["", "## Active session", ""]
    shown = (state.active.get("sessions") or [state.active]) if state.active else []
    for x in shown:                                       # --parallel: each of its sessions
        lines.append(f"- Session {x.get('n', '?')}: task {x.get('task') or '(agent picks)'}, "
                     f"started {x.get('startedAt')}, pid {x.get('pid')}, log {x.get('log')}")
    if not shown:
        lines.append("None.")
    sessions = state.extra.get("outcomes") if isinstance(state.extra, dict) else None
    if sessions:                 # how each session ended (outcome.classify)
        lines += ["", "## How the latest sessions ended (newest first)", "",
                  "| session | class | detail |", "| --- | --- | --- |"]
        lines += [f"| {_cell(e.get('n'))} | {_cell(e.get('class'))} | {_cell(e.get('detail'))} |"
                  for e in sessions if isinstance(e, dict)]
    lines += ["", f"## Latest outcomes (newest first, last {LATEST_OUTCOMES})", ""]
    outcomes = _outcomes(state)
    if outcomes:
        lines += ["| at | task | outcome | reason |", "| --- | --- | --- | --- |"]
        lines += [f"| {_cell(e.get('at'))} | {_cell(e['task'])} | {_cell(e['outcome'])} "
                  f"| {_cell(e.get('reason'))} |" for e in outcomes]
    else:
        lines.append("None yet.")
    lines += _scope_section(state.extra.get("scope"))
    lines += _verify_section(state.extra.get("verify"))
    return "\n".join(lines) + "\n"


def _verify_section(records: Any) -> list[str]:
    """The verify gate's last verdict per task (verify/completion.py); absent when off."""
    if not isinstance(records, dict) or not records:
        return []
    lines = ["", "## Verification (last verdict per task)", "",
             "| at | task | verdict | command | exit | commit | findings |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for task, r in sorted(records.items(), key=lambda kv: str(kv[1].get("at")), reverse=True):
        lines.append(f"| {_cell(r.get('at'))} | {_cell(task)} | {_cell(r.get('verdict'))} "
                     f"| {_cell(r.get('command'))} | {_cell(r.get('exit_code'))} "
                     f"| {_cell(str(r.get('commit') or '')[:12])} "
                     f"| {_cell('; '.join(r.get('findings') or []))} |")
    return lines


def _scope_section(frozen: Any) -> list[str]:
    """Scope freeze: kept by scope.freeze in state.extra["scope"]; absent when off."""
    if not isinstance(frozen, dict):
        return []
    lines = ["", "## Scope (frozen)", "",
             f"- Frozen at {frozen.get('frozen_at')}: {frozen.get('tasks')} tasks"]
    changes = frozen.get("changes") or []
    lines += [f"- Scope changed: {_cell(c)}" for c in changes] or ["- No change so far."]
    return lines


def write_progress(ralph_dir: Path, state: RunState) -> None:
    """Rewrite .ralph/progress.md atomically from the state (after every session)."""
    write_atomic(progress_path(ralph_dir), render_progress(state).encode("utf-8"))


__all__ = ["append_event", "read_events", "write_progress", "render_progress", "keep_outcome",
           "events_path", "progress_path", "add_listener", "remove_listener"]
