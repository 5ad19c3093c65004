"""Owns reading one run's records into a report.Report: its events (events.py folds them in),
its state.json, the run lock (is it still running) and the backlog (titles, status, commits,
holds; read-only, the embedded store only). Also merges several runs (`--since`). Knows
nothing of rendering; never prints, never writes."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from ralphpy.report.events import Builder, epoch, read_events, text
from ralphpy.report.model import Report, Task
from ralphpy.runs import lock as run_lock
from ralphpy.runs import progress
from ralphpy.runs import state as run_state


def _same_moment(whole: float | None, precise: float | None) -> float | None:
    """A state time (whole seconds), or the event time (milliseconds) of that same moment."""
    if whole is not None and precise is not None and 0 <= precise - whole < 1:
        return precise
    return whole


def _apply_state(r: Report, state: run_state.RunState, running: bool) -> None:
    r.add_mode(state.mode)
    start = _same_moment(epoch(state.started_at), r.started)
    if start is not None:
        r.started = start if r.started is None else min(r.started, start)
    if state.ended_at:
        r.status, r.exit_code, r.exit_reason = "ended", state.exit_code, state.exit_reason
        r.ended = _same_moment(epoch(state.ended_at), r.ended) or r.ended
    else:
        r.status, r.ended = ("running" if running else "interrupted"), None
    done = {e["task"] for e in state.tasks_done()}
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
        task.title = text(row.get("title"))
        task.status = text(row.get("status"))
        if row.get("held") is not None:
            task.outcome, task.hold_reason = "held", task.hold_reason or text(row.get("held"))
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
    from ralphpy.backlog import answers, readonly
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
    builder = Builder(report)
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


__all__ = ["collect", "backlog_rows"]
