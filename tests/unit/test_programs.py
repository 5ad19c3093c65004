"""programs.run with real processes: the environment and directory are the caller's, exactly;
nothing outlives a call that is cut short."""
from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest

from conftest import wait_for
from ralphpy import programs


def test_a_program_sees_exactly_the_environment_it_is_given(tmp_path, monkeypatch):
    monkeypatch.setenv("RALPH_ONLY_IN_THE_PROCESS", "1")
    env = {"PATH": os.environ["PATH"], "RALPH_EXPORTED_BY_THE_RUN": "yes"}
    done = programs.run(["env"], cwd=tmp_path, env=env)
    seen = dict(line.split("=", 1) for line in done.out.splitlines())
    assert done.code == 0
    assert seen["RALPH_EXPORTED_BY_THE_RUN"] == "yes"
    assert "RALPH_ONLY_IN_THE_PROCESS" not in seen


def test_a_program_runs_in_the_directory_it_is_given(tmp_path):
    done = programs.run(["pwd", "-P"], cwd=tmp_path, env=os.environ)
    assert Path(done.out.strip()) == tmp_path.resolve()


def test_the_exit_code_and_both_streams_are_data(tmp_path):
    done = programs.run(["sh", "-c", "echo out; echo err >&2; exit 3"], cwd=tmp_path,
                        env=os.environ)
    assert (done.code, done.out, done.err) == (3, "out\n", "err\n")
    quiet = programs.run(["sh", "-c", "echo err >&2"], cwd=tmp_path, env=os.environ,
                         stderr=programs.DISCARD)
    assert quiet.stderr == b""


def test_a_program_that_cannot_start_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        programs.run(["no-such-program-here"], cwd=tmp_path, env={"PATH": str(tmp_path)})


def test_a_timeout_kills_the_program_before_it_propagates(tmp_path):
    with pytest.raises(programs.TimeoutExpired):
        programs.run(["sh", "-c", 'echo $$ > pid; exec sleep 60'], cwd=tmp_path,
                     env=os.environ, timeout=3)
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):      # killed and reaped: no such process
        os.kill(pid, 0)


def test_a_group_program_runs_in_a_group_of_its_own_and_takes_what_it_left_along(tmp_path):
    with (tmp_path / "out").open("w+b") as out:
        code = programs.run_group(
            ["sh", "-c", "ps -o pgid= -p $$; sleep 300 >/dev/null 2>&1 & echo $! > bg"],
            cwd=tmp_path, env=os.environ, output=out, timeout=30, kill_grace=1)
        out.seek(0)
        pgid = int(out.read().split()[0])
    assert code == 0 and pgid != os.getpgrp()
    left = int((tmp_path / "bg").read_text())
    wait_for(lambda: not psutil.pid_exists(left)              # what it left in its group is
             or psutil.Process(left).status() == psutil.STATUS_ZOMBIE)   # killed


def test_what_a_group_program_started_outside_its_group_goes_too_and_is_named(tmp_path):
    """A test suite's daemon (pg_ctl start, a server started with setsid) does not outlive
    the command: killed after it, and named in the output's last line."""
    with (tmp_path / "out").open("w+b") as out:
        code = programs.run_group(
            ["sh", "-c", "setsid sh -c 'echo $$ > bg; exec sleep 300' </dev/null >/dev/null 2>&1 &"
                         " until [ -s bg ]; do sleep 0.01; done"],       # it left the group
            cwd=tmp_path, env=os.environ, output=out, timeout=30, kill_grace=1)
        out.seek(0)
        said = out.read().decode()
    left = int((tmp_path / "bg").read_text())
    assert code == 0
    wait_for(lambda: not psutil.pid_exists(left)
             or psutil.Process(left).status() == psutil.STATUS_ZOMBIE)
    assert said == (f"\nralph: killed 1 process the command left running outside its process "
                    f"group: {left} sleep 300\n")


def test_a_group_timeout_stops_the_whole_group_and_returns_none(tmp_path):
    with (tmp_path / "out").open("w+b") as out:
        code = programs.run_group(["sh", "-c", "trap '' TERM; sleep 300 & wait"], cwd=tmp_path,
                                  env=os.environ, output=out, timeout=0.5, kill_grace=0.5)
    assert code is None
