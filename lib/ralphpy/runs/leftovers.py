"""Owns what a run that ended badly left behind, as the next run of the backlog settles it: the
session of a crashed run being resumed (kill -9, OOM, power loss: its agent's process group
killed, its task settled or failed with a reason, its agent released, through a callback)
and the task a run ended by Ctrl+C or SIGTERM left active (exit 130,
docs/contract/ralph-cli.md s.16: no crash-safety step then), released when a new run starts. A run
the person stopped was no attempt at its task: its task goes back without a failure counted
(`attempt=False`: `task _release`, which --max-attempts does not see in later runs); a crashed run's
task is failed, so that a task whose session takes ralph down with it each time is still held in the
end. When the dead run's state.json could not be read, its events say which agent it registered, the
session it left running and how it ended, and that is settled the same way. Does not own the
task calls (the `recover` callback, loop.launch), the run state's format (runs.state) or
printing: each line goes to `log(kind, line)`, which runlife.lifecycle prints on stderr and
records as a `log` event."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ralphpy import strays
from ralphpy.errors import EXIT_INTERRUPTED as INTERRUPTED
from ralphpy.runs import state as run_state
from ralphpy.session import dead as session_dead


@dataclass
class Recovered:
    """What recover() did for the dead run's session and agent."""
    failed: list[str] = field(default_factory=list)       # tasks given back to open
    finished: list[str] = field(default_factory=list)     # its task, found done: not failed
    notes: list[str] = field(default_factory=list)        # lines for stderr and the log


# recover(run_id, agent_id, reason, attempt) -> Recovered: settles the dead run's session,
# gives back what its agent still holds (failed when `attempt`, else released) and
# deregisters it (loop.launch's task calls).
Recover = Callable[[str, str, str, bool], Recovered]
Log = Callable[..., None]                  # log(kind, line, task=...): the task it settled


def _kill_dead_agent(active: dict[str, Any] | None, kind: str, log: Log) -> None:
    """Stop the crashed session's agent for good (session.dead: its pid file taken, what is
    left of its group SIGKILLed and awaited, what left the group killed too), so that none of
    it can still `task done` or commit once its tasks are failed. A pid that now belongs to
    another process is left alone. Each kill is one line: `kind`, `strays`."""
    active = active or {}
    pid = active.get("pid")
    stopped = session_dead.stop(active.get("pidfile"), pid if isinstance(pid, int) else None,
                                active.get("pidStartTime"))
    if stopped.group is not None:
        log(kind, f"killed what was left of the dead run's agent (process group {stopped.group})")
    if stopped.strays:
        log("strays", strays.line(stopped.strays))


def recover_dead(state: run_state.RunState, recover: Recover, log: Log,
                 stopped: bool = False) -> None:
    """The resumed run's dead session: kill its agent, settle its task (found done: completed,
    not failed), give back what its agent still holds with a reason, deregister it.
    stopped: the run ended by Ctrl+C or SIGTERM (exit 130), no attempt at its task."""
    reason = _reason(state.run_id, stopped)
    dead = state.active                  # taken below, once recover() said how its task ended
    _kill_dead_agent(dead, "resume", log)
    agent = (dead or {}).get("agent") or state.extra.pop("agentId", None)
    got = recover(state.run_id, agent, reason, not stopped) if agent else Recovered()
    if (dead or {}).get("task") in got.finished:
        state.active = None              # its end was settled: not a failure
    state.take_interrupted(reason)
    for slug in got.finished:
        state.completed.append({"task": slug, "at": run_state.utc_now(),
                                "n": (dead or {}).get("n"), "recovered": True})
    known = {e["task"] for e in state.failed if e.get("reason") == reason}
    state.failed += [{"task": slug, "at": run_state.utc_now(), "reason": reason}
                     for slug in got.failed if slug not in known]
    _say(log, "resume", got, agent, reason, stopped)


@dataclass
class Left:
    """What a run whose state.json could not be read left, as its events tell it."""
    agent: str
    active: dict[str, Any] | None          # the session it started and never ended
    stopped: bool                          # its last end was Ctrl+C or SIGTERM (exit 130)


def from_events(events: list[dict[str, Any]], ralph_dir: Path, run_id: str) -> Left | None:
    """The agent run `run_id` registered, the session it left running (with its pid file) and
    whether its last end was a stop, read from its events; None when no session of it named
    an agent."""
    agent, active, stopped = None, None, False
    for event in events:
        kind = event.get("event")
        if kind == "run_start":
            stopped = False                              # resumed: it ran again after that
        elif kind == "session_start" and isinstance(event.get("agent_id"), str):
            agent = event["agent_id"]
            n = event.get("n")
            active = {"n": n, "task": event.get("task"), "log": event.get("log"),
                      "agent": agent,
                      **({"pidfile": str(run_state.pidfile_path(ralph_dir, run_id, n))}
                         if isinstance(n, int) else {})}
        elif kind == "session_end":
            active = None
        elif kind == "run_end":
            stopped = event.get("exit_code") == INTERRUPTED
    return Left(agent, active, stopped) if agent else None


def recover_unreadable(state: run_state.RunState, left: Left, recover: Recover,
                       log: Log) -> None:
    """The run taken up again had a state.json that could not be read (moved aside; `state`
    is the fresh one): what it left is settled from its events as recover_dead settles a
    readable state, so its agent's task is not left active until its lease runs out."""
    state.active = left.active
    state.extra["agentId"] = left.agent
    recover_dead(state, recover, log, stopped=left.stopped)


def release_interrupted(ralph_dir: Path, current: str, recover: Recover, log: Log) -> None:
    """The run before this new one (`current`) ended by Ctrl+C/SIGTERM: what its agent, gone
    since, still holds would wait for its lease to run out (10 minutes; up to the session
    timeout and a minute under --assign), and an assigned task it finished would stay
    unsettled. Both are settled now (recover()), so this run can take the task at once.
    `--resume` continues such a run instead of starting a new one. A run of the other mode
    that died without ending (kill -9: this mode would have resumed it) left its agent
    running: it is stopped for good first, as that run's own resume would (--parallel runs
    are left to theirs: their worktrees and branches are settled there)."""
    previous = run_state.previous_run(ralph_dir, current)
    before = run_state.read(ralph_dir, previous) if previous else None
    if before is None:
        return
    agent = (before.active or {}).get("agent") or before.extra.get("agentId")
    if not isinstance(agent, str):
        return
    stopped = before.exit_code == INTERRUPTED
    if not stopped:
        if before.ended_at is not None or "parallel" in before.extra:
            return
        _kill_dead_agent(before.active, "interrupted_run", log)
    reason = _reason(previous, stopped)
    _say(log, "interrupted_run", recover(previous, agent, reason, not stopped), agent, reason,
         stopped)


def _reason(run_id: str, stopped: bool) -> str:
    """Why the task of a run that ended badly goes back: stopped by the person, or dead."""
    how = "was interrupted" if stopped else "exited"
    return f"ralph.py {how} during the session (run {run_id})"


def _say(log: Log, kind: str, got: Recovered, agent: str, reason: str, stopped: bool) -> None:
    """recover()'s notes, then one line per task it gave back (failed, or released after a
    run the person stopped)."""
    for note in got.notes:
        log(kind, note)
    verb, whose = ("released", "the interrupted") if stopped else ("failed", "the dead")
    for slug in got.failed:
        log(kind, f"{verb} task {slug} of {whose} run's agent {agent}: {reason}", task=slug,
            reason=reason)


__all__ = ["Recovered", "Recover", "Left", "from_events", "recover_dead", "recover_unreadable",
           "release_interrupted"]
