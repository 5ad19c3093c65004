"""Owns the one duration grammar of ralph.py, the same on the command line, in ralph.yml and in
the task CLI (`--max-runtime "1h 30m"`, `max_runtime: 1h 30m` and `task ask --timeout 1h30m`
all mean 5400 seconds), and the short
human form used in log lines ("2h 05m"). Knows nothing of which setting a value belongs to;
the messages for a bad value are the settings table's.

Grammar (case-insensitive, surrounding blanks ignored):

    duration := number                      seconds: "90", "1.5", "0"
              | part (blank* part)*         "90s", "15m", "1h30m", "1h 30m", "2d", "30 s"
    part     := number blank* unit
    number   := digits ["." digits]
    unit     := s | m | h | d

A bare number is seconds (timeout(1)'s reading; tests use short values). 0 is a duration:
settings use it for "off". Negative numbers, other units and a unit-less number after a part
("1h 30") are refused, and so are parts out of the order d, h, m, s or a unit given twice
("1m1h", "1h 1h"): a typo for "1h1m", or a value edited by hand, not a sum anyone means."""
from __future__ import annotations

import re

_UNIT_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_UNIT_ORDER = "dhms"                 # the order parts are written in, each unit once
_NUMBER = r"[0-9]+(?:\.[0-9]+)?"     # ASCII digits only: \d takes "١" (Arabic-Indic) too
_PART = re.compile(rf"({_NUMBER})\s*([smhd])")
_BARE = re.compile(_NUMBER)
_PARTS = re.compile(rf"(?:{_NUMBER}\s*[smhd]\s*)+")


def parse_duration(text: str) -> float:
    """Seconds in `text` (see the grammar above); ValueError when it is not a duration."""
    value = text.strip().lower()
    if _BARE.fullmatch(value):
        return float(value)
    parts = _PART.findall(value) if _PARTS.fullmatch(value) else []
    units = [unit for _, unit in parts]
    if not parts or units != sorted(set(units), key=_UNIT_ORDER.index):
        raise ValueError(f"not a duration: {text!r} (use e.g. 90s, 15m, 8h or 1h30m)")
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)


def format_duration(seconds: float) -> str:
    """`3725` -> "1h 02m", `125` -> "2m 05s", `7` -> "7s", `90000` -> "1d 1h"."""
    total = max(0, int(round(seconds)))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


__all__ = ["parse_duration", "format_duration"]
