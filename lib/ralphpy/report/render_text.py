"""Owns the terminal report: a few summary lines, sparklines, a compact task table (the tasks
that need a look first) and what could not be read. Untrusted text (titles, reasons, agent
text) has its control characters shown escaped (ralphpy.inert), so it cannot move the cursor or recolour the
terminal. Knows nothing of reading records."""
from __future__ import annotations

from ralphpy import inert
from ralphpy.report import charts
from ralphpy.report.model import BILLING_TEXT, Report

TASK_ROWS = 40


def clean(text: object, width: int | None = None) -> str:
    """One line of untrusted text, safe for a terminal (its control characters shown
    escaped), cut to width characters."""
    value = inert.shown("" if text is None else str(text))
    if width is not None and len(value) > width:
        value = value[:max(1, width - 1)] + "\u2026"
    return value


def _summary(r: Report) -> list[str]:
    outcomes = ", ".join(f"{clean(k)} {v}" for k, v in r.outcomes().most_common()) or "none"
    per_hour = f", {r.tasks_per_hour:.1f}/h" if r.tasks_per_hour is not None else ""
    per_done = (f", {charts.money(r.cost_per_done)} per done task"
                if r.cost_per_done is not None else "")
    lines = [
        f"ralph report: {clean(r.title)}" + (f" ({clean(r.mode)})" if r.mode else ""),
        f"Status:     {clean(charts.status_line(r))}",
        f"Started:    {charts.when(r.started)}, lasted {charts.duration(r.elapsed_s)}"
        f" (waiting on usage limits: {charts.duration(r.limit_wait_s)})",
        f"Sessions:   {len(r.sessions)} ({outcomes})",
        f"Tasks:      {r.done} done of {len(r.tasks)}{per_hour}",
        f"Cost:       {charts.money(r.cost_usd)}{per_done}; {BILLING_TEXT[r.billing]}",
    ]
    clis = r.agent_clis()
    if clis:
        lines.append("Agent CLI:  " + ", ".join(
            f"{clean(cli, 40)} ({n} session{'s' if n != 1 else ''})"
            for cli, n in clis.most_common()))
    lines += [f"{name + ':':<12}{clean(value)}" for name, value in r.night_shift()]
    lines += [f"Stop:       {clean(s)}" for s in r.stops]
    return lines


def _sparks(r: Report) -> list[str]:
    points = charts.cumulative(r)
    if len(points) < 2:
        return []
    return ["",
            f"Cost       {charts.sparkline([p[1] for p in points])}  {charts.money(r.cost_usd)}",
            f"Done       {charts.sparkline([float(p[2]) for p in points])}  {r.done}",
            f"Durations  {charts.sparkline(charts.durations(r))}"
            f"  longest {charts.duration(max(charts.durations(r), default=None))}"]


def _table(r: Report) -> list[str]:
    tasks = charts.ordered_tasks(r)
    if not tasks:
        return ["", "Tasks: none recorded."]
    lines = ["", f"{'TASK':<22} {'OUTCOME':<12} {'TRIES':>5} {'COST':>9} {'TIME':>8}  NOTE"]
    for t in tasks[:TASK_ROWS]:
        note = (t.hold_reason or (t.fail_reasons[-1] if t.fail_reasons else None)
                or t.title or "")
        lines.append(f"{clean(t.id, 22):<22} {clean(t.outcome, 12):<12} {t.attempts:>5} "
                     f"{charts.money(t.cost_usd):>9} {charts.duration(t.wall_s):>8}  "
                     f"{clean(note, 60)}")
    if len(tasks) > TASK_ROWS:
        lines.append(f"... {len(tasks) - TASK_ROWS} more tasks (ralph report --md lists all)")
    return lines


def render(r: Report, files: list[str] | None = None) -> str:
    lines = _summary(r) + _sparks(r) + _table(r)
    longest = r.longest(3)
    if longest:
        lines += ["", "Longest sessions: " + ", ".join(
            f"#{s.n} {charts.duration(s.duration_s)} ({clean(', '.join(s.tasks) or '-', 30)})"
            for s in longest)]
    if r.limit_waits:
        lines.append(f"Usage-limit waits: {len(r.limit_waits)}, "
                     f"{charts.duration(r.limit_wait_s)} in all")
    if r.scope_changes:
        lines.append(f"Scope changes: {len(r.scope_changes)} "
                     f"(latest: {clean(r.scope_changes[-1], 70)})")
    if r.problems:
        lines += ["", "Could not read everything:"] + [f"  {clean(p)}" for p in r.problems]
    if files:
        lines += ["", "Full report: " + ", ".join(files)]
    return "\n".join(lines) + "\n"


__all__ = ["render", "clean"]
