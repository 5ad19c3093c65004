"""Black-box: a process the agent starts outside its process group (`setsid`, as a detached
dev server or a tool that daemonizes) does not outlive its session, in the single loop and
under --parallel: the session's end kills it, or, when ralph.py was killed with -9 first, the
resume does. Each kill is named on stderr and in a `strays` log event."""
from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Iterator

import pytest

from conftest import ignore_ralph_dir, install_stub, read_jsonl, wait_for
from loophelp import Running, alive

TASK = r"""
tid=$(if [ -n "$RALPH_FROZEN_IDS_FILE" ]; then cat "$RALPH_FROZEN_IDS_FILE";
      else "$RALPH_TASK_SCRIPT" claim | sed -n 's/^id: //p'; fi)
"""
DONE = '"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null\n'
# The stray writes its pid once it has left the group (setsid), then becomes `sleep 600`.
STRAY = """setsid sh -c 'echo $$ > "$STRAY_PID.tmp"; mv "$STRAY_PID.tmp" "$STRAY_PID";
                  exec sleep 600' </dev/null >/dev/null 2>&1 &
until [ -e "$STRAY_PID" ]; do sleep 0.01; done
"""
ACTION = TASK + STRAY + DONE
HANG = TASK + """if [ ! -e "$STRAY_PID" ]; then
""" + STRAY + """    exec sleep 600
fi
""" + DONE


@pytest.fixture
def stray_pid(git_repo, base_env, bin_dir, run_task, tmp_path) -> Iterator[Path]:
    """One task for the stub agent; the file its action writes its stray's pid to. The
    stray is killed at the end whatever the test found."""
    install_stub(bin_dir)
    ignore_ralph_dir(git_repo, base_env)
    assert run_task("create", "t1", "Task t1").returncode == 0
    path = git_repo.parent / "stray.pid"
    yield path
    if path.exists() and alive(int(path.read_text())):
        os.kill(int(path.read_text()), signal.SIGKILL)


def assert_killed_and_said(repo: Path, stderr: str, stray: int) -> None:
    wait_for(lambda: not alive(stray))        # SIGKILLed: gone once it has exited
    line = f"killed 1 process the agent left running outside its process group: {stray} sleep 600"
    assert line in stderr
    (run,) = (repo / ".ralph" / "runs").iterdir()
    logged = [e["message"] for e in read_jsonl(run / "events.jsonl")
              if e["event"] == "log" and line in e.get("message", "")]
    assert len(logged) == 1                     # `[t1] `-prefixed by a --parallel recovery


@pytest.mark.parametrize("loop", [[], ["--parallel", "2"]], ids=["single", "parallel"])
def test_a_process_that_left_the_agents_group_is_killed_at_the_sessions_end(
        git_repo, run_ralph, stray_pid, loop):
    proc = run_ralph("build", "-n", "1", *loop,
                     env={"STUB_ACTION": ACTION, "STRAY_PID": str(stray_pid)})
    assert proc.returncode == 0, proc.stderr
    assert_killed_and_said(git_repo, proc.stderr, int(stray_pid.read_text()))


@pytest.mark.parametrize("loop", [[], ["--parallel", "2"]], ids=["single", "parallel"])
def test_a_process_that_left_the_group_of_a_killed_runs_agent_is_killed_by_the_resume(
        git_repo, base_env, run_ralph, stray_pid, loop):
    env = {"STUB_ACTION": HANG, "STRAY_PID": str(stray_pid)}
    first = Running(["build", "-n", "2", *loop], cwd=git_repo, env={**base_env, **env})
    try:
        stray = int(wait_for(lambda: stray_pid.exists() and stray_pid.read_text()))
        os.kill(first.proc.pid, signal.SIGKILL)          # ralph.py alone: no session's end
        first.proc.wait(10)
    finally:
        first.kill()
    assert alive(stray)
    proc = run_ralph("build", "-n", "2", *loop, env=env)
    assert proc.returncode == 0, proc.stderr
    assert_killed_and_said(git_repo, proc.stderr, stray)
