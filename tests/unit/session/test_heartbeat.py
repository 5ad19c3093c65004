"""session.heartbeat: beats as real processes, started and reaped by the pump's ticks, never
waited for, killed with their session."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from conftest import wait_for
from ralphpy.session import heartbeat


def beat(tmp_path: Path, script: str, interval: float = 0.05) -> heartbeat.Heartbeat:
    return heartbeat.Heartbeat([sys.executable, "-c", script], {}, tmp_path, interval)


def ticked(hb: heartbeat.Heartbeat, until) -> None:
    wait_for(lambda: (hb.tick(time.monotonic()), until())[1], 20)


def test_a_beat_is_due_every_interval_and_counted_when_it_succeeds(tmp_path: Path):
    log = tmp_path / "beats"
    hb = beat(tmp_path, f"open({str(log)!r}, 'a').write('x')")
    hb.tick(time.monotonic())
    assert not log.exists()                       # the first beat waits one interval
    ticked(hb, lambda: hb.beats >= 3)
    hb.stop()
    assert hb.failures == 0 and len(log.read_text()) >= 3


def test_a_failed_beat_keeps_its_last_line(tmp_path: Path):
    hb = beat(tmp_path, "import sys; sys.stderr.write('ralph task: retrying\\nError: task store "
                        "unreachable: postgresql://u:***@h/db: refused\\n'); sys.exit(1)")
    ticked(hb, lambda: hb.failures >= 1)
    hb.stop()
    assert hb.last_error == "Error: task store unreachable: postgresql://u:***@h/db: refused"
    assert heartbeat.problem(hb).startswith(f"heartbeat: {hb.failures} of ")


def test_a_beat_still_running_is_not_waited_for_and_dies_with_its_session(tmp_path: Path):
    started = tmp_path / "started"
    hb = beat(tmp_path, f"import time; open({str(started)!r}, 'w'); time.sleep(600)")
    ticked(hb, started.exists)
    proc = hb._proc
    begin = time.monotonic()
    for _ in range(20):                           # due again and again: one beat at a time
        hb.tick(time.monotonic() + 3600)
    assert hb._proc is proc and time.monotonic() - begin < 5
    hb.stop()
    assert proc.returncode is not None and (hb.beats, hb.failures) == (0, 0)


def test_a_beat_that_cannot_start_is_a_failure(tmp_path: Path):
    hb = heartbeat.Heartbeat([str(tmp_path / "missing")], {}, tmp_path, 0.0)
    hb.tick(time.monotonic())
    hb.tick(time.monotonic())
    assert hb.failures >= 1 and hb.last_error.startswith(f"cannot run {tmp_path / 'missing'}")


def test_for_agent_renews_to_the_lease_and_gives_each_beat_one_interval_of_retries():
    hb = heartbeat.for_agent("/x/task", "8f3e", 600.0, 200.0, {"RALPH_TASKS_DB": "p"}, None)
    assert hb.argv == ["/x/task", "_heartbeat", "--agent", "8f3e", "--lease", "600"]
    assert hb.env == {"RALPH_TASKS_DB": "p", "RALPH_STORE_RETRY": "200"}
