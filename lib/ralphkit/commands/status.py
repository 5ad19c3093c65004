"""Owns `ralph status [--json]`: a read-only look, from another shell, at the run of this backlog:
is it alive (run lock + pid check), its run id, iteration, current task and last outcomes. Reads
what run_lock, run_state and progress write; never writes, never moves a corrupt file, never
exits (main returns the exit code for ralph.py)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from ralphkit.runs import progress
from ralphkit.runs import lock as run_lock
from ralphkit.runs import state as run_state

LAST_OUTCOMES = 5

HELP = """\
Usage: ralph status [options]

Shows the run of this backlog: alive or not, run id, iteration, current task, last outcomes.

Options:
  --json      Print one JSON object instead of text
  --help, -h  Show this help
"""


def _outcome(event: dict[str, Any]) -> dict[str, Any]:
    keys = ("ts", "n", "task", "outcome", "exit_code", "duration_s", "cost_usd", "turns",
            "reason")
    return {k: event.get(k) for k in keys}


def read_status(ralph_dir: Path) -> dict[str, Any]:
    """Everything `ralph status` shows, as a JSON-ready dict (documented in the README)."""
    ralph_dir = Path(ralph_dir)
    lock = run_lock.inspect(ralph_dir / "run.lock")
    holder = lock.holder
    run_id = holder.run_id if holder else run_state.latest_run(ralph_dir)
    status: dict[str, Any] = {
        "runId": run_id, "alive": lock.state == "alive", "lock": lock.state,
        "lockDetail": lock.detail, "pid": holder.pid if holder else None,
        "host": holder.host if holder else None,
    }
    state = run_state.read(ralph_dir, run_id) if run_id else None
    active = state.active if state else None
    status.update({
        "mode": state.mode if state else None,
        "iteration": state.iteration if state else None,
        "maxIterations": state.max_iterations if state else None,
        "sessionsStarted": state.sessions_started if state else None,
        "completed": len(state.completed) if state else None,
        "failed": len(state.failed) if state else None,
        "currentTask": active.get("task") if active else None,
        "active": active,
        "startedAt": state.started_at if state else None,
        "updatedAt": state.updated_at if state else None,
        "endedAt": state.ended_at if state else None,
        "exitCode": state.exit_code if state else None,
        "exitReason": state.exit_reason if state else None,
        "resumeAt": state.resume_at if state else None,
        "interrupted": bool(state and state.ended_at is None and lock.state != "alive"
                            and lock.state != "foreign"),
    })
    ends = [e for e in progress.read_events(ralph_dir, run_id) if e["event"] == "session_end"] \
        if run_id else []
    status["lastOutcomes"] = [_outcome(e) for e in ends[-LAST_OUTCOMES:]][::-1]
    status["verify"] = (state.extra.get("verify") or None) if state else None   # docs/verify.md
    return status


def _describe_outcome(o: dict[str, Any]) -> str:
    bits = [f"exit {o['exit_code']}" if o.get("exit_code") is not None else None,
            f"{o['duration_s']:.0f}s" if isinstance(o.get("duration_s"), (int, float)) else None,
            f"${o['cost_usd']}" if o.get("cost_usd") is not None else None,
            f"{o['turns']} turns" if o.get("turns") is not None else None,
            o.get("reason")]
    details = ", ".join(b for b in bits if b)
    return (f"  {o.get('ts')}  session {o.get('n')}  {o.get('task') or '-'}  "
            f"{o.get('outcome') or '?'}" + (f"  ({details})" if details else ""))


def render_text(status: dict[str, Any], ralph_dir: Path) -> str:
    if status["runId"] is None and status["lock"] in ("free", "unreadable"):
        return f"No ralph run found in {ralph_dir}.\n"
    if status["alive"]:
        line = f"running, {status['lockDetail']}"
    elif status["lock"] == "foreign":
        line = f"unknown, {status['lockDetail']}"
    elif status["interrupted"]:
        line = (f"not running: interrupted (process gone); `ralph {status['mode']}` "
                "resumes it")
    elif status["endedAt"]:
        line = f"ended {status['endedAt']}: {status['exitReason']} (exit {status['exitCode']})"
    else:
        line = "not running"
    lines = [f"Run:        {status['runId']}" + (f" ({status['mode']})" if status["mode"] else ""),
             f"Status:     {line}"]
    if status["mode"] is None:
        lines.append("State:      not written yet or unreadable")
        return "\n".join(lines) + "\n"
    limit = f" of {status['maxIterations']}" if status["maxIterations"] else " (no limit)"
    lines += [f"Started:    {status['startedAt']}",
              f"Updated:    {status['updatedAt']}",
              f"Iteration:  {status['iteration']}{limit}, "
              f"sessions started: {status['sessionsStarted']}",
              f"Tasks:      {status['completed']} completed, {status['failed']} failed"]
    active = status["active"]
    if active:
        lines.append(f"Current:    {active.get('task') or '(agent picks)'} (session "
                     f"{active.get('n')}, started {active.get('startedAt')}, log "
                     f"{active.get('log')})")
    else:
        lines.append("Current:    none")
    if status["resumeAt"]:
        lines.append(f"Waiting:    until {status['resumeAt']}")
    if status["lastOutcomes"]:
        lines.append("Last outcomes (newest first):")
        lines += [_describe_outcome(o) for o in status["lastOutcomes"]]
    if status.get("verify"):
        lines.append("Verification (last verdict per task):")
        lines += [f"  {task}  {r.get('verdict')}  `{r.get('command') or '-'}`"
                  f"  exit {r.get('exit_code')}  at {str(r.get('commit') or '')[:12]}"
                  + (f"  ({len(r['findings'])} tamper findings)" if r.get("findings") else "")
                  for task, r in status["verify"].items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None,
         cwd: Path | None = None, ralph_dir: Path | None = None) -> int:
    """`ralph status [--json]`: prints the status of ralph_dir (ralph.py passes the run's
    .ralph/ at the git top level; default ./.ralph); 0 also when no run is found."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    as_json = False
    for arg in argv:
        if arg in ("--help", "-h"):
            out.write(HELP)
            return 0
        if arg != "--json":
            err.write(f"Error: Unknown option '{arg}'\nRun 'ralph status --help' for usage\n")
            return 1
        as_json = True
    here = Path(cwd or os.getcwd())
    ralph_dir = Path(ralph_dir) if ralph_dir is not None else here / ".ralph"
    status = read_status(ralph_dir)
    if as_json:
        out.write(json.dumps(status, ensure_ascii=False, default=str) + "\n")
    else:
        shown = Path(os.path.relpath(ralph_dir, here)) if cwd is None else ralph_dir
        out.write(render_text(status, shown))
    return 0


__all__ = ["main", "read_status", "render_text"]
