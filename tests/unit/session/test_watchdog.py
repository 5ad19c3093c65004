"""Session deadlines as a pure policy, and how the session pump ends a real process group when
one runs out: SIGTERM, a grace period, SIGKILL only for what ignored SIGTERM."""
from __future__ import annotations

import io
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from conftest import STUBS, wait_for
from ralphpy.agents.summary import PlainRenderer
from ralphpy.session import pool as session_pool
from ralphpy.session import run
from ralphpy.session.watchdog import IDLE, TIMEOUT, SessionTimeouts
from ralphpy.signals import Guard

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


def test_the_defaults_are_60_and_15_minutes():
    assert SessionTimeouts().check(0, 0, 899.9) is None
    assert SessionTimeouts().check(0, 0, 900) == IDLE
    assert SessionTimeouts().check(0, 10**6, 3600) == TIMEOUT


@dataclass(frozen=True)
class _OnceReady(SessionTimeouts):
    """The real policy, checked only once the stub has written its pid file: its signal
    handling and its child are in place when the deadline runs out, however slow the start."""

    ready: Path = Path("/nonexistent")

    def check(self, started: float, last_output: float, now: float) -> str | None:
        return super().check(started, last_output, now) if self.ready.exists() else None


def _run(tmp_path: Path, stub: str, session_s: float | None, idle_s: float | None,
         grace: float, **env: str):
    """One session of a stub through session.run; the pids it recorded."""
    pidfile = tmp_path / "pids"
    full_env = {"PATH": os.environ["PATH"], "STUB_PIDFILE": str(pidfile), **env}
    result = run.run([sys.executable, str(STUBS / stub)], env=full_env,
                         log_path=tmp_path / "session.log", out=io.BytesIO(), guard=Guard(),
                         on_first_interrupt=lambda: None, cwd=tmp_path,
                         timeouts=_OnceReady(session_s, idle_s, ready=pidfile),
                         renderer=PlainRenderer(io.BytesIO()), kill_grace_s=grace)
    return result, [int(p) for p in pidfile.read_text().split()]


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def test_an_idle_agent_that_exits_on_sigterm_is_not_killed(tmp_path):
    result, _ = _run(tmp_path, "claude-silent", None, 0.01, grace=60)
    assert (result.idle_out, result.timed_out, result.forced) == (True, False, False)
    assert result.returncode == -signal.SIGTERM


def test_an_agent_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path):
    result, _ = _run(tmp_path, "claude-hang", 0.01, None, grace=0.3, STUB_IGNORE_TERM="1")
    assert (result.timed_out, result.idle_out) == (True, False)
    assert result.returncode == -signal.SIGKILL


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="liveness is read in /proc")
def test_a_child_that_ignores_sigterm_is_killed_with_the_group(tmp_path):
    result, pids = _run(tmp_path, "claude-hang", 0.01, None, grace=0.3,
                        STUB_IGNORE_TERM="1", STUB_HANG_CHILD="1")
    assert result.timed_out and len(pids) == 2
    assert wait_for(lambda: not any(_alive(pid) for pid in pids))


@dataclass(frozen=True)
class _DueForTheSilent(SessionTimeouts):
    """A policy under which a session that never printed is idle once `ready` says so."""

    ready: Callable[[], bool] = lambda: False

    def check(self, started: float, last_output: float, now: float) -> str | None:
        return IDLE if self.ready() and last_output == started else None


def test_in_a_pool_a_deadline_ends_only_its_own_session(tmp_path):
    pidfile, talker_log = tmp_path / "pids", tmp_path / "talker.log"
    env = {"PATH": os.environ["PATH"], "STUB_PIDFILE": str(pidfile)}
    timeouts = _DueForTheSilent(ready=lambda: pidfile.exists() and talker_log.stat().st_size > 0)
    with session_pool.Pool(Guard(), lambda: None, timeouts=timeouts, kill_grace_s=60) as pool:
        for key, argv in (("talker", ["sh", "-c", "echo hi; exec sleep 60"]),
                          ("silent", [sys.executable, str(STUBS / "claude-hang")])):
            assert pool.start(key, argv, env=env, cwd=tmp_path, log_path=tmp_path / f"{key}.log",
                              renderer=PlainRenderer(io.BytesIO())) is None
        ((key, result),) = pool.wait()
        assert (key, result.idle_out, result.returncode) == ("silent", True, -signal.SIGTERM)
        assert list(pool.pids()) == ["talker"]                  # the other one runs on
    assert talker_log.read_bytes() == b"hi\n"
