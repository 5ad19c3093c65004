"""Synthetic run records for the report's tests and bench/report.py: a run directory with a
state.json and an events.jsonl of N sessions, written the way ralph.py writes them (one JSON
line per event), fast enough for 10,000 sessions."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ralphpy.runs import state as run_state

START = datetime(2026, 11, 22, 22, 0, tzinfo=timezone.utc)
XSS = "<img src=x onerror=alert(1)>"


def _ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def make_run(ralph_dir: Path, run_id: str, sessions: int, *, ended: bool = True,
             reason: str = XSS, step_s: float = 300.0) -> list[dict]:
    """Write a run of `sessions` sessions; every 7th fails (with `reason`, untrusted text) and
    is retried by the next, every 50th waits on a usage limit. Returns the events."""
    now = START
    events = [{"ts": _ts(now), "event": "run_start", "mode": "build", "options": {},
               "resumed": False, "billing": "subscription"}]
    state = run_state.RunState(run_id=run_id, mode="build", max_iterations=0)
    state.started_at = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    task = 0
    for n in range(1, sessions + 1):
        slug = f"t{task}"
        events.append({"ts": _ts(now), "event": "session_start", "n": n, "task": slug,
                       "agent": "claude", "log": f".ralph/logs/{n}.log"})
        duration = step_s * (0.5 + (n * 37 % 11) / 10)
        now += timedelta(seconds=duration)
        failed = n % 7 == 3
        end = {"ts": _ts(now), "event": "session_end", "n": n, "task": slug, "exit_code":
               1 if failed else 0, "duration_s": round(duration, 3), "cost_usd": 0.05 + n % 5 / 10,
               "turns": 3 + n % 4, "outcome": "failed" if failed else "completed",
               "class": "failure" if failed else "success", "detail": "exit 1" if failed else "",
               "counts_as_failure": failed}
        if failed:
            end["reason"] = reason
            state.failed.append({"task": slug, "at": end["ts"], "reason": reason, "n": n})
        else:
            state.completed.append({"task": slug, "at": end["ts"], "n": n})
            task += 1
        events.append(end)
        if n % 50 == 0:
            events.append({"ts": _ts(now), "event": "log", "kind": "usage_limit_wait",
                           "message": "5-hour limit reached", "resume_at": _ts(now)})
            now += timedelta(minutes=20)
    state.sessions_started = state.iteration = sessions
    if ended:
        events.append({"ts": _ts(now), "event": "run_end", "exit_code": 0,
                       "reason": "No tasks available. Exiting loop."})
        state.finish(0, "No tasks available. Exiting loop.")
        state.ended_at = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    run_state.save(ralph_dir, state)
    path = Path(ralph_dir) / "runs" / run_id / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return events


__all__ = ["make_run", "XSS", "START"]
