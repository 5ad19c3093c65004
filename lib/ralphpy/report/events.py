"""Owns folding one run's events.jsonl into a report.Report: reading it (a torn last line or
garbage lines are skipped and counted, never fatal) and each event's share of the report
(sessions, tasks and their notices, limit waits, stops, scope changes, verification, the
`--sync` steps that went wrong). Knows nothing of the run state, the lock or the backlog
(collect) or of rendering; never prints, never writes."""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from ralphpy.report.model import STOP_KINDS, LimitWait, Report, Session, Task
from ralphpy.unattended.outcome import NOT_AN_ATTEMPT

_TASK_LOG_KINDS = ("task_held", "drift", "respawn", "assign", "strays",
                   # docs/questions.md: each answer says whether it was the default
                   "question", "question_answered", "question_default", "question_timeout",
                   "question_unsettled")
# The `--sync` steps a reader must know of (docs/fleet.md): commits set aside by a conflict or
# not on the shared branch yet, a session that started without the other machines' work, a
# stash left behind. Fetches, rebases and pushes that worked are not news.
# what went wrong, and what a run found an interrupted or earlier run had left unpushed
_SYNC_NOTICES = ("conflict", "push_gave_up", "push_failed", "fetch_failed", "rebase_failed",
                 "stash_kept", "unpushed")


# Log events written while a usage-limit wait goes on: its own start, and a notification
# channel's failure (the dispatcher appends it from its thread). Any other event is the run
# going on (or ending) after the wait.
_DURING_A_WAIT = ("usage_limit_wait", "notify_failed")


def ends_limit_wait(record: dict[str, Any]) -> bool:
    """The event shows that a usage-limit wait before it is over."""
    return not (record.get("event") == "log" and record.get("kind") in _DURING_A_WAIT)


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


