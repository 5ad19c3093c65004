"""programs.run with real processes: the environment and directory are the caller's, exactly;
nothing outlives a call that is cut short."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from ralphkit import programs


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
