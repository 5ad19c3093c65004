"""Session deadlines as a pure policy, and ending a real process group: SIGTERM, a polled
grace period, SIGKILL only for what ignored SIGTERM."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import STUBS, wait_for
from ralphkit.session.watchdog import IDLE, TIMEOUT, SessionTimeouts, terminate_group

POLICY = [
    ("fresh-session", 0, 0, 10, None),
    ("output-keeps-it-alive", 0, 950, 1000, None),
    ("idle-for-the-idle-timeout", 0, 100, 1000, IDLE),
    ("session-timeout", 0, 3599, 3600, TIMEOUT),
    ("timeout-wins-when-both-are-due", 0, 0, 4000, TIMEOUT),
]


@pytest.mark.parametrize("started,last_output,now,expected", [p[1:] for p in POLICY],
                         ids=[p[0] for p in POLICY])
def test_the_policy_names_the_deadline_that_passed(started, last_output, now, expected):
    assert SessionTimeouts(3600, 900).check(started, last_output, now) == expected


@pytest.mark.parametrize("timeouts", [SessionTimeouts(0, 0), SessionTimeouts(None, None)],
                         ids=["zero", "none"])
def test_zero_or_none_turns_the_deadlines_off(timeouts):
    assert timeouts.check(0, 0, 10**9) is None
    assert timeouts.next_deadline(0, 0) is None


def test_the_next_deadline_is_the_earliest_of_both():
    assert SessionTimeouts(3600, 900).next_deadline(100, 3000) == 3700
    assert SessionTimeouts(3600, 900).next_deadline(100, 200) == 1100
    assert SessionTimeouts().check(0, 0, 899.9) is None      # defaults: 60 min and 15 min


def _start(tmp_path: Path, stub: str, **env: str) -> tuple[subprocess.Popen, list[int]]:
    pidfile = tmp_path / "pids"
    full_env = {"PATH": os.environ["PATH"], "STUB_PIDFILE": str(pidfile), **env}
    proc = subprocess.Popen([sys.executable, str(STUBS / stub)], env=full_env,
                            stdout=subprocess.DEVNULL, start_new_session=True)
    expected = 2 if env.get("STUB_HANG_CHILD") == "1" else 1
    pids = wait_for(lambda: pidfile.exists() and
                    [int(p) for p in pidfile.read_text().split()] or None)
    assert len(pids) == expected
    return proc, pids


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


@pytest.fixture
def reaper():
    procs: list[subprocess.Popen] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_an_agent_that_exits_on_sigterm_is_not_killed(tmp_path, reaper):
    proc, pids = _start(tmp_path, "claude-hang")
    reaper.append(proc)
    result = terminate_group(proc.pid, grace_s=10, reap=proc.poll)
    assert (result.term_sent, result.kill_sent, result.gone) == (True, False, True)
    assert proc.returncode == -signal.SIGTERM
    assert result.waited_s < 5


def test_an_agent_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path, reaper):
    proc, pids = _start(tmp_path, "claude-hang", STUB_IGNORE_TERM="1")
    reaper.append(proc)
    result = terminate_group(proc.pid, grace_s=0.3, reap=proc.poll)
    assert (result.term_sent, result.kill_sent, result.gone) == (True, True, True)
    assert proc.returncode == -signal.SIGKILL
    assert result.waited_s >= 0.3


def test_a_child_that_ignores_sigterm_is_killed_with_the_group(tmp_path, reaper):
    proc, pids = _start(tmp_path, "claude-hang", STUB_IGNORE_TERM="1", STUB_HANG_CHILD="1")
    reaper.append(proc)
    result = terminate_group(proc.pid, grace_s=0.3, reap=proc.poll)
    assert result.kill_sent and result.gone
    assert not any(_alive(pid) for pid in pids)


def test_a_silent_agent_is_ended_by_sigterm(tmp_path, reaper):
    proc, _ = _start(tmp_path, "claude-silent")
    reaper.append(proc)
    assert terminate_group(proc.pid, grace_s=5, reap=proc.poll).kill_sent is False
    assert proc.returncode == -signal.SIGTERM


def test_an_unreaped_leader_does_not_make_the_group_look_alive(tmp_path, reaper):
    proc, _ = _start(tmp_path, "claude-hang")
    reaper.append(proc)
    result = terminate_group(proc.pid, grace_s=2)        # no reap: the leader stays a zombie
    assert result.kill_sent is False and result.gone
    proc.wait()
    assert proc.returncode == -signal.SIGTERM            # the exit status is still the runner's


def test_a_group_that_is_already_gone_is_nothing_to_do(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    proc.wait()
    result = terminate_group(proc.pid, grace_s=1)
    assert (result.term_sent, result.kill_sent, result.gone) == (False, False, True)