class Builder:
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
        if self.wait is not None and ts is not None and ends_limit_wait(e):
            self.wait.end, self.wait = ts, None           # the run went on: the wait is over
        handler = getattr(self, f"_on_{name}", None)
        if handler is not None:
            handler(run_id, e, ts)
        elif name.startswith("verif"):
            self._verify(e)

    def _on_run_start(self, run_id: str, e: dict[str, Any], ts: float | None) -> None:
        self._stop_open(run_id)         # resumed: what the killed ralph.py ran died with it
        self.r.add_mode(e.get("mode"))
        if e.get("billing") in ("api", "subscription"):
            self.r.billing = e["billing"]

    def _on_session_start(self, run_id: str, e: dict[str, Any], ts: float | None) -> None:
        n = e.get("n") if isinstance(e.get("n"), int) else None
        session = Session(f"{run_id}:{n}", n, _tasks(e.get("task")), start=ts,
                          agent=text(e.get("agent")), model=text(e.get("model")))
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
        s.detail, s.reason = text(e.get("detail")), text(e.get("reason"))
        s.exit_code = e.get("exit_code") if isinstance(e.get("exit_code"), int) else None
        s.agent_version = text(e.get("agent_version"))
        s.agent, s.model = text(e.get("cli")) or s.agent, text(e.get("model")) or s.model
        s.windows = _windows(e.get("windows"))
        share = 1 / len(s.tasks) if s.tasks else 0
        done_here = e.get("completed") if isinstance(e.get("completed"), list) else None
        s.finished = len(done_here) if done_here is not None else \
            len(s.tasks) if s.outcome == "completed" else 0
        for task_id in s.tasks:
            task = self.task(task_id)
            outcome = s.outcome if done_here is None else (
                "completed" if task_id in done_here else "failed")   # a session of several tasks
            task.attempts += s.klass not in NOT_AN_ATTEMPT     # a usage limit: no attempt
            task.cost_usd += (s.cost_usd or 0.0) * share
            task.wall_s += (s.duration_s or 0.0) * share
            if s.tokens is not None:
                task.tokens = (task.tokens or 0) + int(s.tokens * share)
            if outcome == "completed":
                task.outcome = "done"
            elif outcome == "failed" and task.outcome != "done":
                task.outcome = "failed"
                why = s.reason or s.detail
                if why:
                    task.fail_reasons.append(why)
        for task_id in e.get("held") or []:
            self.task(str(task_id)).outcome = "held"
        self.last_tasks = s.tasks

    def _on_run_end(self, run_id: str, e: dict[str, Any], ts: float | None) -> None:
        self._stop_open(run_id)         # the run ended: none of its sessions still runs
        code = e.get("exit_code") if isinstance(e.get("exit_code"), int) else None
        self.r.exit_code, self.r.exit_reason, self.r.ended = code, text(e.get("reason")), ts
        if code in (4, 5, 6, 7):
            self.r.stops.append(f"{STOP_KINDS[code]}: {text(e.get('reason')) or 'stopped'}")

    def _on_log(self, run_id: str, e: dict[str, Any], ts: float | None) -> None:
        kind, message = str(e.get("kind") or "log"), text(e.get("message")) or ""
        task_id = text(e.get("task"))
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
        elif kind == "deleted" and task_id:
            task = self.task(task_id)
            task.outcome = "deleted"
            task.notices.append(f"{kind}: {message}")
        elif kind == "stop":
            self.r.stops.append(message)
        elif kind in ("resume", "interrupted_run") and task_id:
            self._settled(run_id, task_id, text(e.get("reason")) or message)
        elif task_id and kind in _TASK_LOG_KINDS:
            self.task(task_id).notices.append(f"{kind}: {message}")
        else:
            self.r.notices.append(f"{kind}: {message}")

    def _settled(self, run_id: str, task_id: str, reason: str) -> None:
        """A resumed run failed what its killed session's agent held: in agent-picks mode that
        session named no task, so it is attributed here (an attempt, with the reason)."""
        task = self.task(task_id)
        task.fail_reasons.append(reason)
        dead = next((s for s in reversed(self.r.sessions) if s.key.startswith(f"{run_id}:")
                     and s.outcome == "interrupted" and not s.tasks), None)
        if dead is not None:
            dead.tasks = [task_id]
            task.attempts += 1

    def _on_pr(self, run_id: str, e: dict[str, Any], ts: float | None) -> None:
        """--pr: a task's pull request as its last event saw it (docs/github.md)."""
        task_id, number = e.get("task"), e.get("number")
        if not task_id or not isinstance(number, int):
            return
        task = self.task(str(task_id))
        checks = f", checks {text(e.get('checks'))}" if e.get("checks") else ""
        task.pull = f"#{number} {text(e.get('state'))}{checks} {text(e.get('url'))}".rstrip()
        task.issue = text(e.get("issue")) or task.issue

    def _on_sync(self, run_id: str, e: dict[str, Any], ts: float | None) -> None:
        action = e.get("action")
        if action not in _SYNC_NOTICES:
            return
        message = text(e.get("message")) or f"sync: {action}"
        self.r.notices.append(message)
        if action == "conflict":
            kept = text(e.get("kept"))
            for task_id in _tasks(e.get("tasks")):
                self.task(task_id).notices.append(
                    f"sync conflict: reopened; its commits are on branch {kept}" if kept
                    else "sync conflict: reopened")

    def _on_scope_changed(self, run_id: str, e: dict[str, Any], ts: float | None) -> None:
        # `new`: this check's lines; `changes` is the running list of every check so far
        new = e.get("new") if isinstance(e.get("new"), list) else e.get("changes") or []
        self.r.scope_changes += [str(c) for c in new]
        for key in ("added", "removed", "definition_modified"):
            for task_id in e.get(key) or []:
                if isinstance(task_id, (str, int)):
                    self.task(str(task_id)).notices.append(f"scope: {key.replace('_', ' ')}")

    def _verify(self, e: dict[str, Any]) -> None:
        task_id = text(e.get("task"))
        if not task_id:
            return
        verdict = text(e.get("verdict"))           # the gate's: passed, warned, failed, ...
        if verdict is None:
            ok = next((e[k] for k in ("ok", "passed", "pass") if isinstance(e.get(k), bool)),
                      None)
            verdict = "passed" if ok else "failed" if ok is False else str(e.get("status") or "ran")
        code = e.get("exit_code", e.get("exit_status"))
        task = self.task(task_id)
        task.verify = verdict + (f" (exit {code})" if code is not None else "")
        if verdict in ("failed", "timeout", "held"):      # reopened (and held): not done now
            task.outcome = "held" if verdict == "held" else "failed"
            if reason := text(e.get("reason")):
                task.fail_reasons.append(reason.split("\n", 1)[0])

    def close(self, running: bool) -> None:
        """After the last event: a session that never ended runs on while its run holds the
        lock (running); otherwise it died with its ralph.py (interrupted)."""
        for s in self.open.values():
            self._unended(s, running)
        self.open.clear()

    def _stop_open(self, run_id: str) -> None:
        for key in [key for key in self.open if key.startswith(f"{run_id}:")]:
            self._unended(self.open.pop(key), running=False)

    def _unended(self, s: Session, running: bool) -> None:
        s.outcome = "running" if running else "interrupted"
        for task_id in s.tasks:
            task = self.task(task_id)
            task.attempts += 1
            if task.outcome == "not finished" and running:
                task.outcome = "running"


def _windows(value: Any) -> dict[str, float]:
    """A session's usage windows (docs/night-shift.md): name -> utilization, odd entries
    skipped."""
    if not isinstance(value, dict):
        return {}
    return {name: use for name, w in value.items() if isinstance(name, str)
            and isinstance(w, dict) and (use := _number(w.get("utilization"))) is not None}


def text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


__all__ = ["Builder", "read_events", "epoch", "ends_limit_wait", "text"]
