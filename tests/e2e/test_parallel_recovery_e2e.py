"""Black-box: `kill -9` of `ralph build --parallel` in the windows where its run state
lags behind its sessions, then a resume. Each window is made deterministic without sleeps:
`.ralph/runs/<run>/events.jsonl` is replaced by a FIFO nobody reads, so ralph.py blocks on the
open of its next event (after starting a session, or after merging one) and its state is
never saved past that point; the stub agent waits on a gate FIFO the test opens (or never).
Real processes, signals, git and task CLI."""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys

import pytest

from conftest import RALPH, TASK, git, wait_for
from test_parallel_e2e import _stub_pids, create, export, intervals, last_line
from test_parallel_e2e import setup  # noqa: F401  (fixture)

# The agent of a task's first attempt blocks reading the gate FIFO (opened by the test, or
# never), then does its work: a file, a commit, `task done`.
GATED = r"""
tid=$(cat "$RALPH_FROZEN_IDS_FILE")
echo "{\"task\": \"$tid\", \"start\": 0}" >> "$STUB_TIMES"
if mkdir "$MARKS/first-$tid" 2>/dev/null; then read _ < "$MARKS/gate"; fi
echo "$tid" >> "out-$tid.txt"
git add -A >/dev/null && git commit -qm "work on $tid" >/dev/null
"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null
echo "{\"task\": \"$tid\", \"end\": 0}" >> "$STUB_TIMES"
"""

# events.jsonl becomes a FIFO nobody reads (once): ralph.py blocks on its next event.
STALL = r"""
if mkdir "$MARKS/stalled" 2>/dev/null; then
  for f in "$RUNS"/*/events.jsonl; do rm -f "$f"; mkfifo "$f"; done
fi
"""

# A task command that stalls ralph.py's events when it claims $STALL_ON_CLAIM: the next
# event is that session's session_start, written after its agent started and before the
# state names its pid.
WRAPPER = """#!/bin/sh
if [ "$1" = claim ] && [ "$2" = "$STALL_ON_CLAIM" ]; then
  {stall}
fi
exec "{python}" "{task}" "$@"
"""


@pytest.fixture
def recovery_env(setup, base_env, git_repo, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    os.mkfifo(marks / "gate")
    wrapper = tmp_path / "task-wrapper"
    wrapper.write_text(WRAPPER.format(stall=STALL, python=sys.executable, task=TASK))
    wrapper.chmod(0o755)
    yield {**base_env, **setup, "MARKS": str(marks), "RUNS": str(git_repo / ".ralph" / "runs"),
           "RALPH_TASK_CMD": str(wrapper), "STUB_ACTION": GATED}
    for pid in _stub_pids(git_repo):             # a leftover a failing run did not stop
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _start(git_repo, env) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(RALPH), "build", "--parallel", "2"],
                            cwd=git_repo, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def _kill(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def _unstall(git_repo) -> None:
    for path in (git_repo / ".ralph" / "runs").glob("*/events.jsonl"):
        if stat.S_ISFIFO(path.lstat().st_mode):
            path.unlink()


def _resume(git_repo, env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(RALPH), "build", "--parallel", "2"],
                          cwd=git_repo, env=env, capture_output=True, text=True, timeout=60)


def _assert_merged_once_and_clean(again, run_task, git_repo, base_env, tid) -> None:
    assert again.returncode == 0, again.stderr
    assert last_line(again.stdout) == "All tasks complete. Exiting loop."
    assert export(run_task)[tid]["status"] == "done"
    assert (git_repo / f"out-{tid}.txt").read_text() == f"{tid}\n"   # merged, exactly once
    assert git(git_repo, "branch", "--list", "ralph/*", env=base_env) == ""
    assert not list((git_repo / ".ralph" / "worktrees").glob("*/*"))
    assert git(git_repo, "worktree", "list", env=base_env).count("\n") == 1
    assert not _stub_pids(git_repo)                      # nothing of the dead run's sessions


