"""Owns "now" for the night shift's decisions (pacing, fallback, the resets they wait for)
and the waits they make: the one seam through which tests move time. With
RALPH_TEST_CLOCK_FILE set, now is the epoch second the file holds and a wait adds its length
to the file instead of sleeping (a test of a 5-hour window runs in a second); the variable is
for tests and documented as such (docs/night-shift.md, "Time"). Knows nothing of windows or
agents."""
from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Mapping

FAKE = "RALPH_TEST_CLOCK_FILE"


def _fake(environ: Mapping[str, str]) -> Path | None:
    value = environ.get(FAKE, "")
    return Path(value) if value else None


def now(environ: Mapping[str, str] = os.environ) -> datetime:
    """The current time (aware, UTC): the wall clock, or the test clock's file."""
    path = _fake(environ)
    if path is None:
        return datetime.now(timezone.utc)
    return datetime.fromtimestamp(float(path.read_text().strip() or 0), timezone.utc)


def wait(seconds: float, stop: Callable[[float], bool],
         environ: Mapping[str, str] = os.environ) -> bool:
    """Block up to `seconds` (stop(seconds) -> True when a stop was requested, as
    Night._wait); under the test clock, the file moves on by `seconds` at once (a stop
    requested meanwhile is still seen: stop(0))."""
    path = _fake(environ)
    if path is None:
        return stop(seconds)
    moved = float(path.read_text().strip() or 0) + max(seconds, 0.0)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f"{moved:.3f}\n")
    tmp.replace(path)                     # a reader never sees half a number
    return stop(0.0)


__all__ = ["FAKE", "now", "wait"]
