"""Owns the Markdown report (report.md): the summary, every task in one table, the sessions
that ended badly, the longest sessions, limit waits, stops, scope changes and notices.
Untrusted text is one line per cell with `|`, `<`, `>` and `&` escaped, so a Markdown viewer
that renders raw HTML still shows it as text. Knows nothing of reading records."""
from __future__ import annotations

from ralphpy.report import charts
from ralphpy.report.model import BILLING_TEXT, Report
from ralphpy.report.render_text import clean

NOTICES_SHOWN = 50


def cell(text: object) -> str:
    value = clean(text).replace("\\", "\\\\").replace("|", "\\|")
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _summary(r: Report) -> list[str]:
    rows = [
        ("Status", charts.status_line(r)),
        ("Mode", r.mode or "-"),
        ("Started", charts.when(r.started)),
        ("Lasted", charts.duration(r.elapsed_s)),
        ("Sessions", str(len(r.sessions))),
        ("Tasks done", f"{r.done} of {len(r.tasks)}"),
        ("Tasks done per hour", f"{r.tasks_per_hour:.2f}" if r.tasks_per_hour is not None
         else "-"),
        ("Cost", f"{charts.money(r.cost_usd)} ({BILLING_TEXT[r.billing]})"),
        ("Cost per done task", charts.money(r.cost_per_done)),
        ("Waiting on usage limits", f"{charts.duration(r.limit_wait_s)} "
                                    f"({len(r.limit_waits)} waits)"),
    ]
    clis = r.agent_clis()
    if clis:
        rows.append(("Agent CLI", ", ".join(f"{cli} ({n})" for cli, n in clis.most_common())))
    rows += r.night_shift()                  # models and usage windows (docs/night-shift.md)
    lines = [f"# ralph report: {cell(r.title)}", "", "| | |", "| --- | --- |"]
    lines += [f"| {name} | {cell(value)} |" for name, value in rows]
    outcomes = r.outcomes()
    if outcomes:
        lines += ["", "## How the sessions ended", "", "| outcome | sessions |", "| --- | ---: |"]
        lines += [f"| {cell(k)} | {v} |" for k, v in outcomes.most_common()]
    if r.stops:
        lines += ["", "## Stops", ""] + [f"- {cell(s)}" for s in r.stops]
    return lines


def _tasks(r: Report) -> list[str]:
    tasks = charts.ordered_tasks(r)
    lines = ["", f"## Tasks ({len(tasks)})", ""]
    if not tasks:
        return lines + ["No task was worked on."]
    lines += ["| task | title | outcome | attempts | commits | cost | tokens | time "
              "| limit waits | reasons and notices | verify |",
              "| --- | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | --- | --- |"]
    for t in tasks:
        why = [f"held: {t.hold_reason}"] if t.hold_reason else []
        why += [f"pull request {t.pull}"] if t.pull else []
        why += [f"issue {t.issue}"] if t.issue else []
        why += t.fail_reasons[-3:] + t.notices[-3:]
        lines.append(
            f"| {cell(t.id)} | {cell(t.title or '')} | {cell(t.outcome)} | {t.attempts} "
            f"| {cell(', '.join(c[:10] for c in t.commits))} | {charts.money(t.cost_usd)} "
            f"| {t.tokens if t.tokens is not None else '-'} | {charts.duration(t.wall_s)} "
            f"| {t.limit_waits} | {cell('; '.join(why))} | {cell(t.verify or '-')} |")
    return lines


def _sessions(r: Report) -> list[str]:
    lines = []
    longest = r.longest(5)
    if longest:
        lines += ["", "## Longest sessions", "", "| session | tasks | time | cost | outcome |",
                  "| ---: | --- | ---: | ---: | --- |"]
        lines += [f"| {s.n} | {cell(', '.join(s.tasks) or '-')} | {charts.duration(s.duration_s)}"
                  f" | {charts.money(s.cost_usd)} | {cell(s.klass or s.outcome)} |"
                  for s in longest]
    if r.limit_waits:
        lines += ["", "## Usage-limit waits", "", "| started | waited | after task | message |",
                  "| --- | ---: | --- | --- |"]
        lines += [f"| {charts.when(w.start)} | "
                  f"{charts.duration(w.seconds) if w.seconds is not None else 'still waiting'} "
                  f"| {cell(w.task or '-')} | {cell(w.message)} |" for w in r.limit_waits]
    if r.scope_changes:
        lines += ["", "## Scope changes", ""] + [f"- {cell(c)}" for c in r.scope_changes]
    if r.notices:
        shown = r.notices[-NOTICES_SHOWN:]
        lines += ["", f"## Notices (last {len(shown)} of {len(r.notices)})", ""]
        lines += [f"- {cell(n)}" for n in shown]
    if r.problems:
        lines += ["", "## Could not read everything", ""] + [f"- {cell(p)}" for p in r.problems]
    return lines


def _receipts(r: Report) -> list[str]:
    """Every session, one row each: what it worked on, how it ended and why, what it cost."""
    if not r.sessions:
        return []
    lines = ["", f"## Sessions ({len(r.sessions)})", "",
             "| session | ended | agent | tasks | outcome | time | cost | turns | reason |",
             "| ---: | --- | --- | --- | --- | ---: | ---: | ---: | --- |"]
    lines += [f"| {s.n if s.n is not None else '-'} | {charts.when(s.end)} | {cell(s.cli)} "
              f"| {cell(', '.join(s.tasks) or '-')} | {cell(s.klass or s.outcome)} "
              f"| {charts.duration(s.duration_s)} | {charts.money(s.cost_usd)} "
              f"| {s.turns if s.turns is not None else '-'} | {cell(s.reason or s.detail or '')} |"
              for s in r.sessions]
    return lines


def render(r: Report) -> str:
    return "\n".join(_summary(r) + _tasks(r) + _sessions(r) + _receipts(r)) + "\n"


__all__ = ["render", "cell"]