LEFTOVERS = ["finishes-before-resume", "still-running-at-resume", "finishes-and-state-lost"]


@pytest.mark.parametrize("leftover", LEFTOVERS, ids=LEFTOVERS)
def test_a_session_started_just_before_ralph_is_killed_is_recovered_on_resume(
        run_task, recovery_env, git_repo, base_env, tmp_path, leftover):
    create(run_task, {"late": "a"})
    env = {**recovery_env, "STALL_ON_CLAIM": "late"}
    proc = _start(git_repo, env)
    try:
        wait_for(lambda: "late" in intervals(tmp_path), timeout=30)   # its agent runs
    finally:
        _kill(proc)           # ralph.py stalled before its state named the session's pid
    if leftover != "still-running-at-resume":
        # the agent's shell outlives ralph.py and finishes: a commit, then `task done`
        with open(tmp_path / "marks" / "gate", "w") as gate:
            gate.write("go\n")
        wait_for(lambda: intervals(tmp_path)["late"][-1][1] is not None, timeout=30)
        assert export(run_task)["late"]["status"] == "done"
    if leftover == "finishes-and-state-lost":
        # a state that does not list the session (as an older ralph.py wrote it): the dead
        # run's branch alone says where the done task's work is
        path = next((git_repo / ".ralph" / "runs").glob("*/state.json"))
        state = json.loads(path.read_text())
        state["active"], state["extra"]["parallel"]["sessions"] = None, []
        path.write_text(json.dumps(state))
    _unstall(git_repo)
    again = _resume(git_repo, env)
    _assert_merged_once_and_clean(again, run_task, git_repo, base_env, "late")
    assert len(intervals(tmp_path)["late"]) == (
        2 if leftover == "still-running-at-resume" else 1)   # killed leftover: run again
    assert "[late] recovered from the interrupted run: " in again.stderr


def test_a_session_merged_just_before_ralph_is_killed_is_not_run_again(
        run_task, recovery_env, git_repo, base_env, tmp_path):
    create(run_task, {"merged": "a"})
    (tmp_path / "marks" / "first-merged").mkdir()              # no gate: it works at once
    env = {**recovery_env, "STUB_ACTION": GATED + STALL}
    proc = _start(git_repo, env)
    try:
        # merged into main and its worktree removed; ralph.py then stalls on its session_end
        # event, before the state says the session ended
        wait_for(lambda: (git_repo / "out-merged.txt").exists()
                 and not list((git_repo / ".ralph" / "worktrees").glob("*/*")), timeout=30)
    finally:
        _kill(proc)
    _unstall(git_repo)
    again = _resume(git_repo, env)
    _assert_merged_once_and_clean(again, run_task, git_repo, base_env, "merged")
    assert len(intervals(tmp_path)["merged"]) == 1
    assert "[merged] recovered from the interrupted run: merged (already merged)" in again.stderr


# The agent deletes its task instead of doing it, then blocks on the gate (never opened).
DELETES = r"""
tid=$(cat "$RALPH_FROZEN_IDS_FILE")
"$RALPH_TASK_SCRIPT" delete "$tid" >/dev/null
mkdir "$MARKS/deleted-$tid"
read _ < "$MARKS/gate"
"""


