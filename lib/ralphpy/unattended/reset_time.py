"""Owns turning the reset phrase of a usage-limit message into an absolute, aware datetime:
"resets 12pm", "resets 9:30pm", "resets 3am (Europe/Berlin)", "resets Apr 23 at 4pm
(America/Recife)", "resets Jan 21, 5am (Etc/GMT-9)", "Your limit will reset at 5pm
(Europe/Warsaw)", codex's "try again at 6:40 PM" and "try again at Sep 26th, 2026 3:05 PM"
(local time), and the old "usage limit reached|1762952400" epoch form; and the wait Google's
APIs name instead of a time, "Please retry in 37.5s." and gemini's "Suggested retry after 37s."
Knows nothing of where the message came from (usage_limits) or of waiting (limit_wait)."""
from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, timezone, tzinfo

_MONTHS = {m: i for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1)}

# "resets" / "reset at" / "will reset at" / "try again at", then an optional "Apr 23," /
# "Apr 23 at" / "Sep 26th, 2026", then the clock time (12h with am/pm, or 24h), then an
# optional "(Zone/Name)".
_RESET = re.compile(
    r"(?:\breset(?:s)?\s+(?:at\s+|on\s+)?|\btry\s+again\s+at\s+)"
    r"(?:(?P<mon>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(?P<day>\d{1,2})"
    r"(?:st|nd|rd|th)?,?\s+(?:(?P<year>\d{4}),?\s+)?(?:at\s+)?)?"
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<ampm>[ap]\.?m\.?)?"
    r"(?:\s*\((?P<tz>[^()]+)\))?",
    re.IGNORECASE)
# Claude Code before 1.0.x printed the reset as epoch seconds after a pipe.
_EPOCH = re.compile(r"limit reached\|(?P<epoch>\d{9,13})\b", re.IGNORECASE)
# A wait from now, in a Google API's 429 message and gemini's reading of its RetryInfo
# (durations in seconds or milliseconds, as RetryInfo's retryDelay is written).
_RETRY_IN = re.compile(r"\bretry\s+(?:in|after)\s+(?P<amount>\d+(?:\.\d+)?)\s*(?P<unit>ms|s)\b",
                       re.IGNORECASE)
# A date-bearing reset more than this far in the past is read as next year's (Dec -> Jan).
_PAST_DATE_SLACK = timedelta(days=180)
# A clock time that passed less than this long ago is the reset that just happened (the
# message was printed a moment before we read it), not tomorrow's: waiting 24 h would be wrong.
_JUST_PASSED = timedelta(minutes=10)


def from_epoch(value: float | int | str) -> datetime | None:
    """An aware UTC datetime from epoch seconds (milliseconds are recognised by size)."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    if seconds > 1e12:          # milliseconds
        seconds /= 1000.0
    if seconds <= 0:
        return None
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def _zone(name: str | None, local_tz: tzinfo | None) -> tzinfo | None:
    """The named IANA zone, else the local zone (None = system local time). An unknown zone
    name falls back to local time rather than dropping the reset time."""
    if name:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # a named zone is rare: not at start
        try:
            return ZoneInfo(name.strip())
        except (ZoneInfoNotFoundError, ValueError):
            pass
    return local_tz


def _at(day: date, clock: time, zone: tzinfo | None) -> datetime:
    naive = datetime.combine(day, clock)
    # zone None: the system's local time, DST-correct for that date.
    return naive.replace(tzinfo=zone) if zone is not None else naive.astimezone()


def parse_reset(text: str, now: datetime, *, local_tz: tzinfo | None = None) -> datetime | None:
    """The absolute reset time named in `text`, or None when it names none.

    `now` must be aware. A clock time alone means its next occurrence after `now` (tomorrow
    when already past today; one that passed under 10 minutes ago is the reset that just
    happened and is returned as is) in the named zone, else in `local_tz` (default: system local
    time). A month and day mean that date in the year given, else this year, or next year when
    that is over 180 days past; a date-bearing reset that just passed is returned as is (no
    wait)."""
    if now.tzinfo is None:
        raise ValueError("now must be an aware datetime")
    epoch = _EPOCH.search(text)
    if epoch:
        return from_epoch(epoch.group("epoch"))
    match = _RESET.search(text)
    if not match:
        return None
    hour = int(match.group("hour"))
    minute = int(match.group("minute") or 0)
    ampm = (match.group("ampm") or "").replace(".", "").lower()
    if ampm:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if ampm == "pm" else 0)
    elif match.group("minute") is None:
        return None             # a bare number ("resets 5") is not a time
    if hour > 23 or minute > 59:
        return None
    zone = _zone(match.group("tz"), local_tz)
    today = now.astimezone(zone).date() if zone is not None else now.astimezone().date()
    clock = time(hour, minute)
    if match.group("mon"):
        month = _MONTHS[match.group("mon").lower()[:3]]
        year = int(match.group("year") or today.year)
        try:
            candidate = _at(date(year, month, int(match.group("day"))), clock, zone)
            if not match.group("year") and candidate < now - _PAST_DATE_SLACK:
                candidate = _at(date(today.year + 1, month, int(match.group("day"))), clock, zone)
        except ValueError:      # Feb 30 and the like
            return None
        return candidate
    # The first occurrence that is not "long" past: yesterday's when it just passed around
    # midnight, else today's, else tomorrow's.
    for offset in (-1, 0, 1):
        candidate = _at(today + timedelta(days=offset), clock, zone)
        if candidate > now - _JUST_PASSED:
            return candidate
    return candidate


def retry_after(text: str, now: datetime) -> datetime | None:
    """`now` plus the longest wait `text` names ("Please retry in 37.5s.", "Suggested retry
    after 37s."), or None when it names none. The longest, as a message may give the API's
    exact wait and a rounded one."""
    waits = [float(m.group("amount")) / (1000.0 if m.group("unit").lower() == "ms" else 1.0)
             for m in _RETRY_IN.finditer(text)]
    return now + timedelta(seconds=max(waits)) if waits else None


__all__ = ["parse_reset", "retry_after", "from_epoch"]
