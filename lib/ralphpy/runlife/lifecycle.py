"""Owns the life of one plan/build run on disk, as ralph.py's loop sees it: picking the run (a new
one, or the newest unfinished one after a crash or with --resume), the run lock around it, saving
its state at start, at each session start/end and at exit, the progress record (progress.md,
events.jsonl), and closing the run on every way out, the lock released last; the notifications
of a run that asks for them are attached at its start and sent by its end, and its report is
written at the end. What an earlier run left behind is settled at its start (runs.leftovers: a
crashed run's session when it is resumed, the task a run ended by Ctrl+C left active when a new
one starts). Does not own the lock, state or progress formats (runs.lock, runs.state,
runs.progress), the notifications (notify) or the report (report), the task calls, printing or
exit codes: it returns notes for ralph.py to print on stderr."""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ralphpy import procs
from ralphpy.backlog import readonly
from ralphpy.runs import leftovers, progress
from ralphpy.runs import lock as run_lock
from ralphpy.runs import state as run_state
from ralphpy.errors import EXIT_INTERRUPTED as INTERRUPTED, EnvironmentFailure, UsageError
from ralphpy.notify import channels
from ralphpy.notify import settings
from ralphpy.report import billing


@dataclass
class Run:
    ralph_dir: Path
    lock: run_lock.RunLock
    state: run_state.RunState
    resumed: bool
    notes: list[str] = field(default_factory=list)   # one stderr line each, in order
    session_clock: float = 0.0
    session_since: str = ""                          # SQLite datetime of the session start
    retries_before: dict[str, int] = field(default_factory=dict)   # retry counts at its start
    closed: bool = False
    notifying: bool = False                          # a notify channel listens to its events
    ended: dict[str, Any] | None = None              # the session recorded, not saved yet

    def save(self) -> None:
        """save(run): for the layers below, which hold a Run but may not import this module."""
        save(self)


def _log(run: Run, kind: str, message: str, **fields: Any) -> None:
    run.notes.append(message)
    progress.append_event(run.ralph_dir, run.state.run_id, "log", kind=kind, message=message,
                          **fields)


def start_run(ralph_dir: Path, mode: str, *, max_iterations: int, cli_max_iterations: int | None,
              options: dict[str, Any], resume: bool, recover: leftovers.Recover,
              source: str) -> Run:
    """Take the run lock (RunLocked: exit 3, nothing written) and load or create the state.
    A crashed run of this mode is resumed even without --resume. source: the task source as
    the run records it (a store URL's password as ***)."""
    run_id = resumable(ralph_dir, mode, resume)
    _same_source(ralph_dir, run_id, source)
    lock = run_lock.acquire(Path(ralph_dir) / "run.lock", run_id or run_state.new_run_id())
    try:
        return _open(ralph_dir, mode, lock, run_id, max_iterations, cli_max_iterations,
                     options, resume, recover, source)
    except BaseException:
        run_lock.release(lock)
        raise


def _same_source(ralph_dir: Path, run_id: str | None, source: str) -> None:
    """A run to be resumed works on the task source it recorded: given another one now
    (`--tasks` not repeated), it would fail the dead session's task in the wrong backlog and
    find nothing to do there. UsageError (exit 1) before the lock and before any write. The
    source is checked, not taken from the state as kept settings are: a URL's password is
    never written."""
    state = run_state.read(ralph_dir, run_id) if run_id else None
    used = state.extra.get("tasks") if state is not None else None
    if isinstance(used, str) and used != source:
        raise UsageError(f"run {run_id} works on --tasks {used}: give it again to resume the "
                         f"run (given now: {source})")


def resumable(ralph_dir: Path, mode: str, resume: bool) -> str | None:
    """The run a start in this mode continues: one that died without ending, or with
    --resume one stopped by Ctrl+C/SIGTERM; None: a new run."""
    return run_state.find_resumable(ralph_dir, mode) or (
        _interrupted_run(ralph_dir, mode) if resume else None)