def test_a_task_its_session_deleted_before_ralph_is_killed_is_named_on_resume(
        run_task, recovery_env, git_repo, base_env, tmp_path):
    create(run_task, {"gone": "a"})
    env = {**recovery_env, "STUB_ACTION": DELETES}
    proc = _start(git_repo, env)
    try:
        wait_for(lambda: (tmp_path / "marks" / "deleted-gone").exists(), timeout=30)
    finally:
        _kill(proc)
    again = _resume(git_repo, env)
    assert again.returncode == 0, again.stderr
    notice = "task gone: deleted by the session's agent, not finished (nothing verified it)"
    assert f"[gone] {notice}\n" in again.stderr
    assert ("[gone] recovered from the interrupted run: the session left the task deleted\n"
            in again.stderr)
    assert "ralph.py died" not in again.stderr
    assert export(run_task)["gone"]["status"] == "deleted"
    (events,) = (git_repo / ".ralph" / "runs").glob("*/events.jsonl")
    logged = [json.loads(line) for line in events.read_text().splitlines()]
    assert [(e["task"], e["message"]) for e in logged if e.get("kind") == "deleted"] == [
        ("gone", notice)]
    report = json.loads(subprocess.run([sys.executable, str(RALPH), "report", "--json"],
                                       cwd=git_repo, env=env, capture_output=True, text=True,
                                       check=True).stdout)
    assert {t["id"]: t["outcome"] for t in report["tasks"]} == {"gone": "deleted"}
    status = json.loads(subprocess.run([sys.executable, str(RALPH), "status", "--json"],
                                       cwd=git_repo, env=env, capture_output=True, text=True,
                                       check=True).stdout)
    assert status["completed"] == 0, status


# On its first attempt, the agent of $DELETER deletes `dup` (which waits for it, its
# dependency, and no session claims); p2's agent blocks on the gate (never opened).
DELETES_DUP = r"""
tid=$(cat "$RALPH_FROZEN_IDS_FILE")
if mkdir "$MARKS/first-$tid" 2>/dev/null; then
  if [ "$tid" = "$DELETER" ]; then
    "$RALPH_TASK_SCRIPT" delete dup >/dev/null; mkdir "$MARKS/deleted"
  fi
  if [ "$tid" = p2 ]; then read _ < "$MARKS/gate"; fi
fi
echo "$tid" >> "out-$tid.txt"
git add -A >/dev/null && git commit -qm "work on $tid" >/dev/null
"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null
"""


def _named(git_repo) -> list[str]:
    paths = list((git_repo / ".ralph" / "runs").glob("*/state.json"))
    state = json.loads(paths[0].read_text()) if paths else {}
    return state.get("extra", {}).get("parallel", {}).get("deletionsNamed", [])


@pytest.mark.parametrize("deleter", ["p1", "p2"], ids=["named-before-the-kill", "named-on-resume"])
def test_a_task_no_session_held_deleted_before_ralph_is_killed_is_named_once_across_the_resume(
        run_task, recovery_env, git_repo, base_env, tmp_path, deleter):
    """p1's session ends after its agent deleted `dup`: named then, and kept in the run state,
    so the resume does not name it again. p2's session is killed with ralph.py after its agent
    deleted `dup`: the resume names it, once, though p2's next session ends after it."""
    create(run_task, {"p1": "a", "p2": "b"} if deleter == "p1" else {"p2": "b"})
    assert run_task("create", "dup", "Task dup", "-c", "component:c", "--deps", deleter
                    ).returncode == 0
    env = {k: v for k, v in recovery_env.items() if k != "RALPH_TASK_CMD"}   # ralph's own store
    env = {**env, "STUB_ACTION": DELETES_DUP, "DELETER": deleter}
    proc = _start(git_repo, env)
    try:
        wait_for(lambda: (tmp_path / "marks" / "first-p2").exists()
                 and (_named(git_repo) if deleter == "p1"
                      else (tmp_path / "marks" / "deleted").exists()), timeout=30)
    finally:
        _kill(proc)
    again = _resume(git_repo, env)
    assert again.returncode == 0, again.stderr
    assert last_line(again.stdout) == "All tasks complete. Exiting loop."
    line = "task dup: deleted during the session, not done (it was not the session's task)"
    assert again.stderr.count(line) == (0 if deleter == "p1" else 1), again.stderr
    (events,) = (git_repo / ".ralph" / "runs").glob("*/events.jsonl")
    logged = [json.loads(line) for line in events.read_text().splitlines()]
    assert [(e["task"], e["message"]) for e in logged if e.get("kind") == "deleted"] == [
        ("dup", line)]
    assert {tid: t["status"] for tid, t in export(run_task).items()} == {
        **({"p1": "done"} if deleter == "p1" else {}), "p2": "done", "dup": "deleted"}
