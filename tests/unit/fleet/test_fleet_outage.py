"""fleet.outage: waiting out a lost store, one line and one event per wait, never while the
run is stopping."""
from __future__ import annotations

from ralphpy.backlog.calls import TaskResult
from ralphpy.fleet import outage
from ralphpy.signals import Guard

LOST = TaskResult(False, "", "Error: task store unreachable: postgresql://u:***@h/db: "
                             "connection refused")


def waiter(lines, events):
    return outage.Waiter(Guard(), lines.append, lambda *a, **k: events.append((a, k)),
                         pauses_s=(0.01, 0.02))


def test_each_wait_is_one_line_and_one_event_then_the_call_is_made_again():
    lines, events = [], []
    wait = waiter(lines, events)
    assert wait(LOST, 1) and wait(LOST, 2) and wait(LOST, 3)
    assert lines[0] == ("Task store unreachable (postgresql://u:***@h/db: connection refused);"
                        " waiting 0.01s before trying again (wait 1)")
    assert [k["pause_s"] for _, k in events] == [0.01, 0.02, 0.02]       # the last pause stays
    assert events[0][0] == ("log",) and events[0][1]["kind"] == "store_wait"


def test_a_stopping_run_never_waits():
    lines, events = [], []
    wait = waiter(lines, events)
    wait.guard.closing = True
    assert not wait(LOST, 1)
    wait.guard.closing, wait.guard.pending = False, [2]                  # queued in a session
    assert not wait(LOST, 1)
    assert lines == [] and events == []


def test_the_default_pauses_grow_to_a_minute():
    assert outage.PAUSES_S[0] == 5 and outage.PAUSES_S[-1] == 60
    assert list(outage.PAUSES_S) == sorted(outage.PAUSES_S)
