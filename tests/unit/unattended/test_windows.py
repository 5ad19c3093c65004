"""The usage windows of Claude Code's rate_limit_event, read defensively, and the pacing rule."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from ralphpy.unattended import windows
from ralphpy.unattended.windows import Window

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=timezone.utc)
EPOCH = int(NOW.timestamp())


def event(**info) -> dict:
    return {"type": "rate_limit_event", "rate_limit_info": {"status": "allowed", **info}}


def test_the_unified_windows_are_read_with_the_last_word_on_each():
    found = windows.from_events([
        event(unifiedWindows={"five_hour": {"utilization": 0.2, "resetsAt": EPOCH + 3600}}),
        event(unifiedWindows={"five_hour": {"utilization": 0.3, "resetsAt": EPOCH + 3600},
                              "seven_day_opus": {"utilization": 0.5, "resetsAt": EPOCH + 86400}}),
    ])
    assert found == {
        "five_hour": Window("five_hour", 0.3, NOW + timedelta(hours=1)),
        "seven_day_opus": Window("seven_day_opus", 0.5, NOW + timedelta(days=1))}


@pytest.mark.parametrize("unified", [
    None, "five_hour", [], {"five_hour": None}, {"five_hour": {}},
    {"five_hour": {"utilization": "0.5", "resetsAt": EPOCH}},
    {"five_hour": {"utilization": True, "resetsAt": EPOCH}},
    {"five_hour": {"utilization": 0.5}}, {"five_hour": {"resetsAt": EPOCH}},
    {"five_hour": {"utilization": float("nan"), "resetsAt": EPOCH}},
    {"five_hour": {"utilization": 0.5, "resetsAt": EPOCH * 1000}},      # millis: not ours
    {"five_hour": {"utilization": -1, "resetsAt": EPOCH}},
    {7: {"utilization": 0.5, "resetsAt": EPOCH}},
    {"overage": {"utilization": 0.5, "resetsAt": EPOCH}},
], ids=repr)
def test_a_missing_partial_or_odd_window_is_skipped_never_an_error(unified):
    assert windows.from_events([event(unifiedWindows=unified), "junk", None, 3]) == {}


def test_a_refused_window_is_spent_until_its_reset():
    found = windows.from_events([event(status="rejected", rateLimitType="seven_day",
                                       resetsAt=EPOCH + 7200)])
    assert found == {"seven_day": Window("seven_day", 1.0, NOW + timedelta(hours=2))}


def test_a_window_within_its_pace_holds_nothing_and_one_ahead_waits_until_it_is_not():
    # 1h of 5h gone (20%): pace 80% allows 16% + one session's 4%
    window = Window("five_hour", 0.2, NOW + timedelta(hours=4))
    assert windows.held_until(window, NOW, 0.8, 0.04) is None
    # 60% used: allowed once (0.6 - 0.04) / 0.8 = 70% of it is gone: 3h30m in, 2h30m from now
    ahead = Window("five_hour", 0.6, NOW + timedelta(hours=4))
    assert windows.held_until(ahead, NOW, 0.8, 0.04) == NOW + timedelta(hours=2, minutes=30)


def test_use_beyond_the_pace_waits_for_the_reset_and_a_past_or_unknown_window_holds_nothing():
    spent = Window("seven_day", 1.0, NOW + timedelta(days=2))
    assert windows.held_until(spent, NOW, 0.8, 0.0) == NOW + timedelta(days=2)
    assert windows.held_until(Window("five_hour", 1.0, NOW), NOW, 0.8, 0.0) is None
    assert windows.held_until(Window("monthly", 1.0, NOW + timedelta(days=3)), NOW, 0.8,
                              0.0) is None


def test_typical_use_is_the_median_of_the_sessions():
    assert windows.typical([]) == 0.0
    assert windows.typical([0.01, 0.05, 0.02]) == 0.02
