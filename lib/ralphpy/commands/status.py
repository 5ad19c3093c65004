"""Owns `ralph status [--json] [--watch]`: a read-only look, from another shell, at the run of this
backlog: is it alive (run lock + pid check), its run id, iteration, current task, last outcomes,
cost so far, breakers, and where its report is. --watch refreshes it in place on a terminal (the
agent's last line, elapsed time, queue) and prints one plain line per refresh otherwise. Reads
what run_lock, run_state and progress write, and on a PostgreSQL store the fleet (fleet.view);
never writes, never moves a corrupt file, never exits (main returns the exit code for ralph.py)."""
from __future__ import annotations

import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from ralphpy.config.table import BY_NAME
from ralphpy.fleet import view
from ralphpy.report import files
from ralphpy.report import live
from ralphpy.report.render_text import clean
from ralphpy.runs import progress
from ralphpy.runs import lock as run_lock
from ralphpy.runs import state as run_state
from ralphpy.tasks import question_files
from ralphpy.unattended import control, night

LAST_OUTCOMES = 5

HELP = """\
Usage: ralph status [options]

Shows the run of this backlog: alive or not, run id, iteration, current task, last outcomes;
on a PostgreSQL task store, the fleet: hosts, agents, last heartbeats, the tasks they hold.

Options:
  --json          Print one JSON object instead of text
  --watch         Refresh every few seconds (in place on a terminal; Ctrl+C ends it)
  --interval SEC  Seconds between refreshes with --watch (default: 2)
  --count N       With --watch: stop after N refreshes
  --help, -h      Show this help
"""


def _outcome(event: dict[str, Any]) -> dict[str, Any]:
    return {k: event.get(k) for k in ("ts", "n", "task", "outcome", "exit_code", "duration_s",
                                        "cost_usd", "turns", "reason")}


def read_status(ralph_dir: Path, named: str | None = None) -> dict[str, Any]:
    """Everything `ralph status` shows, as a JSON-ready dict (documented in the README).
    named: the fleet's store this shell names (fleet.view.named_store), if already known."""
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
    active = run_state.active_session(state)          # its agent's pid from its pid file
    status.update({
        "mode": state.mode if state else None,
        "iteration": state.iteration if state else None,
        "maxIterations": state.max_iterations if state else None,
        "sessionsStarted": state.sessions_started if state else None,
        "completed": len(state.tasks_done()) if state else None,
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
        "paused": lock.state == "alive" and control.paused(ralph_dir),   # `ralph ctl pause`
    })
    ends = [e for e in progress.read_events(ralph_dir, run_id) if e["event"] == "session_end"] \
        if run_id else []
    status["lastOutcomes"] = [_outcome(e) for e in ends[-LAST_OUTCOMES:]][::-1]
    costs = [e["cost_usd"] for e in ends if isinstance(e.get("cost_usd"), (int, float))]
    status["costUsd"] = round(sum(costs), 6) if costs else None
    status["breakers"] = _breakers(state)
    html = files.paths(ralph_dir, run_id)[1] if run_id else None
    status["report"] = str(html) if html is not None and html.exists() else None
    status["verify"] = (state.extra.get("verify") or None) if state else None   # docs/verify.md
    status["nightShift"] = (state.extra.get("night_shift") or None) if state else None
    status["pullRequests"] = _pull_requests(ralph_dir)                 # docs/github.md
    status["questions"] = _questions(ralph_dir)                        # docs/questions.md
    status["sandbox"] = (state.extra.get("sandbox") or None) if state else None  # docs/sandbox.md
    status["fleet"] = view.read(os.environ, ralph_dir.parent,      # docs/fleet.md
                                      state.extra.get("fleet") if state else None, named=named)
    return status


def _breakers(state: run_state.RunState | None) -> dict[str, Any] | None:
    """The no-progress breaker's counters and where each stops the run (0: off, as the run
    applies it: unattended.night's rule)."""
    guards = state.extra.get("guards") if state else None
    if not isinstance(guards, dict):
        return None
    given = state.options
    out = {}
    for counter, limit in (("consecutive_failures", "max_consecutive_failures"),
                           ("idle_sessions", "max_idle_sessions")):
        on = night.breaker_applies(limit, state.mode, state.max_iterations,
                                          int(given.get("parallel") or 1), given)
        at = given.get(limit, BY_NAME[limit].default) if on else 0
        out[counter] = {"count": guards.get(counter, 0), "stopsAt": at}
    return out


