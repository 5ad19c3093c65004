"""Owns the report's charts as inline SVG: a line chart (cumulative cost and tasks done over
time), a bar chart (session durations) and stacked bars (outcomes per hour). Colours are SVG
presentation attributes, not style attributes, so the page's Content-Security-Policy can refuse
every inline style but its own stylesheet. Every text is escaped here. Knows nothing of the
rest of the page."""
from __future__ import annotations

from collections import Counter
from html import escape

from ralphpy.report import charts

W, H, PAD = 600, 220, 36
COLOURS = {"success": "#2e7d32", "completed": "#2e7d32", "failure": "#c62828",
           "failed": "#c62828", "timeout": "#ef6c00", "idle_timeout": "#f9a825",
           "usage_limit": "#6a1b9a", "usage_disabled": "#4a148c", "interrupted": "#546e7a",
           "no task": "#90a4ae", "running": "#1565c0"}
OTHER = "#78909c"


def _frame(chart_id: str, label: str, body: list[str], legend: list[tuple[str, str]]) -> str:
    keys = "".join(f'<span class="key"><svg width="10" height="10" aria-hidden="true">'
                   f'<rect width="10" height="10" fill="{colour}"/></svg> {escape(name)}</span>'
                   for name, colour in legend)
    return (f'<figure class="chart" id="{chart_id}"><figcaption>{escape(label)}</figcaption>'
            f'<svg viewBox="0 0 {W} {H}" role="img" aria-label="{escape(label)}" '
            f'preserveAspectRatio="none" class="plot">'
            f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - 8}" y2="{H - PAD}" stroke="#999"/>'
            f'<line x1="{PAD}" y1="8" x2="{PAD}" y2="{H - PAD}" stroke="#999"/>'
            + "".join(body) + f'</svg><div class="legend">{keys}</div></figure>')


def _text(x: float, y: float, text: str, anchor: str = "start") -> str:
    return (f'<text x="{x:.0f}" y="{y:.0f}" font-size="11" fill="#444" '
            f'text-anchor="{anchor}">{escape(text)}</text>')


def cumulative(points: list[tuple[float, float, int]]) -> str:
    label = "Cumulative cost and tasks done over time"
    if len(points) < 2:
        return _frame("chart-cost", label, [_text(W / 2, H / 2, "no session ended yet",
                                                  "middle")], [])
    span = max(p[0] for p in points) or 1.0
    top_cost = max(p[1] for p in points) or 1.0
    top_done = max(p[2] for p in points) or 1
    sx = (W - PAD - 8) / span
    sy = H - 2 * PAD + 8

    def line(values: list[float], top: float, colour: str, cls: str) -> str:
        coords = " ".join(f"{PAD + p[0] * sx:.1f},{H - PAD - v / top * sy:.1f}"
                          for p, v in zip(points, values))
        return (f'<polyline class="{cls}" points="{coords}" fill="none" stroke="{colour}" '
                f'stroke-width="2"/>')
    body = [line([p[1] for p in points], top_cost, "#1565c0", "series-cost"),
            line([float(p[2]) for p in points], float(top_done), "#2e7d32", "series-done")
            .replace("/>", ' stroke-dasharray="6 4"/>'),
            _text(PAD + 2, 18, f"{charts.money(top_cost)} / {top_done} done"),
            _text(W - 8, H - PAD + 16, charts.duration(span), "end"),
            _text(PAD, H - PAD + 16, "0")]
    return _frame("chart-cost", label, body, [("cost", "#1565c0"), ("tasks done", "#2e7d32")])


def durations(values: list[float], total: int) -> str:
    label = "Session durations" + (f" (longest of each stretch, {total} sessions)"
                                   if total > len(values) else "")
    if not values:
        return _frame("chart-durations", label, [_text(W / 2, H / 2, "no session ended yet",
                                                       "middle")], [])
    top = max(values) or 1.0
    step = (W - PAD - 8) / len(values)
    scale, width = (H - 2 * PAD) / top, max(0.5, step * 0.8)
    body = [f'<rect class="bar" x="{PAD + i * step:.1f}" y="{H - PAD - v * scale:.1f}" '
            f'width="{width:.1f}" height="{v * scale:.1f}" fill="#1565c0"/>'
            for i, v in enumerate(values)]
    body.append(_text(PAD + 2, 18, f"longest {charts.duration(top)}"))
    return _frame("chart-durations", label, body, [])


def outcomes(hours: float, bars: list[Counter]) -> str:
    label = "Session outcomes per " + ("hour" if hours == 1 else f"{hours:.0f} hours")
    if not bars:
        return _frame("chart-outcomes", label, [_text(W / 2, H / 2, "no session ended yet",
                                                      "middle")], [])
    top = max(sum(b.values()) for b in bars) or 1
    step = (W - PAD - 8) / len(bars)
    names = sorted({k for b in bars for k in b}, key=lambda k: (k not in COLOURS, k))
    body = []
    for i, bar in enumerate(bars):
        y = H - PAD
        for name in names:
            height = bar.get(name, 0) / top * (H - 2 * PAD)
            if height:
                y -= height
                body.append(f'<rect class="bar outcome" x="{PAD + i * step:.1f}" y="{y:.1f}" '
                            f'width="{max(0.5, step * 0.8):.1f}" height="{height:.1f}" '
                            f'fill="{COLOURS.get(name, OTHER)}"><title>{escape(name)}: '
                            f'{bar[name]}</title></rect>')
    body.append(_text(PAD + 2, 18, f"at most {top} sessions"))
    return _frame("chart-outcomes", label, body,
                  [(name, COLOURS.get(name, OTHER)) for name in names])


__all__ = ["cumulative", "durations", "outcomes"]
