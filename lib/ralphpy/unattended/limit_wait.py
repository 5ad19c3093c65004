"""Owns waiting out a usage limit: until the reset time plus a margin, a log line
every few minutes, an early return when a stop is requested, and BudgetExhausted when the
wait would exceed its cap (--max-limit-wait, or what is left of --max-runtime). Knows
nothing of detecting limits (usage_limits) or of the run state that persists reset_at."""
from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Callable

from ralphpy.durations import format_duration
from ralphpy.errors import BudgetExhausted

RESUMED = "resumed"
STOPPED = "stopped"


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def _sleep(seconds: float) -> bool:
    time.sleep(seconds)
    return False


def _when(moment: datetime) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M %Z")


def wait_until(reset_at: datetime, *, margin: timedelta = timedelta(minutes=2),
               max_wait: timedelta | None = timedelta(hours=6),
               cap_flag: str = "--max-limit-wait",
               clock: Callable[[], datetime] = _utc_now,
               wait: Callable[[float], bool] | None = None,
               log: Callable[[str], None] = lambda line: None,
               log_every: timedelta = timedelta(minutes=5),
               poll: timedelta = timedelta(seconds=5)) -> str:
    """Wait until reset_at + margin; returns RESUMED, or STOPPED when `wait` reports a stop.

    `wait(seconds) -> bool` blocks up to `seconds` and returns True when a stop was requested
    (threading.Event.wait has exactly this contract); the default sleeps. The clock is the
    wall clock (aware datetimes), re-read after every short wait, so a machine that slept
    through the reset resumes at once. Before waiting, raises BudgetExhausted when the wait
    is longer than max_wait (None: no cap), naming cap_flag. Log lines are plain lines (no
    carriage return): they end up in nohup.out and CI logs."""
    if wait is None:
        wait = _sleep
    target = reset_at + margin
    now = clock()
    remaining = (target - now).total_seconds()
    if max_wait is not None and remaining > max_wait.total_seconds():
        raise BudgetExhausted(
            f"usage limit resets at {_when(reset_at)}, {format_duration(remaining)} from now, "
            f"longer than {cap_flag} {format_duration(max_wait.total_seconds())}; "
            f"start the run again after the reset")
    if remaining <= 0:
        # Said all the same: the record shows why the next session starts without a wait.
        log("Usage limit: reset time already passed, resuming")
        return RESUMED
    log(f"Usage limit: waiting until {_when(target)} ({format_duration(remaining)})")
    next_log = now + log_every
    while True:
        now = clock()
        remaining = (target - now).total_seconds()
        if remaining <= 0:
            log("Usage limit: wait over, resuming")
            return RESUMED
        if now >= next_log:
            log(f"Usage limit: still waiting, {format_duration(remaining)} left "
                f"(until {_when(target)})")
            next_log = now + log_every
        if wait(min(remaining, poll.total_seconds())):
            log("Usage limit: stop requested while waiting")
            return STOPPED


__all__ = ["wait_until", "RESUMED", "STOPPED"]