def _night_shift(shift: Any) -> list[str]:
    """The night shift's lines (docs/night-shift.md): each agent's usage windows as last
    reported, the agents limited and until when, the cost of each agent."""
    if not isinstance(shift, dict):
        return []
    lines = []
    for agent, seen in sorted((shift.get("windows") or {}).items()):
        if isinstance(seen, dict) and seen:
            lines.append(f"Windows:    {agent}: " + ", ".join(
                f"{name} {w.get('utilization', 0):.0%} (resets {w.get('resets_at')})"
                for name, w in sorted(seen.items()) if isinstance(w, dict)
                and isinstance(w.get("utilization"), (int, float))))
    for agent, until in sorted((shift.get("limited") or {}).items()):
        lines.append(f"Limited:    {agent} " + (f"until {until}" if until else "for this run"))
    costs = shift.get("costs") or {}
    if isinstance(costs, dict) and costs:
        lines.append("Agents:     " + ", ".join(f"{agent} ${cost:.2f}"
                                                for agent, cost in sorted(costs.items())
                                                if isinstance(cost, (int, float))))
    return lines


def _describe_outcome(o: dict[str, Any]) -> str:
    bits = [f"exit {o['exit_code']}" if o.get("exit_code") is not None else None,
            f"{o['duration_s']:.0f}s" if isinstance(o.get("duration_s"), (int, float)) else None,
            f"${o['cost_usd']}" if o.get("cost_usd") is not None else None,
            f"{o['turns']} turns" if o.get("turns") is not None else None,
            o.get("reason")]
    details = ", ".join(b for b in bits if b)
    task = ", ".join(map(str, o["task"])) if isinstance(o.get("task"), list) else o.get("task")
    return (f"  {o.get('ts')}  session {o.get('n')}  {task or '-'}  "
            f"{o.get('outcome') or '?'}" + (f"  ({details})" if details else ""))


def _pull_requests(ralph_dir: Path) -> dict[str, Any] | None:
    """--pr's record: each task's issue (a GitHub task), pull request, state and checks."""
    from ralphpy.pulls import record
    pulls = record.load(ralph_dir / "pulls.json")
    return {task: {"number": p.number, "url": p.url, "issue": p.issue or None,
                   "state": p.state, "checks": p.checks or None, "reason": p.reason or None}
            for task, p in pulls.items()} or None


def _utc(epoch: object) -> str | None:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch)) \
        if isinstance(epoch, (int, float)) else None


def _questions(ralph_dir: Path) -> list[dict[str, Any]] | None:
    """The questions waiting for a person (asked, not answered yet), oldest first: one small
    file each, never a read of the backlog."""
    waiting = [q for q in question_files.every(ralph_dir / "questions") if q.answer is None]
    return [{"task": q.task, "question": q.text, "default": q.default,
             "deadline": _utc(q.deadline), "askedAt": _utc(q.asked_at)}
            for q in waiting] or None


def _question_lines(questions: list[dict[str, Any]] | None) -> list[str]:
    if not questions:
        return []
    lines = ["Questions waiting for a person:"]
    for q in questions:
        default = (f"default {q['default']!r} at {q['deadline']}" if q.get("default") is not None
                   and q.get("deadline") else f"default {q['default']!r}"
                   if q.get("default") is not None else "no default")
        lines.append(f"  {q['task']}  {q['question']}  ({default}; "
                     f"ralph answer {q['task']} \"...\")")
    return lines


def _pull_lines(pulls: dict[str, Any] | None) -> list[str]:
    if not pulls:
        return []
    lines = ["Pull requests:"]
    for task, p in pulls.items():
        checks = f", checks {p['checks']}" if p.get("checks") else ""
        issue = f"  issue {p['issue']}" if p.get("issue") else ""
        lines.append(f"  {task}  #{p['number']} {p['state']}{checks}  {p['url']}{issue}")
    return lines


