"""Owns reading one run's records into a report.Report: its events.jsonl (a torn last line or
garbage lines are skipped and counted, never fatal), its state.json, the run lock (is it still
running) and the backlog (titles, status, commits, holds; read-only, the embedded store only).
Also merges several runs (`--since`). Knows nothing of rendering; never prints, never writes."""
from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Mapping

from ralphkit.report.model import STOP_KINDS, LimitWait, Report, Session, Task
from ralphkit.runs import lock as run_lock
from ralphkit.runs import progress
from ralphkit.runs import state as run_state

_TASK_LOG_KINDS = ("task_held", "drift", "respawn", "assign")
# The `--sync` steps a reader must know of (docs/fleet.md): commits set aside by a conflict or
# not on the shared branch yet, a session that started without the other machines' work, a
# stash left behind. Fetches, rebases and pushes that worked are not news.
_SYNC_NOTICES = ("conflict", "push_gave_up", "push_failed", "fetch_failed", "rebase_failed",
                 "stash_kept")


def epoch(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _tasks(value: Any) -> list[str]:
    if isinstance(value, str) and value:
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, (str, int)) and str(v)]
    return []


def read_events(path: Path, problems: list[str]) -> list[dict[str, Any]]:
    """The events of one events.jsonl; what cannot be read becomes a line in problems."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        problems.append(f"{path.name} does not exist yet: no event was recorded")
        return []
    except OSError as err:
        problems.append(f"{path} cannot be read: {err.strerror or err}")
        return []
    lines = raw.split(b"\n")
    torn = bool(raw) and not raw.endswith(b"\n")
    events, bad, cut = [], 0, False
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            cut = torn and i == len(lines) - 1
            bad += not cut
            continue
        if isinstance(record, dict) and isinstance(record.get("event"), str):
            events.append(record)
        else:
            bad += 1
    if cut:
        problems.append(f"the last line of {path.name} is cut short (the run is still writing "
                        "it, or stopped in the middle of a write); it was skipped")
    if bad:
        problems.append(f"{bad} line(s) of {path.name} are not events and were skipped")
    return events


class _Builder:
    """Feeds events in order; sessions are keyed by run id and number."""

    def __init__(self, report: Report):
        self.r = report
        self.open: dict[str, Session] = {}
        self.wait: LimitWait | None = None
        self.last_tasks: list[str] = []

    def task(self, task_id: str) -> Task:
        task = self.r.tasks.get(task_id)
        if task is None:
            task = self.r.tasks[task_id] = Task(task_id)
        return task

    def feed(self, run_id: str, e: dict[str, Any]) -> None:
        r, name, ts = self.r, e["event"], epoch(e.get("ts"))
        if ts is not None:
            r.started = ts if r.started is None else min(r.started, ts)
            r.last_event = ts if r.last_event is None else max(r.last_event, ts)
        if self.wait is not None and ts is not None and not (
                name == "log" and e.get("kind") == "usage_limit_wait"):
            self.wait.end, self.wait = ts, None           # the run went on: the wait is over
        handler = getattr(self, f"_on_{name}", None)
        if handler is not None:
            handler(run_id, e, ts)
        elif name.startswith("verif"):
            self._verify(e)

    def _on_run_start(self, run_id: str, e: dict[str, Any], ts: float | None) -> None:
        self.r.mode = e.get("mode") if isinstance(e.get("mode"), str) else self.r.mode
        if e.get("billing") in ("api", "subscription"):
            self.r.billing = e["billing"]

    def _on_session_start(self, run_id: str, e: dict[str, Any], ts: float | None) -> None:
        n = e.get("n") if isinstance(e.get("n"), int) else None
        session = Session(f"{run_id}:{n}", n, _tasks(e.get("task")), start=ts)
        self.open[session.key] = session
        self.r.sessions.append(session)

    def _on_session_end(self, run_id: str, e: dict[str, Any], ts: float | None) -> None:
        n = e.get("n") if isinstance(e.get("n"), int) else None
        s = self.open.pop(f"{run_id}:{n}", None)
        if s is None:
            s = Session(f"{run_id}:{n}", n)
            self.r.sessions.append(s)
        s.end = ts
        s.tasks = _tasks(e.get("task")) or s.tasks
        s.duration_s = _number(e.get("duration_s"))
        if s.duration_s is None and s.start is not None and ts is not None:
            s.duration_s = max(0.0, ts - s.start)
        s.cost_usd, s.turns = _number(e.get("cost_usd")), e.get("turns")
        tokens = [_number(e.get(k)) for k in ("tokens_in", "tokens_out")]
        s.tokens = int(sum(t for t in tokens if t)) if any(t is not None for t in tokens) else None
        s.outcome = str(e.get("outcome") or "ended")
        s.klass = e.get("class") if isinstance(e.get("class"), str) else None
        s.detail, s.reason = _text(e.get("detail")), _text(e.get("reason"))
        s.exit_code = e.get("exit_code") if isinstance(e.get("exit_code"), int) else None
        share = 1 / len(s.tasks) if s.tasks else 0
        for task_id in s.tasks:
            task = self.task(task_id)
            task.attempts += 1
            task.cost_usd += (s.cost_usd or 0.0) * share
            task.wall_s += (s.duration_s or 0.0) * share
            if s.tokens is not None:
                task.tokens = (task.tokens or 0) + int(s.tokens * share)
            if s.outcome == "completed":
                task.outcome = "done"
            elif s.outcome == "failed" and task.outcome != "done":
                task.outcome = "failed"
                why = s.reason or s.detail
                if why:
                    task.fail_reasons.append(why)
        for task_id in e.get("held") or []:
            self.task(str(task_id)).outcome = "held"
        self.last_tasks = s.tasks

    def _on_run_end(self, run_id: str, e: dict[str, Any], ts: float | None) -> None:
        code = e.get("exit_code") if isinstance(e.get("exit_code"), int) else None
        self.r.exit_code, self.r.exit_reason, self.r.ended = code, _text(e.get("reason")), ts
        if code in (4, 5, 6, 7):
            self.r.stops.append(f"{STOP_KINDS[code]}: {_text(e.get('reason')) or 'stopped'}")

    def _on_log(self, run_id: str, e: dict[str, Any], ts: float | None) -> None:
        kind, message = str(e.get("kind") or "log"), _text(e.get("message")) or ""
        task_id = _text(e.get("task"))
        if kind == "drift" and not task_id and message.startswith("task "):
            task_id = message[5:].split(":", 1)[0].strip() or None
        if kind == "usage_limit_wait" and ts is not None:
            after = self.last_tasks[0] if self.last_tasks else None
            self.wait = LimitWait(ts, None, message, after)
            self.r.limit_waits.append(self.wait)
            for tid in self.last_tasks:
                self.task(tid).limit_waits += 1
        elif kind == "task_held" and task_id:
            task = self.task(task_id)
            task.outcome, task.hold_reason = "held", message
        elif kind == "stop":
            self.r.stops.append(message)
        elif task_id and kind in _TASK_LOG_KINDS:
            self.task(task_id).notices.append(f"{kind}: {message}")
        else:
            self.r.notices.append(f"{kind}: {message}")

    def _on_sync(self, run_id: str, e: dict[str, Any], ts: float | None) -> None:
        action = e.get("action")
        if action not in _SYNC_NOTICES:
            return
        message = _text(e.get("message")) or f"sync: {action}"
        self.r.notices.append(message)
        if action == "conflict":
            kept = _text(e.get("kept"))
            for task_id in _tasks(e.get("tasks")):
                self.task(task_id).notices.append(
                    f"sync conflict: reopened; its commits are on branch {kept}" if kept
                    else "sync conflict: reopened")

    def _on_scope_changed(self, run_id: str, e: dict[str, Any], ts: float | None) -> None:
        self.r.scope_changes += [str(c) for c in e.get("changes") or e.get("new") or []]
        for key in ("added", "removed", "definition_modified"):
            for task_id in e.get(key) or []:
                if isinstance(task_id, (str, int)):
                    self.task(str(task_id)).notices.append(f"scope: {key.replace('_', ' ')}")

    def _verify(self, e: dict[str, Any]) -> None:
        task_id = _text(e.get("task"))
        if not task_id:
            return
        ok = next((e[k] for k in ("ok", "passed", "pass") if isinstance(e.get(k), bool)), None)
        verdict = "passed" if ok else "failed" if ok is False else str(e.get("status") or "ran")
        code = e.get("exit_code", e.get("exit_status"))
        self.task(task_id).verify = verdict + (f" (exit {code})" if code is not None else "")

    def close(self, running: bool) -> None:
        for s in self.open.values():
            s.outcome = "running" if running else "interrupted"
            for task_id in s.tasks:
                task = self.task(task_id)
                task.attempts += 1
                if task.outcome == "not finished":
                    task.outcome = "running" if running else task.outcome


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _apply_state(r: Report, state: run_state.RunState, running: bool) -> None:
    r.mode = state.mode
    start = epoch(state.started_at)
    if start is not None:
        r.started = start if r.started is None else min(r.started, start)
    if state.ended_at:
        r.status, r.exit_code, r.exit_reason = "ended", state.exit_code, state.exit_reason
        r.ended = epoch(state.ended_at) or r.ended
    else:
        r.status, r.ended = ("running" if running else "interrupted"), None
    done = {e["task"] for e in state.completed}
    for task_id in done:
        task = r.tasks.get(task_id) or r.tasks.setdefault(task_id, Task(task_id))
        task.outcome = "done"


def _apply_backlog(r: Report, rows: Iterable[dict[str, Any]]) -> None:
    rows = list(rows)
    if r.status == "running":            # the agent claimed it itself: the backlog knows it
        claimed = [str(row.get("id")) for row in rows if row.get("status") == "active"]
        for s in r.sessions:
            if s.outcome == "running" and not s.tasks and claimed:
                s.tasks = claimed
                for task_id in claimed:
                    r.tasks.setdefault(task_id, Task(task_id, outcome="running", attempts=1))
    for row in rows:
        task = r.tasks.get(str(row.get("id")))
        if task is None:
            continue
        task.title = _text(row.get("title"))
        task.status = _text(row.get("status"))
        if row.get("held") is not None:
            task.outcome, task.hold_reason = "held", task.hold_reason or _text(row.get("held"))
        elif task.status == "done":
            task.outcome = "done"
        result = row.get("result")
        try:
            result = json.loads(result) if isinstance(result, str) else result
        except ValueError:
            result = None
        if isinstance(result, dict):
            commits = result.get("commits") or [result.get("commit")]
            task.commits = [str(c) for c in commits if isinstance(c, str) and c]


def backlog_rows(repo_root: Path, environ: Mapping[str, str]) -> list[dict[str, Any]] | None:
    """The tasks of the embedded store, read-only; None when another task command is used
    or the store cannot be read."""
    if environ.get("RALPH_TASK_CMD"):
        return None
    from ralphkit.backlog import answers, readonly
    read = readonly.call(["_export-json"], environ=environ, cwd=repo_root)
    return answers.parse_export(read.output) if read.ok and read.exists else None


def collect(ralph_dir: Path, run_ids: list[str], *, title: str | None = None,
            environ: Mapping[str, str] | None = None) -> Report:
    """One report of the given runs (oldest first), merged when several."""
    ralph_dir = Path(ralph_dir)
    report = Report(title or (f"run {run_ids[0]}" if len(run_ids) == 1 else
                              f"{len(run_ids)} runs"), list(run_ids))
    lock = run_lock.inspect(ralph_dir / "run.lock")
    alive = lock.holder.run_id if lock.state == "alive" and lock.holder else None
    builder = _Builder(report)
    for run_id in run_ids:
        problems: list[str] = []
        for event in read_events(progress.events_path(ralph_dir, run_id), problems):
            builder.feed(run_id, event)
        state = run_state.read(ralph_dir, run_id)
        if state is None:
            problems.append("state.json is missing or unreadable: the status comes from the "
                            "events alone")
            if report.ended is None:
                report.status = "running" if alive == run_id else "unknown"
        else:
            _apply_state(report, state, alive == run_id)
        prefix = f"run {run_id}: " if len(run_ids) > 1 else ""
        report.problems += [prefix + p for p in problems]
    builder.close(running=alive in run_ids)
    if report.status == "unknown" and report.ended is not None:
        report.status = "ended"
    rows = backlog_rows(ralph_dir.parent, os.environ if environ is None else environ)
    if rows is not None:
        _apply_backlog(report, rows)
    return report


__all__ = ["collect", "read_events", "backlog_rows", "epoch"]
