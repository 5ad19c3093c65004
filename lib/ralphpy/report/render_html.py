"""Owns the HTML report (report.html): one self-contained page (no script, no network: inline
SVG charts and one stylesheet), readable on a phone. Its Content-Security-Policy allows nothing
but that stylesheet, by its hash: even text that got past the escaping could run no code and
load nothing. Every untrusted text (titles, reasons, agent text) is escaped, its control
characters shown (ralphpy.inert), and a long unbroken word wraps in its cell. The task table
stops at TASK_ROWS rows, so a run of 10,000 sessions stays a page of well under 2 MB."""
from __future__ import annotations

import base64
import hashlib
from html import escape

from ralphpy import inert
from ralphpy.report import charts, svg
from ralphpy.report.model import BILLING_TEXT, Report

TASK_ROWS = 2000
SESSION_ROWS = 300
CELL_CHARS = 300

STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222;
background:#fafafa}
main{max-width:980px;margin:0 auto;padding:12px}
h1{font-size:1.3em;word-break:break-all}h2{font-size:1.1em;margin-top:1.6em}
.figures{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:8px;
margin:0}
.figures div{background:#fff;border:1px solid #ddd;border-radius:6px;padding:6px 8px}
.figures dt{font-size:.8em;color:#666}.figures dd{margin:0;font-weight:600}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(290px,1fr));gap:12px}
.chart{margin:0;background:#fff;border:1px solid #ddd;border-radius:6px;padding:6px}
.chart figcaption{font-size:.9em;color:#444}.plot{width:100%;height:180px;display:block}
.legend{font-size:.8em;color:#444}.key{margin-right:10px;white-space:nowrap}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}
table{border-collapse:collapse;font-size:.85em;background:#fff;min-width:100%}
th,td{border:1px solid #ddd;padding:4px 6px;text-align:left;vertical-align:top;
overflow-wrap:anywhere}
td.n{text-align:right;white-space:nowrap}th{background:#eee;position:sticky;top:0}
tr.failed td:first-child{border-left:4px solid #c62828}
tr.held td:first-child{border-left:4px solid #ef6c00}
tr.deleted td:first-child{border-left:4px solid #6d4c41}
tr.done td:first-child{border-left:4px solid #2e7d32}
.why{max-width:420px;overflow-wrap:anywhere}.note{color:#666;font-size:.85em}
ul{padding-left:1.2em}
"""
_STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
CSP = (f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; img-src data:; "
       "base-uri 'none'; form-action 'none'")


def _e(text: object, limit: int | None = CELL_CHARS) -> str:
    value = inert.shown("" if text is None else str(text), lines=True)   # no raw control byte
    if limit is not None and len(value) > limit:
        value = value[:limit - 1] + "\u2026"
    return escape(value, quote=True)


def _figures(r: Report) -> str:
    items = [
        ("Status", charts.status_line(r)), ("Mode", r.mode or "-"),
        ("Started", charts.when(r.started)), ("Lasted", charts.duration(r.elapsed_s)),
        ("Sessions", str(len(r.sessions))), ("Tasks done", f"{r.done} of {len(r.tasks)}"),
        ("Done per hour", f"{r.tasks_per_hour:.2f}" if r.tasks_per_hour is not None else "-"),
        ("Cost", charts.money(r.cost_usd)), ("Cost per done task", charts.money(r.cost_per_done)),
        ("Waiting on limits", f"{charts.duration(r.limit_wait_s)} ({len(r.limit_waits)})"),
        *r.night_shift(),                    # models and usage windows (docs/night-shift.md)
    ]
    cells = "".join(f"<div><dt>{_e(k)}</dt><dd>{_e(v)}</dd></div>" for k, v in items)
    return (f'<dl class="figures" id="figures">{cells}</dl>'
            f'<p class="note">Cost: {_e(BILLING_TEXT[r.billing])}.</p>')


def _charts(r: Report) -> str:
    total = sum(1 for s in r.sessions if s.duration_s is not None)
    hours, bars = charts.per_hour(r)
    return ('<section class="charts" id="charts">'
            + svg.cumulative(charts.cumulative(r)) + svg.durations(charts.durations(r), total)
            + svg.outcomes(hours, bars) + "</section>")


def _task_table(r: Report) -> str:
    tasks = charts.ordered_tasks(r)
    if not tasks:
        return '<h2>Tasks</h2><p id="no-tasks">No task was worked on.</p>'
    head = ("<tr><th>Task</th><th>Title</th><th>Outcome</th><th>Attempts</th><th>Commits</th>"
            "<th>Cost</th><th>Tokens</th><th>Time</th><th>Limit waits</th>"
            "<th>Reasons and notices</th><th>Verify</th></tr>")
    rows = []
    for t in tasks[:TASK_ROWS]:
        why = [f"held: {t.hold_reason}"] if t.hold_reason else []
        why += [f"pull request {t.pull}"] if t.pull else []
        why += [f"issue {t.issue}"] if t.issue else []
        why += t.fail_reasons[-3:] + t.notices[-3:]
        why_html = "<br>".join(_e(w) for w in why)
        rows.append(
            f'<tr class="{_e(t.outcome.replace(" ", "-"))}"><td>{_e(t.id, 80)}</td>'
            f"<td>{_e(t.title or '')}</td><td>{_e(t.outcome)}</td><td class=n>{t.attempts}</td>"
            f"<td>{_e(', '.join(c[:10] for c in t.commits))}</td>"
            f"<td class=n>{charts.money(t.cost_usd)}</td>"
            f"<td class=n>{t.tokens if t.tokens is not None else '-'}</td>"
            f"<td class=n>{charts.duration(t.wall_s)}</td><td class=n>{t.limit_waits}</td>"
            f'<td class="why">{why_html}</td><td>{_e(t.verify or "-")}</td></tr>')
    more = (f'<p class="note">Showing the first {TASK_ROWS} of {len(tasks)} tasks (failed and '
            "held first); report.md and <code>ralph report --json</code> list all.</p>"
            if len(tasks) > TASK_ROWS else "")
    return (f"<h2>Tasks ({len(tasks)})</h2>{more}<div class=\"scroll\">"
            f'<table id="task-table"><thead>{head}</thead><tbody>{"".join(rows)}</tbody>'
            "</table></div>")


def _session_table(r: Report) -> str:
    """The latest sessions, newest first: what each worked on, how it ended and why."""
    if not r.sessions:
        return ""
    shown = r.sessions[-SESSION_ROWS:][::-1]
    rows = "".join(
        f"<tr><td class=n>{_e(s.n)}</td><td>{charts.when(s.end)}</td><td>{_e(s.cli, 60)}</td>"
        f"<td>{_e(', '.join(s.tasks) or '-', 120)}</td><td>{_e(s.klass or s.outcome)}</td>"
        f"<td class=n>{charts.duration(s.duration_s)}</td>"
        f"<td class=n>{charts.money(s.cost_usd)}</td>"
        f'<td class="why">{_e(s.reason or s.detail or "")}</td></tr>' for s in shown)
    note = (f" (the latest {SESSION_ROWS} of {len(r.sessions)}; report.md lists all)"
            if len(r.sessions) > SESSION_ROWS else "")
    return (f"<h2>Sessions{note}</h2><div class=\"scroll\"><table id=\"session-table\"><thead>"
            "<tr><th>#</th><th>Ended</th><th>Agent</th><th>Tasks</th><th>Outcome</th><th>Time</th>"
            f"<th>Cost</th><th>Reason</th></tr></thead><tbody>{rows}</tbody></table></div>")


def _lists(r: Report) -> str:
    parts = []
    outcomes = r.outcomes()
    if outcomes:
        parts.append('<h2>How the sessions ended</h2><ul id="outcomes">' + "".join(
            f"<li>{_e(k)}: {v}</li>" for k, v in outcomes.most_common()) + "</ul>")
    if r.stops:
        parts.append('<h2>Stops</h2><ul id="stops">'
                     + "".join(f"<li>{_e(s)}</li>" for s in r.stops) + "</ul>")
    longest = r.longest(5)
    if longest:
        parts.append("<h2>Longest sessions</h2><ul>" + "".join(
            f"<li>#{_e(s.n)}: {charts.duration(s.duration_s)}, {_e(', '.join(s.tasks) or '-')}"
            f", {_e(s.klass or s.outcome)}, {charts.money(s.cost_usd)}</li>" for s in longest)
            + "</ul>")
    if r.limit_waits:
        parts.append("<h2>Usage-limit waits</h2><ul>" + "".join(
            f"<li>{charts.when(w.start)}: "
            f"{charts.duration(w.seconds) if w.seconds is not None else 'still waiting'}, "
            f"{_e(w.message)}</li>" for w in r.limit_waits[-50:]) + "</ul>")
    if r.scope_changes:
        parts.append("<h2>Scope changes</h2><ul>" + "".join(
            f"<li>{_e(c)}</li>" for c in r.scope_changes[-50:]) + "</ul>")
    if r.notices:
        parts.append(f"<h2>Notices (last {min(50, len(r.notices))} of {len(r.notices)})</h2>"
                     "<ul>" + "".join(f"<li>{_e(n)}</li>" for n in r.notices[-50:]) + "</ul>")
    if r.problems:
        parts.append('<h2>Could not read everything</h2><ul id="problems">'
                     + "".join(f"<li>{_e(p)}</li>" for p in r.problems) + "</ul>")
    return "".join(parts)


def render(r: Report) -> str:
    title = f"ralph report: {r.title}"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(title, None)}</title><style>{STYLE}</style></head><body><main>"
            f"<h1>{_e(title, None)}</h1>{_figures(r)}{_charts(r)}{_task_table(r)}{_lists(r)}"
            f"{_session_table(r)}"
            "</main></body></html>\n")


__all__ = ["render", "CSP", "TASK_ROWS"]