def render_text(status: dict[str, Any], ralph_dir: Path) -> str:
    if status["runId"] is None and status["lock"] in ("free", "unreadable"):
        fleet = view.lines(status.get("fleet"))              # other hosts' runs
        return f"No ralph run found in {ralph_dir}.\n" + "".join(f"{x}\n" for x in fleet)
    if status["alive"] and status.get("paused"):          # a session running ends first
        line = ("running, pausing after the current session, " if status["active"] else
                "paused, ") + f"{status['lockDetail']}; `ralph ctl resume` continues it"
    elif status["alive"]:
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
        lines += ["State:      not written yet or unreadable",
                  *view.lines(status.get("fleet"))]
        return "\n".join(map(clean, lines)) + "\n"          # titles shown, not obeyed
    limit = f" of {status['maxIterations']}" if status["maxIterations"] else " (no limit)"
    lines += [f"Started:    {status['startedAt']}",
              f"Updated:    {status['updatedAt']}",
              f"Iteration:  {status['iteration']}{limit}, "
              f"sessions started: {status['sessionsStarted']}",
              f"Tasks:      {status['completed']} completed, {status['failed']} failed"]
    if status.get("sandbox"):
        lines.append(f"Sandbox:    {status['sandbox']}")
    active = status["active"]
    if active:
        lines.append(f"Current:    {active.get('task') or '(agent picks)'} (session "
                     f"{active.get('n')}, started {active.get('startedAt')}, log "
                     f"{active.get('log')})")
    else:
        lines.append("Current:    none")
    if status["resumeAt"] and status["endedAt"]:       # a limit the run ended on (exit 5, -n)
        lines.append(f"Limit:      resets {status['resumeAt']}; the next run waits until then")
    elif status["resumeAt"]:
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
    lines += _night_shift(status.get("nightShift"))
    if status.get("report"):
        shown = Path(ralph_dir) / "runs" / str(status["runId"]) / "report.html"
        lines.append(f"Report:     {shown} (`ralph report` shows it here)")
    lines += _question_lines(status.get("questions"))
    lines += _pull_lines(status.get("pullRequests"))
    lines += view.lines(status.get("fleet"))
    return "\n".join(map(clean, lines)) + "\n"              # titles shown, not obeyed


def _watch_text(status: dict[str, Any], extra: dict[str, Any], shown: Path) -> str:
    claimed = f"{', '.join(extra['activeTasks'])} (claimed)" if extra["activeTasks"] else None
    lines = [line.replace("(agent picks)", claimed, 1) if claimed and line.startswith("Current:")
             else line for line in render_text(status, shown).splitlines()]
    if extra["runElapsed"]:
        lines.insert(2, f"Elapsed:    {extra['runElapsed']}"
                        + (f" (this session: {extra['sessionElapsed']})"
                           if extra["sessionElapsed"] else ""))
    if status.get("costUsd") is not None:
        lines.append(f"Cost:       ${status['costUsd']:.2f} so far")
    for name, b in (status.get("breakers") or {}).items():
        if b["stopsAt"]:
            lines.append(f"Breaker:    {name.replace('_', ' ')} {b['count']} "
                         f"(stops at {b['stopsAt']})")
    if extra["queue"] is not None:
        lines.append("Queue:      " + (", ".join(f"{n} {k}" for k, n in sorted(
            extra["queue"].items())) or "empty"))
    if extra["lastLine"]:
        lines.append(f"Agent:      {clean(extra['lastLine'], 160)}")
    stamp = datetime.now(timezone.utc).strftime("%H:%M:%S")
    return "\n".join(lines) + f"\n\n(refreshed {stamp} UTC; Ctrl+C to leave)\n"