def _interrupted_run(ralph_dir: Path, mode: str) -> str | None:
    """--resume also continues the latest run if it was stopped by Ctrl+C/SIGTERM (exit 130);
    a plain re-run only resumes a run that died without ending (kill -9, OOM, power loss)."""
    run_id = run_state.latest_run(ralph_dir)
    state = run_state.read(ralph_dir, run_id) if run_id else None
    if state is None or state.mode != mode or state.exit_code != INTERRUPTED:
        return None
    return run_id


def _open(ralph_dir: Path, mode: str, lock: run_lock.RunLock, resumable: str | None,
          max_iterations: int, cli_max_iterations: int | None, options: dict[str, Any],
          resume: bool, recover: leftovers.Recover, source: str) -> Run:
    run_id = lock.holder.run_id
    loaded = run_state.load(ralph_dir, run_id) if resumable else run_state.Loaded(None)
    # An unreadable state (moved aside): what the dead run left, read before new events
    left = leftovers.from_events(progress.read_events(ralph_dir, run_id), ralph_dir,
                                 run_id) if loaded.recovery else None
    state = loaded.state or run_state.RunState(run_id=run_id, mode=mode,
                                               max_iterations=max_iterations, options=options)
    run = Run(Path(ralph_dir), lock, state, resumed=loaded.state is not None)
    was = "stopped by a signal at iteration" if state.ended_at else "interrupted at iteration"
    stopped = state.exit_code == INTERRUPTED                    # Ctrl+C, SIGTERM: exit 130
    state.ended_at = state.exit_code = state.exit_reason = None      # it runs again
    state.extra.setdefault("tasks", source)             # checked when the run is resumed
    run_state.save(ralph_dir, state)                  # the run directory exists from here
    if settings.config({**options, **state.options}) is not None:  # persisted ones win
        from ralphpy.notify import dispatch   # threads and channels: only when asked for
        run.notifying = dispatch.attach(ralph_dir, run_id, {**options, **state.options}) is not None
    shown = {k: channels.shown(v) if k == "notify" else v       # a webhook's token
             for k, v in state.options.items()}                          # stays in state.json
    progress.append_event(ralph_dir, run_id, "run_start", mode=state.mode,
                          options=shown, resumed=run.resumed,
                          billing=billing.billing(state.options.get("agent")))
    if lock.takeover_note:
        _log(run, "lock_takeover", lock.takeover_note)
    if loaded.recovery:
        _log(run, "state_recovery", loaded.recovery)
    if run.resumed:
        _log(run, "resume", f"Resuming run {run_id} ({was} {state.iteration}, "
                            f"{state.sessions_started} sessions started)")
        for line in run_state.merge_options(state, cli_max_iterations, options,
                                            shown={"notify": channels.shown}):
            _log(run, "flag_mismatch", line)
        leftovers.recover_dead(state, recover, log=functools.partial(_log, run),
                               stopped=stopped)
    else:
        if resume and left is None:
            _log(run, "resume", f"Nothing to resume: starting run {run_id}")
        if left is not None:
            leftovers.recover_unreadable(state, left, recover, log=functools.partial(_log, run))
        leftovers.release_interrupted(ralph_dir, run_id, recover,
                                      log=functools.partial(_log, run))
    run_state.save(ralph_dir, state)
    progress.write_progress(ralph_dir, state)
    return run


