"""Owns the duration syntax of ralph.py's flags (`--session-timeout 90s`, `--max-runtime 8h`,
`--max-limit-wait 1h30m`) and the short human form used in log lines ("2h 05m"). Knows
nothing of which flag a value belongs to; config validation and messages are config's."""
from __future__ import annotations

import re

_UNIT_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
# One or more <number><unit> parts, e.g. "1h30m", "0.5s"; a bare number means seconds
# (issue 7 is silent; seconds match timeout(1) and let tests use short values).
_PART = re.compile(r"(\d+(?:\.\d+)?)([smhd])")


def parse_duration(text: str) -> float:
    """Seconds in `text` ("90", "90s", "15m", "8h", "1h30m", "2d"); ValueError when malformed
    or negative. 0 is allowed: callers use it for "off"."""
    value = text.strip().lower()
    if re.fullmatch(r"\d+(?:\.\d+)?", value):
        return float(value)
    if not value or not re.fullmatch(r"(?:\d+(?:\.\d+)?[smhd])+", value):
        raise ValueError(f"not a duration: {text!r} (use e.g. 90s, 15m, 8h or 1h30m)")
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in _PART.findall(value))


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
