"""Owns where reports live and which runs a report covers: .ralph/runs/<runId>/report.md and
report.html (written atomically, at the end of every run), the latest run, a run named by id
(or an unambiguous prefix of one), and the runs started since a moment (`--since 7d`). Knows
nothing of rendering details; never prints."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Mapping

from ralphpy.atomic_file import write_atomic
from ralphpy.report import collect, events, render_html, render_md
from ralphpy.errors import RalphError
from ralphpy.runs import progress
from ralphpy.runs import state as run_state

NAMES = ("report.md", "report.html")


def paths(ralph_dir: Path, run_id: str) -> list[Path]:
    run_dir = run_state.state_path(ralph_dir, run_id).parent
    return [run_dir / name for name in NAMES]


def write(ralph_dir: Path, run_id: str, environ: Mapping[str, str] | None = None) -> list[Path]:
    """Collect the run and write report.md and report.html next to its state."""
    report = collect.collect(ralph_dir, [run_id], environ=environ)
    md_path, html_path = paths(ralph_dir, run_id)
    write_atomic(md_path, render_md.render(report).encode("utf-8"))
    write_atomic(html_path, render_html.render(report).encode("utf-8"))
    return [md_path, html_path]


def write_at_end(ralph_dir: Path, run_id: str, wait: bool = True) -> None:
    """At the end of a run: write its report files. A failure must not change how the run
    ends: it becomes a `log` event (kind report_failed) instead. wait: False for a run that
    was interrupted, whose exit follows the signal at once (docs/contract/ralph-cli.md s.16): a lost
    task store is not waited for (the report then has the run's own records only)."""
    environ = None if wait else {**os.environ, "RALPH_STORE_RETRY": "0"}
    try:
        write(ralph_dir, run_id, environ)
    except Exception as err:        # a report bug or a full disk: the run's exit code stands
        try:
            progress.append_event(ralph_dir, run_id, "log", kind="report_failed",
                                  message=f"the run report could not be written: {err}")
        except RalphError:
            pass


def _run_dirs(ralph_dir: Path) -> list[str]:
    try:
        return [e.name for e in os.scandir(Path(ralph_dir) / "runs") if e.is_dir()]
    except OSError:
        return []


def find(ralph_dir: Path, name: str) -> str | None:
    """The run id `name` names: itself, or the one run whose id starts with it."""
    runs = _run_dirs(ralph_dir)
    if name in runs:
        return name
    matches = [r for r in runs if r.startswith(name)]
    return matches[0] if len(matches) == 1 else None


def since(ralph_dir: Path, seconds: float, now: float | None = None) -> list[str]:
    """The runs started in the last `seconds`, oldest first (run ids sort by start time; a
    run whose state is unreadable counts by its directory's time)."""
    cutoff = (time.time() if now is None else now) - seconds
    chosen = []
    for run_id in _run_dirs(ralph_dir):
        state = run_state.read(ralph_dir, run_id)
        started = events.epoch(state.started_at) if state else None
        if started is None:
            try:
                started = (Path(ralph_dir) / "runs" / run_id).stat().st_mtime
            except OSError:
                continue
        if started >= cutoff:
            chosen.append(run_id)
    return sorted(chosen)


def latest(ralph_dir: Path) -> str | None:
    return run_state.latest_run(ralph_dir) or max(_run_dirs(ralph_dir), default=None)


__all__ = ["write", "write_at_end", "paths", "find", "since", "latest", "NAMES"]