def begin_session(run: Run, *, task: str | None, log: Path, agent: str, cli: str,
                  model: str | None = None) -> Path:
    """Before the agent starts: the state names the active session (and the agent id, so a
    resumed run can release what this agent holds) and the pid file its agent links its pid
    into before exec (session_pidfile), returned for session.run: a kill -9 of ralph.py
    between the agent's start and agent_started leaves its process group known. cli: the
    agent CLI that runs (`claude`, `codex`, ...), for the session_start event; model: the model
    it was started with, named there when the night shift chose it (docs/night-shift.md)."""
    run.session_clock = time.monotonic()
    run.session_since = readonly.since_now()
    run.state.begin_session(task, None, str(log), agent=agent or None)
    pidfile = run_state.pidfile_path(run.ralph_dir, run.state.run_id, run.state.sessions_started)
    run.state.active["pidfile"] = str(pidfile)
    if agent:
        run.state.extra["agentId"] = agent
    run_state.save(run.ralph_dir, run.state)        # write-ahead: saved before the start
    progress.append_event(run.ralph_dir, run.state.run_id, "session_start",
                          n=run.state.sessions_started, task=task, agent=cli,
                          **({"agent_id": agent} if agent else {}), log=str(log),
                          **({"model": model} if model else {}))
    return pidfile                                  # progress.md: with the session's record


def _drop_pidfile(active: dict[str, Any] | None) -> None:
    """The session is over and its group reaped (session.run): its pid file names nothing."""
    if (active or {}).get("pidfile"):
        try:
            Path(active["pidfile"]).unlink(missing_ok=True)
        except OSError:
            pass                       # a leftover names a reaped group: harmless, never fatal


def agent_started(run: Run, pid: int) -> None:
    """The agent runs: its pid and start time, kept with the session. Not saved: a resumed run
    finds them in the write-ahead pid file, where the agent linked them before exec."""
    if run.state.active is not None:
        run.state.active.update(pid=pid, pidStartTime=procs.start_time(pid))


def lock_lost(run: Run, n: int | None) -> EnvironmentFailure | None:
    """The run lock is gone after session n: .ralph/ removed (`git clean -fdx`: the backlog
    went too), or the lock file alone. Either way another run could start on this backlog
    now: the run stops (exit 8). None while the lock is there."""
    lock = run.lock.path
    if lock.exists():
        return None
    if not run_state.state_path(run.ralph_dir, run.state.run_id).parent.exists():
        return EnvironmentFailure(
            f"{lock.parent} was deleted during session {n} (its run lock is gone; did the "
            "agent run `git clean -x`?): the run's record and a task database kept there went "
            "with it, stopping")
    return EnvironmentFailure(f"the run lock {lock} was deleted during session {n}: another "
                              "run could start on this backlog now, stopping")


def end_session(run: Run, *, returncode: int | None, summary: Any, interrupted: bool = False,
                completed: list[str] = (), failed: list[str] = (),
                fail_reason: str | None = None, reasons: Mapping[str, str] | None = None,
                extra: dict[str, Any] | None = None) -> None:
    """After the session (and the crash-safety step): its outcome in the state and one
    session_end event; the state and progress.md are saved with the iteration counter
    (iteration_done), or at the run's end (finish_run). Until then the state names the
    session active, and a resume after a kill -9 settles it as one ralph.py died in (its
    tasks were given back already). completed/failed: the tasks the session finished or left;
    reasons: a failed task's own reason where not fail_reason (the agent's `task fail`).
    extra: more fields for the event (the unattended-run outcome: exit class and detail)."""
    reasons = reasons or {}
    state = run.state
    ended = state.active
    n = (ended or {}).get("n", state.sessions_started)
    if (lost := lock_lost(run, n)) is not None:
        raise lost
    known = {e["task"] for e in state.completed}        # done is final: recorded once
    completed = [slug for slug in completed if slug not in known]
    details = {"n": n, "exit_code": returncode,
               "cost_usd": getattr(summary, "total_cost_usd", None)}
    for slug in completed:
        state.end_session(slug, ok=True, **details)
    for slug in failed:
        state.end_session(slug, ok=False, reason=reasons.get(slug, fail_reason), **details)
    state.active = None
    state.iteration += not interrupted        # `All tasks complete` after session 3: 3, not 2
    outcome = ("interrupted" if interrupted else "failed" if failed
               else "completed" if completed else "no task")
    tasks = [*completed, *failed]
    event = {"n": n, "task": tasks[0] if len(tasks) == 1 else (tasks or None),
             "exit_code": returncode,
             "duration_s": round(time.monotonic() - run.session_clock, 3),
             "cost_usd": getattr(summary, "total_cost_usd", None),
             "turns": getattr(summary, "num_turns", None), "outcome": outcome}
    for key, attr in (("tokens_in", "input_tokens"), ("tokens_out", "output_tokens")):
        if getattr(summary, attr, None) is not None:     # agents that report tokens, not cost
            event[key] = getattr(summary, attr)
    if failed:
        event["reason"] = reasons.get(failed[0], fail_reason)
    if len(tasks) > 1:                   # which of them ended how (the report's per-task outcome)
        event.update(completed=list(completed), failed=list(failed))
    event.update(extra or {})
    run.ended = ended
    progress.append_event(run.ralph_dir, state.run_id, "session_end", **event)


