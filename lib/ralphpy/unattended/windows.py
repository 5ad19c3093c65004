"""Owns the usage windows an agent CLI reports (Claude Code's `rate_limit_event`:
`rate_limit_info.unifiedWindows.<name>.utilization` / `.resetsAt`, and the window a refusal
names) and the pacing rule over them (docs/night-shift.md, "pace"): a window whose use runs
ahead of `pace` x the share of it already gone, plus one session's typical use, holds the next
session until it no longer does. The CLI marks `unifiedWindows` internal, so every field is
read defensively: a window missing, partial or of an odd type is skipped, never an error.
Knows nothing of agents, waits or the run state (unattended.shift)."""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable

HOUR = timedelta(hours=1)
# How long each window lasts: the CLI's names (five_hour, seven_day and its model-specific
# weekly ones, seven_day_opus, seven_day_sonnet, ...). Another name: its length unknown, so it
# is shown but cannot be paced (only its refusal counts).
_LENGTHS = (("five_hour", 5 * HOUR), ("seven_day", 7 * 24 * HOUR))
_NOT_WINDOWS = ("overage",)          # extra usage: money, not a window to spread
_ROUNDING = 1e-9                     # 0.8 x 0.2 + 0.04 is not quite 0.2 in floating point


def length(name: str) -> timedelta | None:
    for prefix, span in _LENGTHS:
        if name == prefix or name.startswith(prefix + "_"):
            return span
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _moment(value: Any) -> datetime | None:
    seconds = _number(value)
    if seconds is None or not 0 < seconds < 1e11:      # epoch seconds, not millis or junk
        return None
    return datetime.fromtimestamp(seconds, timezone.utc)


@dataclass(frozen=True)
class Window:
    name: str
    utilization: float               # a fraction: 0.42 is 42% of the window used
    resets_at: datetime

    def gone(self, now: datetime) -> float | None:
        """The share of the window already elapsed (0..1), or None when its length is unknown."""
        span = length(self.name)
        if span is None:
            return None
        left = (self.resets_at - now) / span
        return min(1.0, max(0.0, 1.0 - left))

    def to_dict(self) -> dict[str, Any]:
        return {"utilization": round(self.utilization, 4),
                "resets_at": self.resets_at.isoformat()}

    @classmethod
    def from_dict(cls, name: str, data: Any) -> "Window | None":
        if not isinstance(data, dict):
            return None
        use = _number(data.get("utilization"))
        try:
            reset = datetime.fromisoformat(str(data.get("resets_at")))
        except ValueError:
            return None
        if use is None or reset.tzinfo is None:
            return None
        return cls(name, use, reset)


def _one(name: Any, data: Any) -> Window | None:
    if not isinstance(name, str) or name in _NOT_WINDOWS or not isinstance(data, dict):
        return None
    use, reset = _number(data.get("utilization")), _moment(data.get("resetsAt"))
    if use is None or reset is None or use < 0:
        return None
    if data.get("status") == "rejected":
        use = max(use, 1.0)
    return Window(name, use, reset)


def from_events(events: Iterable[Any]) -> dict[str, Window]:
    """The windows the session's rate_limit_events reported, the last word on each: those of
    `unifiedWindows`, and a refused (`rejected`) `rateLimitType` as spent until its reset."""
    seen: dict[str, Window] = {}
    for event in events or []:
        if not isinstance(event, dict):
            continue
        info = event.get("rate_limit_info")
        info = info if isinstance(info, dict) else event
        unified = info.get("unifiedWindows")
        if isinstance(unified, dict):
            for name, data in unified.items():
                if (window := _one(name, data)) is not None:
                    seen[name] = window
        kind = info.get("rateLimitType")
        if isinstance(kind, str) and info.get("status") == "rejected":
            reset = _moment(info.get("resetsAt"))
            if reset is not None and kind not in _NOT_WINDOWS:
                seen[kind] = Window(kind, max(1.0, seen[kind].utilization if kind in seen
                                              else 1.0), reset)
    return seen


def typical(uses: Iterable[float]) -> float:
    """One session's typical use of a window: the median of this run's sessions' (0: none yet)."""
    uses = [u for u in uses if u >= 0]
    return statistics.median(uses) if uses else 0.0


def held_until(window: Window, now: datetime, pace: float, per_session: float) -> datetime | None:
    """When `window` lets the next session start under `pace` (a fraction: 0.8 for 80%), or
    None when it does now: its use must be at most pace x the share gone + one session's use.
    A window past its reset, or of unknown length, holds nothing. Use beyond what even the
    whole window allows (above pace + a session) waits for its reset."""
    gone = window.gone(now)
    if gone is None or window.resets_at <= now:
        return None
    if window.utilization <= pace * gone + per_session + _ROUNDING:
        return None
    share = (window.utilization - per_session) / pace          # the share gone that allows it
    if share >= 1.0:
        return window.resets_at
    until = window.resets_at - length(window.name) * (1.0 - share)
    return until if until > now else None


def describe(window: Window, now: datetime) -> str:
    """`five_hour 62% used, 40% of it gone`"""
    gone = window.gone(now)
    tail = f", {gone:.0%} of it gone" if gone is not None else ""
    return f"{window.name} {window.utilization:.0%} used{tail}"


__all__ = ["Window", "from_events", "typical", "held_until", "describe", "length"]