def _watch_line(status: dict[str, Any], extra: dict[str, Any]) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    state = ("ended" if status.get("endedAt") else "not running") if not status["alive"] else \
        "paused" if status.get("paused") and not status["active"] else "running"
    bits = [stamp, f"run {status['runId']}", state]
    if status.get("currentTask") or status.get("active"):
        task = status.get("currentTask") or ", ".join(extra["activeTasks"]) or "(agent picks)"
        bits.append(f"task {clean(task, 60)}"
                    + (f" for {extra['sessionElapsed']}" if extra["sessionElapsed"] else ""))
    bits.append(f"{status.get('completed') or 0} done, {status.get('failed') or 0} failed")
    if status.get("costUsd") is not None:
        bits.append(f"${status['costUsd']:.2f}")
    if status.get("resumeAt"):
        bits.append(f"{'limit resets' if status.get('endedAt') else 'waiting until'} "
                    f"{status['resumeAt']}")
    return " | ".join(bits) + "\n"


def watch(ralph_dir: Path, shown: Path, out: TextIO, *, interval: float,
          count: int | None, as_json: bool) -> int:
    """Refresh until Ctrl+C (or `count` refreshes): in place on a terminal, else one line."""
    tty = out.isatty() and not as_json
    done = 0
    # The settings (ralph.yml) are read once, not at every refresh: this process's environment
    # does not change, and an edit of ralph.yml reaches only a run started later, whose store
    # is read from its state at every refresh (unless its URL holds a password).
    named = view.named_store(os.environ, Path(ralph_dir).parent)
    try:
        while True:
            status = read_status(ralph_dir, named)
            extra = live.live(status, ralph_dir)
            if as_json:
                out.write(json.dumps({**status, **extra}, ensure_ascii=False, default=str) + "\n")
            elif status["runId"] is None:
                out.write(("\x1b[H\x1b[J" if tty else "") + render_text(status, shown))
            elif tty:
                out.write("\x1b[H\x1b[J" + _watch_text(status, extra, shown))
            else:
                out.write(_watch_line(status, extra))
            out.flush()
            done += 1
            if count is not None and done >= count:
                return 0
            time.sleep(interval)
    except KeyboardInterrupt:            # Ctrl+C is how a watch ends: not an error
        return 0


def main(argv: list[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None,
         cwd: Path | None = None, ralph_dir: Path | None = None) -> int:
    """`ralph status [--json]`: prints the status of ralph_dir (ralph.py passes the run's
    .ralph/ at the git top level; default ./.ralph); 0 also when no run is found."""
    out, err = stdout or sys.stdout, stderr or sys.stderr
    as_json = watching = False
    interval, count, refresh = 2.0, None, None
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg in ("--help", "-h"):
            out.write(HELP)
            return 0
        if arg in ("--interval", "--count"):
            try:
                value = float(args.pop(0)) if arg == "--interval" else int(args.pop(0))
                if value <= 0:
                    raise ValueError(value)
            except (IndexError, ValueError):
                what = "a number of seconds above 0" if arg == "--interval" else "a count above 0"
                err.write(f"Error: {arg} requires {what}\nRun 'ralph status --help' for usage\n")
                return 1
            interval, count = (value, count) if arg == "--interval" else (interval, int(value))
            refresh = arg
        elif arg in ("--json", "--watch"):
            as_json, watching = as_json or arg == "--json", watching or arg == "--watch"
        else:
            err.write(f"Error: Unknown option '{arg}'\nRun 'ralph status --help' for usage\n")
            return 1
    if refresh and not watching:                  # a refresh option would do nothing
        err.write(f"Error: {refresh} needs --watch\nRun 'ralph status --help' for usage\n")
        return 1
    here = Path(cwd or os.getcwd())
    ralph_dir = Path(ralph_dir) if ralph_dir is not None else here / ".ralph"
    if watching:
        shown = Path(os.path.relpath(ralph_dir, here)) if cwd is None else ralph_dir
        return watch(ralph_dir, shown, out, interval=interval, count=count,
                     as_json=as_json)
    status = read_status(ralph_dir)
    if as_json:
        out.write(json.dumps(status, ensure_ascii=False, default=str) + "\n")
    else:
        shown = Path(os.path.relpath(ralph_dir, here)) if cwd is None else ralph_dir
        out.write(render_text(status, shown))
    return 0


__all__ = ["main", "read_status", "render_text", "watch"]