def save(run: Run) -> None:
    """Save the state and progress.md now: the last session's record with it (end_session),
    whose pid file goes after the save, once the state no longer names it."""
    run_state.save(run.ralph_dir, run.state)
    ended, run.ended = run.ended, None
    _drop_pidfile(ended)
    progress.write_progress(run.ralph_dir, run.state)


def iteration_done(run: Run, iteration: int) -> None:
    """The loop completed an iteration (the LOOP <n> counter): saved with the session's
    record, the one write after a session."""
    run.state.iteration = iteration
    save(run)


def kept_options(ralph_dir: Path, mode: str, resume: bool = False) -> dict[str, Any]:
    """The persisted settings of the run a start in this mode would resume, {} for a new run:
    read before the lock, so a check that must pass before anything is written checks what
    the resumed run will keep (its sandbox), not only the flags given now."""
    run_id = resumable(ralph_dir, mode, resume)
    state = run_state.read(ralph_dir, run_id) if run_id else None
    return dict(state.options) if state is not None else {}


def preview(ralph_dir: Path, mode: str, resume: bool = False) -> str:
    """The dry run's line about the run (read-only): would it start, resume, or be refused."""
    lock = run_lock.inspect(Path(ralph_dir) / "run.lock")
    if lock.state in ("alive", "foreign", "unreadable"):
        return (f"Run: would be refused (exit 3): run lock {lock.detail}" if lock.holder
                else f"Run: would be refused (exit 3): {lock.detail}")
    run_id = resumable(ralph_dir, mode, resume)
    state = run_state.read(ralph_dir, run_id) if run_id else None
    if state is not None:
        was = "stopped by a signal" if state.ended_at else "interrupted"
        return (f"Run: would resume run {run_id} ({was} at iteration {state.iteration}, "
                f"{state.sessions_started} sessions started)")
    if run_id:
        return f"Run: would resume run {run_id} (its state is unreadable: a fresh state)"
    return f"Run: would start a new run (run lock {Path(ralph_dir) / 'run.lock'} is free)"


def finish_run(run: Run | None, exit_code: int, reason: str) -> None:
    """On every way out, once: state finished, progress and run_end written, then the lock
    released, even when a write fails (the failure is raised after the release)."""
    if run is None or run.closed:
        return
    run.closed = True
    ended = run.state.active             # a session cut short (an error, a signal): its group
    try:                                 # was reaped by session.run, its pid file names nothing
        run.state.finish(exit_code, reason)
        run.ended = run.ended or ended
        save(run)
        progress.append_event(run.ralph_dir, run.state.run_id, "run_end",
                              exit_code=exit_code, reason=reason)
        from ralphpy.report import files   # the renderers: at the end only
        files.write_at_end(run.ralph_dir, run.state.run_id,   # report.md, report.html
                                  wait=exit_code != INTERRUPTED)
    finally:
        run_lock.release(run.lock)
        if run.notifying:
            from ralphpy.notify import dispatch
            dispatch.detach(run.ralph_dir, run.state.run_id)   # at most the notify timeout


__all__ = ["Run", "start_run", "resumable", "kept_options", "begin_session", "agent_started", "end_session",
           "save", "iteration_done", "finish_run", "preview"]
