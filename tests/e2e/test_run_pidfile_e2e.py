"""Black-box (single loop): `kill -9` of `ralph build` after its agent started and
before the run state saved the agent's pid, then a resume. PR_SET_PDEATHSIG ends the agent
itself but not the shell it spawned; only the write-ahead pid file (session_pidfile: named in
the state before the start, filled by the agent's child before exec) tells the resumed run
which process group to kill before it fails the dead session's task.

The window is made exact without sleeps: a task-command wrapper turns the run's events.jsonl
into a FIFO during the `peek` before the session, so ralph.py blocks on its session_start
event (after the state named the session and its pid file); the test then puts a FIFO at the
state's temp file (`.state.json.tmp.<pid>`, write_atomic's) and reads the event, so the next
state save, the one of the agent's pid, blocks for good. Real processes, task CLI, signals."""
from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import RALPH, TASK, install_stub, wait_for
from loophelp import alive
from test_run_safety import _group_members, events_of, export, runs, state_of, sync

# The agent claims a task; the first attempt records its shell's pid and blocks on the gate
# FIFO (which the test never opens), as a real agent's tool would keep working on the task.
ACTION = """\
id=$("$RALPH_TASK_SCRIPT" claim | sed -n 's/^id: //p')
[ -z "$id" ] && exit 0
if mkdir "$MARKS/first" 2>/dev/null; then
    echo "$$ $id" > "$MARKS/leftover.tmp" && mv "$MARKS/leftover.tmp" "$MARKS/leftover"
    read _ < "$MARKS/gate"
    echo "$id" >> "$MARKS/done-by-leftover"
fi
"$RALPH_TASK_SCRIPT" done "$id" --result '{"commit":"abc"}' > /dev/null
"""

# The task command: the first `peek` turns events.jsonl into a FIFO nobody reads yet.
WRAPPER = """#!/bin/sh
if [ "$1" = peek ] && mkdir "$MARKS/stalled" 2>/dev/null; then
  for f in "$RUNS"/*/events.jsonl; do rm -f "$f"; mkfifo "$f"; done
fi
exec "{python}" "{task}" "$@"
"""


@pytest.fixture
def stall_env(base_env, bin_dir, git_repo, tmp_path):
    install_stub(bin_dir)
    marks = tmp_path / "marks"
    marks.mkdir()
    os.mkfifo(marks / "gate")
    wrapper = tmp_path / "task-wrapper"
    wrapper.write_text(WRAPPER.format(python=sys.executable, task=TASK))
    wrapper.chmod(0o755)
    return {**base_env, "MARKS": str(marks), "RUNS": str(git_repo / ".ralph" / "runs"),
            "RALPH_TASK_CMD": str(wrapper), "STUB_ACTION": ACTION}


def _stall_before_the_pid_is_saved(proc: subprocess.Popen, git_repo: Path) -> Path:
    """Returns the run directory once ralph.py is past its session_start event, with its
    next state save (the agent's pid) blocked on a FIFO."""
    states = git_repo / ".ralph" / "runs"
    wait_for(lambda: list(states.glob("*/state.json")), timeout=30)
    run_dir, = runs(git_repo)
    # the session and its pid file are in the state; ralph.py now blocks on (or is heading
    # to) the open of its session_start event, so the state's temp file is free
    wait_for(lambda: (state_of(run_dir).get("active") or {}).get("n") == 1, timeout=30)
    os.mkfifo(run_dir / f".state.json.tmp.{proc.pid}")
    with open(run_dir / "events.jsonl", "rb") as events:        # lets the event through
        assert b'"session_start"' in events.read()
    return run_dir


def _unstall(run_dir: Path, pid: int) -> None:
    (run_dir / f".state.json.tmp.{pid}").unlink()
    (run_dir / "events.jsonl").unlink()


