"""Owns the recovery of a `--parallel` run whose ralph.py died (SIGKILL, power loss; issue 8):
for every session the run state lists, what is left of its agent's process group is killed,
a task already `done` is merged back (or re-opened when that fails), an `active` one goes back
to open; whatever the dead run's agent ids still hold is failed and they are deregistered; the
run's worktrees are removed. Nothing is lost, nothing runs twice.

Does not own opening the run (run_control), merging (the caller's `merge`), task calls (the
caller's `call`/`export`) or printing (`warn`).
"""
from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Callable

from ralphkit import run_lock, run_state, worktrees

DIED_REASON = "ralph.py died during this session"


def _kill_group(entry: dict) -> None:
    pid = entry.get("pid")
    now = run_lock.pid_start_time(pid) if pid else None
    # as run_control: the agent led its group (pgid = its pid); killed when that pid is gone
    # (its children may live on: a pid is not reused while it names a live group) or is
    # still the same process
    if pid and (now is None or now == entry.get("procStart")):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass


def recover(state: run_state.RunState, *, cwd: Path, run_branch: str,
            export: Callable[[], dict[str, dict]], call: Callable[..., tuple[bool, str]],
            merge: Callable[[worktrees.Worktree], tuple[bool, str]],
            warn: Callable[[str], None]) -> None:
    """Finish what the dead run's sessions (state.extra.parallel.sessions) left."""
    info = state.extra.get("parallel", {})
    base = info.get("runBranch") or run_branch
    sessions = info.get("sessions") or []
    for entry in sessions:
        _kill_group(entry)
    # Read the backlog only once every group is dead: a leftover agent process could still
    # mark its task done in between, and that task must then be merged, not failed.
    tasks = export()
    for entry in sessions:
        tid = entry["task"]
        status = (tasks.get(tid) or {}).get("status")
        wt = worktrees.Worktree(Path(cwd).resolve(), Path(entry["worktree"]), entry["branch"],
                                base, tid)
        if status == "done" and wt.path.is_dir():
            ok, reason = merge(wt)                   # re-opens the task when it cannot merge
        else:
            ok, reason = False, DIED_REASON
            if status == "active":
                call("fail", tid, "--reason", DIED_REASON)
            elif status == "done":                   # done, but its work is nowhere to merge
                call("_reopen", tid, "--reason", DIED_REASON)
        (state.completed if ok else state.failed).append(
            {"task": tid, "at": run_state.utc_now(), **({} if ok else {"reason": reason})})
        warn(f"[{tid}] recovered from the interrupted run: " + ("merged" if ok else reason))
    for agent in info.get("agents") or []:              # whatever the dead agents still hold
        if not agent:
            continue
        _, out = call("list", "--status", "active", "--assignee", agent, "--markdown")
        for line in out.splitlines():
            if line.startswith("id: "):
                call("fail", line[4:], "--reason", DIED_REASON)
        call("agent", "deregister", agent)
    removed = worktrees.cleanup_run(cwd, state.run_id, base)
    state.active, info["sessions"] = None, []
    warn(f"Resuming run {state.run_id}: removed {len(removed)} worktree(s) of the interrupted run")


__all__ = ["recover", "DIED_REASON"]
