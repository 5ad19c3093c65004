"""The one duration grammar (flags and ralph.yml: --session-timeout, --max-runtime, ...)."""
from __future__ import annotations

import pytest

from ralphpy.durations import format_duration, parse_duration


@pytest.mark.parametrize("text,seconds", [
    ("90", 90), ("0", 0), ("0.5", 0.5), ("90s", 90), ("15m", 900), ("8h", 28800),
    ("1h30m", 5400), ("2d", 172800), (" 2M ", 120), ("0.5s", 0.5), ("1h 30m", 5400),
    ("1H 30M", 5400), ("30 s", 30), ("1d 2h 3m 4s", 93784),
], ids=str)
def test_durations_parse_to_seconds(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", [
    "", "abc", "-5", "5x", "h", "1h 30", "1h30", "1.5.2s", "1 30", "s5",
    "\u0661h", "\u0661",                            # an Arabic-Indic one: ASCII digits only
    "1m1h", "30s 1m", "1h 1h", "1d 2h 3m 4s 5s",     # parts out of order, a unit twice
], ids=repr)
def test_malformed_durations_are_refused_with_a_hint(text):
    with pytest.raises(ValueError, match="use e.g. 90s, 15m, 8h or 1h30m"):
        parse_duration(text)


@pytest.mark.parametrize("seconds,text", [
    (7, "7s"), (125, "2m 05s"), (3725, "1h 02m"), (90000, "1d 1h"), (-3, "0s"),
], ids=str)
def test_durations_format_short_for_log_lines(seconds, text):
    assert format_duration(seconds) == text