def test_a_kill_9_before_the_agents_pid_is_saved_still_kills_its_leftovers_on_resume(
        git_repo, stall_env, run_task, run_ralph, tmp_path):
    marks = tmp_path / "marks"
    sync(run_task, "t1", "t2")
    proc = subprocess.Popen([sys.executable, str(RALPH), "build", "-n", "5"], cwd=git_repo,
                            env=stall_env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    agent_pgid = None
    try:
        run_dir = _stall_before_the_pid_is_saved(proc, git_repo)
        wait_for((marks / "leftover").exists, timeout=30)      # the agent's shell holds a task
        leftover, task = (marks / "leftover").read_text().split()
        leftover = int(leftover)
        agent_pgid = os.getpgid(leftover)
        active = state_of(run_dir)["active"]
        assert active["pid"] is None                            # the window: pid not saved
        assert Path(active["pidfile"]).read_text().split()[0] == str(agent_pgid)
        os.kill(proc.pid, signal.SIGKILL)                       # ralph.py alone
        proc.wait(10)
        assert alive(leftover)                                  # PDEATHSIG did not reach it
        _unstall(run_dir, proc.pid)

        again = run_ralph("build", "-n", "5", env=stall_env)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if agent_pgid is not None:                              # a failing run's leftover
            try:
                os.killpg(agent_pgid, signal.SIGKILL)
            except OSError:
                pass

    assert again.returncode == 0, again.stderr
    run_id = run_dir.name
    assert f"Resuming run {run_id} (interrupted at iteration 0, 1 sessions started)" \
        in again.stderr
    killed = f"killed what was left of the dead run's agent (process group {agent_pgid})"
    reason = f"ralph.py exited during the session (run {run_id})"
    failed = f"failed task {task} of the dead run's agent"
    assert killed in again.stderr and failed in again.stderr
    assert again.stderr.index(killed) < again.stderr.index(failed)   # killed, then failed
    assert not alive(leftover) and not _group_members(agent_pgid)
    with pytest.raises(OSError) as no_reader:                   # nobody waits on the gate:
        os.open(marks / "gate", os.O_WRONLY | os.O_NONBLOCK)    # it can never `task done`
    assert no_reader.value.errno == errno.ENXIO
    assert not (marks / "done-by-leftover").exists()
    tasks = {t["id"]: t for t in export(run_task)}
    assert all(t["status"] == "done" for t in tasks.values())  # failed back to open, redone
    assert tasks[task]["retry_count"] == 1 and tasks[task]["fail_reason"] == reason
    assert "All tasks complete. Exiting loop." in again.stdout
    after = state_of(run_dir)
    assert after["exitCode"] == 0 and after["active"] is None
    assert {"task": task, "reason": reason} in [
        {"task": e["task"], "reason": e.get("reason")} for e in after["failed"]]
    kinds = [e.get("kind") for e in events_of(run_dir) if e["event"] == "log"]
    assert "resume" in kinds
    # the resumed run's own sessions left no pid file; the dead one's stays (it is the
    # record that its agent may never start again)
    assert [p.name for p in run_dir.glob("session-*.pid")] == ["session-001.pid"]


def test_a_session_that_ends_normally_leaves_no_pid_file_and_the_state_never_named_one_late(
        git_repo, base_env, bin_dir, run_task, run_ralph, tmp_path):
    install_stub(bin_dir)
    sync(run_task, "t1")
    seen = tmp_path / "seen"
    # the agent sees its own pid file, written before it started, naming its pid
    action = (f'cat "$(dirname "$(ls -d {git_repo}/.ralph/runs/*/state.json)")"/session-001.pid'
              f' > {seen}; echo $PPID >> {seen}; id=$("$RALPH_TASK_SCRIPT" claim | '
              "sed -n 's/^id: //p'); \"$RALPH_TASK_SCRIPT\" done \"$id\" > /dev/null")
    done = run_ralph("build", "-n", "3", env={"STUB_ACTION": action})
    assert done.returncode == 0, done.stderr
    recorded, parent = seen.read_text().splitlines()
    assert recorded.split()[0] == parent                        # "<agent pid> <start time>"
    run_dir, = runs(git_repo)
    assert not list(run_dir.glob("session-*.pid")) and not list(run_dir.glob(".session-*"))
    starts = [e for e in events_of(run_dir) if e["event"] == "session_start"]
    assert len(starts) == 1 and json.loads((run_dir / "state.json").read_text())["active"] is None


def test_a_kill_9_after_the_state_named_the_pid_file_but_before_the_start_runs_nothing_twice(
        git_repo, stall_env, run_task, run_ralph, tmp_path):
    marks = tmp_path / "marks"
    (marks / "first").mkdir()                                   # no gate: agents just work
    sync(run_task, "t1")
    proc = subprocess.Popen([sys.executable, str(RALPH), "build", "-n", "5"], cwd=git_repo,
                            env=stall_env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        states = git_repo / ".ralph" / "runs"
        wait_for(lambda: list(states.glob("*/state.json")), timeout=30)
        run_dir, = runs(git_repo)
        # blocked on its session_start event: the pid file is named, no agent started
        wait_for(lambda: (state_of(run_dir).get("active") or {}).get("n") == 1, timeout=30)
        pidfile = Path(state_of(run_dir)["active"]["pidfile"])
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert not pidfile.exists()
    (run_dir / "events.jsonl").unlink()
    again = run_ralph("build", "-n", "5", env=stall_env)
    assert again.returncode == 0, again.stderr
    assert f"Resuming run {run_dir.name}" in again.stderr
    assert "killed what was left" not in again.stderr          # no agent ever ran
    assert pidfile.read_text() == "recovered\n"                 # and none ever will for it
    assert export(run_task)[0]["status"] == "done" and export(run_task)[0]["retry_count"] == 0
