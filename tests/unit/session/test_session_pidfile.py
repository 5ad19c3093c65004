"""The write-ahead pid file of a session (the `--parallel` recovery, the single loop's resume),
through the real session pool and the real session.run: whoever links the file first wins,
the agent's child or the recovery."""
from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from ralphpy.agents.summary import PlainRenderer
from ralphpy.session import pidfile as session_pidfile
from ralphpy.session import pool as session_pool
from ralphpy.session import run
from ralphpy.signals import Guard


def _run_in_pool(tmp_path: Path, script: str, pidfile: Path):
    with session_pool.Pool(Guard(), lambda: None) as pool:
        failed = pool.start("t", ["sh", "-c", script], env=dict(os.environ), cwd=tmp_path,
                            log_path=tmp_path / "session.log",
                            renderer=PlainRenderer(io.BytesIO()),
                            pidfile=pidfile)
        assert failed is None
        ended = []
        while not ended:
            ended = pool.wait()
    ((_, result),) = ended
    return result


def _run_alone(tmp_path: Path, script: str, pidfile: Path):
    result = run.run(["sh", "-c", script], env=dict(os.environ),
                         log_path=tmp_path / "session.log", out=io.BytesIO(), guard=Guard(),
                         on_first_interrupt=lambda: None, renderer=PlainRenderer(io.BytesIO()),
                         cwd=tmp_path,
                         pidfile=pidfile)
    assert result.started
    return result


STARTERS = [_run_in_pool, _run_alone]
STARTER_IDS = ["parallel-pool", "single-loop-session"]


@pytest.fixture(params=STARTERS, ids=STARTER_IDS)
def _run(request):
    return request.param


def test_an_agent_whose_pid_file_the_recovery_took_first_never_runs(tmp_path, _run):
    pidfile = tmp_path / "session-001.pid"
    assert session_pidfile.take(pidfile) is None              # the recovery came first
    result = _run(tmp_path, f"touch {tmp_path / 'ran'}", pidfile)
    assert result.returncode == 1
    assert not (tmp_path / "ran").exists()
    assert session_pidfile.take(pidfile) is None              # and stays recovered
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session-001.pid", "session.log"]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="start times need /proc")
def test_an_agent_that_started_first_is_named_by_pid_start_time_and_tag(tmp_path, _run):
    pidfile = tmp_path / "session-001.pid"
    result = _run(tmp_path, f"echo $$ > {tmp_path / 'pid'}; "            # exec keeps the pid
                  f"printf %s \"$RALPH_SESSION_TAG\" > {tmp_path / 'tag'}", pidfile)
    assert result.returncode == 0
    pid, start, tag = session_pidfile.take(pidfile)
    assert pid == int((tmp_path / "pid").read_text())
    assert isinstance(start, int) and start > 0
    assert tag and tag == (tmp_path / "tag").read_text()     # the session's, as its agent saw it
    assert session_pidfile.take(pidfile) == (pid, start, tag)   # never replaced


@pytest.mark.parametrize("text, taken", [
    ("4242 123456\n", (4242, 123456, "")),                 # written before sessions had tags
    ("4242 \n", (4242, None, "")),                         # and without a start time
    ("4242 - 99-abc\n", (4242, None, "99-abc")),
])
def test_a_pid_file_an_older_ralph_py_wrote_is_read_as_well(tmp_path, text, taken):
    """A run resumed by a newer ralph.py reads the pid file its dead session's agent wrote."""
    pidfile = tmp_path / "session-001.pid"
    pidfile.write_text(text)
    assert session_pidfile.take(pidfile) == taken
