"""Owns the recovery of a `--parallel` run whose ralph.py died (SIGKILL, power loss): every session
the run state lists (written ahead, before its agent starts) is stopped for good (its pid file
claimed, or what is left of its agent's process group killed and awaited); only then is the
backlog read. Each task the dead run touched (a listed session, or a branch
`ralph/<runId>/<task>`) is settled as a normal finish would (a task its session marked completed
in its worktree's current-task.json is marked done first; with --assign a task done is
archived): `done` with commits the run's branch lacks is judged by the verify gate when it is on
(ralph.py may have died during its check) and merged back (or re-opened, branch kept, when
either fails), `done` with nothing left to merge is completed, `active` goes back to open,
`deleted` (its agent deleted it instead of finishing it) is named as a session's end names it;
whatever the dead run's agent ids still hold is failed and they are deregistered; the run's
worktrees are removed. A task never ends done while its branch holds unmerged work, and nothing
runs twice.

Does not own opening the run (runlife.lifecycle), stopping a dead session's agent (session.dead),
judging and merging (the caller's `land`), a session's own end (the caller's `session_end`),
task calls (the caller's `call`/`export`) or printing (`warn`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from ralphpy import strays
from ralphpy.backlog import answers
from ralphpy.session import dead
from ralphpy.runs import state as run_state
from ralphpy.parallel import worktrees

DIED_REASON = "ralph.py died during this session"
# (worktree, its session's agent, the task's record) -> the record once the session's end
# is settled: marked done from its current-task.json, archived (loop.parallel_sessions.assigned_end)
SessionEnd = Callable[[worktrees.Worktree, "str | None", dict], dict]
# (worktree, the done task's record) -> (merged, why): judged by the verify gate when it is
# on, then merged, or re-opened (loop.parallel_sessions.land_recovered)
Land = Callable[[worktrees.Worktree, dict], "tuple[bool, str]"]


@dataclass(frozen=True)
class Settled:
    """How a task the dead run touched ends: completed (merged, or nothing left to merge) or
    failed with the reason; deleted: its session's agent deleted it (named, not merged)."""
    completed: bool
    reason: str
    deleted: bool = False


def _stop(entry: dict, tid: str, warn: Callable[[str], None]) -> None:
    """The session's agent is stopped for good: it never starts, or its group is dead, and
    what left its group is killed (named)."""
    stopped = dead.stop(entry.get("pidfile"), entry.get("pid"), entry.get("procStart"))
    if stopped.strays:
        warn(f"[{tid}] {strays.line(stopped.strays)}")


def _settle(wt: worktrees.Worktree, task: dict, listed: bool, agent: str | None,
            land: Land, session_end: SessionEnd, call: Callable[..., tuple[bool, str]],
            env: Mapping[str, str]) -> Settled | None:
    """How a task the dead run touched ends; None when there is nothing to settle: a branch
    of a task that is not done and had no listed session, or a listed session's task that
    another agent holds or finished (on a fleet's store, another host took it once the dead
    session's lease ran out: the dead session's branch is not merged, its task not failed).
    agent: the listed session's; its `fail` is made as that agent, so a task taken between
    the export and the `fail` is refused, not failed."""
    if listed and agent and task.get("assignee") not in (None, agent):
        return None
    status = task.get("status")
    if listed and status in ("active", "done"):      # finished by the file, then ralph died;
        status = session_end(wt, agent, task).get("status")     # --assign: archived
    if status == "done":
        merged = worktrees.branch_merged(wt, env=env)
        if merged is None or merged:                 # nothing of it is left outside the run's
            return Settled(True, "already merged")   # branch (as a normal finish: no commits)
        return Settled(*land(wt, task))              # verified, then merged; else re-opened
    if not listed:
        return None                                  # its next attempt keeps the branch (@n)
    if status == "deleted":
        return Settled(True, "the session left the task deleted", deleted=True)
    if status == "active":
        call("fail", wt.task, "--reason", DIED_REASON, agent=agent)
    return Settled(False, DIED_REASON)


def recover(state: run_state.RunState, *, cwd: Path, env: Mapping[str, str], run_branch: str,
            export: Callable[[], dict[str, dict]], call: Callable[..., tuple[bool, str]],
            land: Land, session_end: SessionEnd, warn: Callable[[str], None],
            deleted: Callable[[str], None]) -> None:
    """Finish what the dead run (state.extra.parallel) left: its sessions and its branches.
    env: the run's environment, for git. session_end: the file protocol and the archive of a
    normal session's end (loop.parallel_sessions.assigned_end), for the sessions the state lists.
    deleted: names a task its session's agent deleted (loop.parallel_sessions.name_deleted)."""
    info = state.extra.get("parallel", {})
    base = info.get("runBranch") or run_branch
    sessions = info.get("sessions") or []
    for entry in sessions:
        _stop(entry, entry.get("task", "?"), warn)
    tasks = export()
    touched: dict[str, tuple[worktrees.Worktree, bool, str | None]] = {}
    for entry in sessions:
        touched[entry["task"]] = (worktrees.Worktree(
            Path(cwd).resolve(), Path(entry["worktree"]), entry["branch"], base,
            entry["task"]), True, entry.get("agent"))
    # A branch the state does not list (a state written before this check, or a session
    # whose entry was lost): its task is settled the same way when it is done.
    by_branch = {worktrees.planned(cwd, state.run_id, tid, base, env=env).branch: tid
                 for tid in tasks}
    # attempts the run already accounted for (merged, left for review, or failed with the
    # branch kept) are not looked at again: only the ones whose end was never recorded
    recorded = {e.get("branch") for e in [*state.completed, *state.failed]}
    for branch in worktrees.run_branches(cwd, state.run_id, env=env):
        tid = by_branch.get(branch)
        if tid and tid not in touched and branch not in recorded:
            touched[tid] = (worktrees.planned(cwd, state.run_id, tid, base, env=env), False, None)
    for tid, (wt, listed, agent) in touched.items():
        end = _settle(wt, tasks.get(tid) or {}, listed, agent, land, session_end, call, env)
        if end is None:
            continue
        if end.deleted:
            deleted(tid)
        (state.completed if end.completed else state.failed).append(
            {"task": tid, "at": run_state.utc_now(), "branch": wt.branch,
             **({"outcome": "deleted"} if end.deleted else {} if end.completed
                else {"reason": end.reason})})
        warn(f"[{tid}] recovered from the interrupted run: "
             + (f"merged ({end.reason})" if end.completed and not end.deleted else end.reason))
    for agent in info.get("agents") or []:              # whatever the dead agents still hold
        if not agent:
            continue
        _, out = call("list", "--status", "active", "--assignee", agent, "--markdown")
        for slug in answers.slugs(out):
            call("fail", slug, "--reason", DIED_REASON, agent=agent)
        call("agent", "deregister", agent)
    removed = worktrees.cleanup_run(cwd, state.run_id, base, env=env)
    state.active, info["sessions"] = None, []
    if sessions or touched or removed:
        warn(f"Resuming run {state.run_id}: removed {len(removed)} worktree(s) of the "
             "interrupted run")


__all__ = ["recover", "DIED_REASON", "Land", "Settled", "SessionEnd"]
