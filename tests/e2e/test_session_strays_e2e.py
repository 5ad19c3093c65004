"""Black-box: a process the agent starts outside its process group (`setsid`, as a detached
dev server or a tool that daemonizes) does not outlive its session, in the single loop and
under --parallel: the session's end kills it, or, when ralph.py was killed with -9 first, the
resume does. Each kill is named on stderr and in a `strays` log event."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from conftest import ignore_ralph_dir, install_stub, read_jsonl, wait_for
from loophelp import Running, alive

ACTION = r"""
tid=$(if [ -n "$RALPH_FROZEN_IDS_FILE" ]; then cat "$RALPH_FROZEN_IDS_FILE";
      else "$RALPH_TASK_SCRIPT" claim | sed -n 's/^id: //p'; fi)
setsid sleep 600 </dev/null >/dev/null 2>&1 &
echo $! > "$STRAY_PID"
"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null
"""


@pytest.mark.parametrize("loop", [[], ["--parallel", "2"]], ids=["single", "parallel"])
def test_a_process_that_left_the_agents_group_is_killed_at_the_sessions_end(
        git_repo, base_env, bin_dir, run_ralph, run_task, tmp_path, loop):
    install_stub(bin_dir)
    ignore_ralph_dir(git_repo, base_env)
    assert run_task("create", "t1", "Task t1").returncode == 0
    pid_file = tmp_path / "stray.pid"
    proc = run_ralph("build", "-n", "1", *loop,
                     env={"STUB_ACTION": ACTION, "STRAY_PID": str(pid_file)})
    stray = int(pid_file.read_text())
    try:
        assert proc.returncode == 0, proc.stderr
        assert not alive(stray)
        line = ("killed 1 process the agent left running outside its process group: "
                f"{stray} sleep 600")
        assert line in proc.stderr
        (run,) = (git_repo / ".ralph" / "runs").iterdir()
        logged = [e for e in read_jsonl(Path(run) / "events.jsonl") if e.get("kind") == "strays"]
        assert [e["message"] for e in logged] == [line]
    finally:
        if alive(stray):
            os.kill(stray, signal.SIGKILL)


HANG = r"""
tid=$(if [ -n "$RALPH_FROZEN_IDS_FILE" ]; then cat "$RALPH_FROZEN_IDS_FILE";
      else "$RALPH_TASK_SCRIPT" claim | sed -n 's/^id: //p'; fi)
if [ ! -e "$STRAY_PID" ]; then
    setsid sleep 600 </dev/null >/dev/null 2>&1 &
    echo $! > "$STRAY_PID.tmp" && mv "$STRAY_PID.tmp" "$STRAY_PID"
    exec sleep 600
fi
"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null
"""


@pytest.mark.parametrize("loop", [[], ["--parallel", "2"]], ids=["single", "parallel"])
def test_a_process_that_left_the_group_of_a_killed_runs_agent_is_killed_by_the_resume(
        git_repo, base_env, bin_dir, run_ralph, run_task, tmp_path, loop):
    install_stub(bin_dir)
    ignore_ralph_dir(git_repo, base_env)
    assert run_task("create", "t1", "Task t1").returncode == 0
    pid_file = tmp_path / "stray.pid"
    env = {**base_env, "STUB_ACTION": HANG, "STRAY_PID": str(pid_file)}
    first = Running(["build", "-n", "2", *loop], cwd=git_repo, env=env)
    try:
        stray = int(wait_for(lambda: pid_file.exists() and pid_file.read_text(), timeout=30))
        os.kill(first.proc.pid, signal.SIGKILL)          # ralph.py alone: no session's end
        first.proc.wait(10)
    finally:
        first.kill()
    try:
        assert alive(stray)
        proc = run_ralph("build", "-n", "2", *loop, env={"STUB_ACTION": HANG,
                                                        "STRAY_PID": str(pid_file)})
        assert proc.returncode == 0, proc.stderr
        assert not alive(stray)
        line = ("killed 1 process the agent left running outside its process group: "
                f"{stray} sleep 600")
        assert line in proc.stderr
        (run,) = (git_repo / ".ralph" / "runs").iterdir()
        assert any(line in e.get("message", "") for e in read_jsonl(Path(run) / "events.jsonl")
                   if e.get("event") == "log")
    finally:
        if alive(stray):
            os.kill(stray, signal.SIGKILL)
