"""Waiting out a usage limit on a fake clock: until reset + margin, a log line
every few minutes, stop requests honoured, BudgetExhausted beyond the cap. No real waiting."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from ralphpy.errors import EXIT_BUDGET, BudgetExhausted
from ralphpy.unattended.limit_wait import RESUMED, STOPPED, wait_until

START = datetime(2026, 11, 22, 10, 0, tzinfo=timezone.utc)


class FakeClock:
    """The wall clock, advanced only by wait(); records every wait."""

    def __init__(self, stop_after: float | None = None):
        self.now = START
        self.waits: list[float] = []
        self.stop_after = stop_after

    def clock(self) -> datetime:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.waits.append(seconds)
        self.now += timedelta(seconds=seconds)
        return self.stop_after is not None and sum(self.waits) >= self.stop_after


def test_the_wait_lasts_until_reset_plus_margin_and_resumes():
    fake, lines = FakeClock(), []
    result = wait_until(START + timedelta(minutes=30), margin=timedelta(minutes=2),
                        clock=fake.clock, wait=fake.wait, log=lines.append)
    assert result == RESUMED
    assert fake.now == START + timedelta(minutes=32)
    assert max(fake.waits) <= 5                     # short polls, so stops are honoured
    assert lines[0].startswith("Usage limit: waiting until ") and lines[0].endswith("(32m 00s)")
    assert lines[-1] == "Usage limit: wait over, resuming"


def test_a_log_line_is_written_every_few_minutes_without_carriage_returns():
    fake, lines = FakeClock(), []
    wait_until(START + timedelta(minutes=20), margin=timedelta(0), clock=fake.clock,
               wait=fake.wait, log=lines.append, log_every=timedelta(minutes=5))
    progress = [line for line in lines if "still waiting" in line]
    assert len(progress) == 3                       # at 5, 10 and 15 minutes
    assert "15m 00s left" in progress[0]
    assert not any("\r" in line for line in lines)


def test_a_stop_request_ends_the_wait_early():
    fake, lines = FakeClock(stop_after=60), []
    result = wait_until(START + timedelta(hours=1), clock=fake.clock, wait=fake.wait,
                        log=lines.append)
    assert result == STOPPED
    assert fake.now < START + timedelta(minutes=2)
    assert lines[-1] == "Usage limit: stop requested while waiting"


def test_a_reset_time_already_past_needs_no_wait():
    fake = FakeClock()
    lines: list[str] = []
    assert wait_until(START - timedelta(minutes=5), clock=fake.clock, wait=fake.wait,
                      log=lines.append) == RESUMED
    assert fake.waits == []
    assert lines == ["Usage limit: reset time already passed, resuming"]


def test_a_wait_longer_than_the_cap_raises_budget_exhausted_before_waiting():
    fake = FakeClock()
    with pytest.raises(BudgetExhausted) as err:
        wait_until(START + timedelta(hours=30), max_wait=timedelta(hours=6),
                   clock=fake.clock, wait=fake.wait)
    assert err.value.exit_code == EXIT_BUDGET
    assert "longer than --max-limit-wait 6h 00m" in str(err.value)
    assert fake.waits == []


def test_the_cap_message_names_the_flag_that_caps_it():
    fake = FakeClock()
    with pytest.raises(BudgetExhausted, match="--max-runtime"):
        wait_until(START + timedelta(hours=2), max_wait=timedelta(minutes=10),
                   cap_flag="--max-runtime", clock=fake.clock, wait=fake.wait)


def test_no_cap_waits_as_long_as_needed():
    fake = FakeClock()
    assert wait_until(START + timedelta(days=3), max_wait=None, clock=fake.clock,
                      wait=fake.wait, poll=timedelta(hours=1)) == RESUMED


def test_a_machine_that_slept_past_the_reset_resumes_at_once():
    fake, lines = FakeClock(), []

    def wait(seconds):
        fake.now += timedelta(hours=3)              # suspended for hours inside one short wait
        return False
    assert wait_until(START + timedelta(hours=1), clock=fake.clock, wait=wait,
                      log=lines.append) == RESUMED
    assert lines[-1] == "Usage limit: wait over, resuming"
