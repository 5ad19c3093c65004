"""Owns what every renderer shares: the chart series of a report (cumulative cost and tasks
done over time, session durations, outcomes per hour), each cut to a bounded number of points
so that 10,000 sessions draw as fast as 10, the task order, and the number and time formats.
Knows nothing of SVG, Markdown or terminals."""
from __future__ import annotations

import math
from collections import Counter
from datetime import datetime, timezone

from ralphpy.durations import format_duration
from ralphpy.report.model import Report, Task

MAX_POINTS = 240
MAX_BARS = 48
_RANK = {"failed": 0, "held": 1, "deleted": 2, "running": 3, "not finished": 4, "done": 5}


def _thin(items: list, limit: int) -> list:
    if len(items) <= limit:
        return items
    step = (len(items) - 1) / (limit - 1)
    return [items[round(i * step)] for i in range(limit)]


def cumulative(report: Report, limit: int = MAX_POINTS) -> list[tuple[float, float, int]]:
    """(seconds since the start, cost so far, tasks done so far) at each session end."""
    ends = sorted((s for s in report.sessions if s.end is not None), key=lambda s: s.end)
    start = report.started or (ends[0].end if ends else 0.0)
    points, cost, done = [(0.0, 0.0, 0)], 0.0, 0
    for s in ends:
        cost += s.cost_usd or 0.0
        done += len(s.tasks) if s.outcome == "completed" else 0
        points.append((max(0.0, s.end - start), cost, done))
    return _thin(points, limit)


def durations(report: Report, limit: int = MAX_POINTS) -> list[float]:
    """Session durations in order; more sessions than points: the longest of each stretch."""
    values = [s.duration_s or 0.0 for s in report.sessions if s.duration_s is not None]
    if len(values) <= limit:
        return values
    size = math.ceil(len(values) / limit)
    return [max(values[i:i + size]) for i in range(0, len(values), size)]


def per_hour(report: Report, limit: int = MAX_BARS) -> tuple[float, list[Counter]]:
    """(hours per bar, outcome counts per bar) by session end, from the run's start."""
    ends = [s for s in report.sessions if s.end is not None]
    if not ends or report.started is None:
        return 1.0, []
    span_h = max(s.end for s in ends) - report.started
    hours = max(1, math.ceil(span_h / 3600 / limit)) if span_h > 0 else 1
    bars = [Counter() for _ in range(int(max(0.0, span_h) // (hours * 3600)) + 1)]
    for s in ends:
        bars[min(len(bars) - 1, int(max(0.0, s.end - report.started) // (hours * 3600)))][
            s.klass or s.outcome] += 1
    return float(hours), bars


def ordered_tasks(report: Report) -> list[Task]:
    """What needs a look first: failed, held, deleted, running, unfinished, then done; each
    in the order the run met them."""
    tasks = list(report.tasks.values())
    return sorted(tasks, key=lambda t: _RANK.get(t.outcome, _RANK["not finished"]))


def sparkline(values: list[float], width: int = 48) -> str:
    if not values:
        return ""
    if len(values) > width:
        size = math.ceil(len(values) / width)
        values = [max(values[i:i + size]) for i in range(0, len(values), size)]
    top = max(values) or 1.0
    blocks = "\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588"
    return "".join(blocks[min(7, int(v / top * 7.999))] for v in values)


def duration(seconds: float | None) -> str:
    return "-" if seconds is None else format_duration(seconds)


def money(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}"


def when(epoch: float | None) -> str:
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def status_line(report: Report) -> str:
    if report.status == "running":
        return "still running (this report shows what is recorded so far)"
    if report.status == "interrupted":
        return "not running and not ended: interrupted (ralph plan/build resumes it)"
    if report.status == "ended":
        return f"ended {when(report.ended)}: {report.exit_reason or '-'} (exit {report.exit_code})"
    return "unknown (no run state)"


__all__ = ["cumulative", "durations", "per_hour", "ordered_tasks", "sparkline", "duration",
           "money", "when", "status_line", "MAX_POINTS"]
