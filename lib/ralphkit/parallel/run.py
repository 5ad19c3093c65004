"""Owns the `--parallel N` build run (seed 001 "Fill capacity"): N registered agent
ids (slots), one claimed task per session in its own git worktree and branch
`ralph/<runId>/<task>`, all sessions pumped together (session_pool), the finished task's
branch merged back (worktrees.merge_back; a failed merge re-opens the task with the reason and
keeps the branch), the run state of the run ralph.py opened (`active` lists every session),
events and progress.md, and on start the recovery of a parallel run whose ralph.py died (its agents'
groups killed, its done tasks merged, its active tasks failed, its worktrees removed): each
session is written into the run state before its worktree and agent exist (write-ahead).
Issue 7 here: each session's timeouts (enforced by session_pool), a timed-out task failed
with the timeout as its reason, and the --max-consecutive-failures breaker (exit 6).

Does not own choosing which tasks may run together (scheduler, components), git plumbing
(worktrees), the prompt text (assignment), the agent argv (agents) or printing: messages go
through the `say`/`warn` callbacks, sessions' renderings to `out`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Callable

from ralphkit.agents import adapters as agents
from ralphkit.assign import choice as assignment
from ralphkit.unattended import guards
from ralphkit.unattended import outcome
from ralphkit.parallel import recovery as parallel_recovery
from ralphkit.runs import progress
from ralphkit.runs import lifecycle as run_control
from ralphkit.runs import lock as run_lock
from ralphkit.runs import state as run_state
from ralphkit.parallel import scheduler
from ralphkit.session import pool as session_pool
from ralphkit.backlog import client as task_client
from ralphkit.session import watchdog
from ralphkit import workspace
from ralphkit.parallel import worktrees
from ralphkit.errors import RalphError, ScopeChanged, UsageError
from ralphkit.signals import Guard
from ralphkit.backlog.calls import TaskCommand

FAIL_REASON = "session exited without completing task"       # s.15.5's reason
LEASE = "3600"           # a claimed task stays ours while its session runs (task-cli s.9.4)


@dataclass
class Setup:
    """What the run needs from ralph.py (its RunContext, flattened)."""

    task: TaskCommand
    env: dict[str, str]
    cwd: Path
    adapter: agents.AgentAdapter
    danger: bool
    model: str | None
    parallel: int
    max_iterations: int
    merge: str
    run_branch: str
    first_agent: str
    run: run_control.Run                         # lock, state, progress
    guard: Guard
    out: BinaryIO
    say: Callable[[str], None]
    warn: Callable[[str], None]
    on_first_interrupt: Callable[[], None]
    stem: str                                    # session log name prefix
    timeouts: watchdog.SessionTimeouts | None = None   # none)
    kill_grace_s: float = 10.0                   # SIGTERM, this long, then SIGKILL
    max_consecutive_failures: int = 0            # issue 7's breaker (0: off), exit 6
    # the scope check (it names each change once and raises
    # ScopeChanged under STOP_ON_SCOPE_CHANGE); True when every frozen task is done.
    scope_check: Callable[[], bool] | None = None
    verify: Any = None                           # verify.completion.Gate: judged before the merge


@dataclass
class _Session:
    task: dict
    agent: str
    wt: worktrees.Worktree
    log: Path
    writer: session_pool.PrefixWriter
    n: int = 0
    started: str = field(default_factory=run_state.utc_now)
    pidfile: Path | None = None


def _listed(tid: str, agent: str, wt: worktrees.Worktree, log: Path, started: str,
            pidfile: Path | None, pid: int | None) -> dict:
    """A session as the run state lists it (parallel_recovery reads it back)."""
    return {"task": tid, "agent": agent, "branch": wt.branch, "worktree": str(wt.path),
            "log": str(log), "startedAt": started, "pid": pid,
            "procStart": run_lock.pid_start_time(pid) if pid else None,
            "pidfile": str(pidfile) if pidfile else None}


class ParallelBuild:
    def __init__(self, setup: Setup) -> None:
        self.s = setup
        self.ralph_dir = setup.run.ralph_dir         # <git top>/.ralph
        self.free_agents: list[str] = []
        self.extra_agents: list[str] = []
        self.sessions: dict[str, _Session] = {}
        self.starting: dict | None = None        # the session being started (write-ahead)
        self.template = assignment.load_template(None)
        self.export_warned = False
        self.ended: list = []                    # sessions ended, not yet finished (_wait)
        self.pool: session_pool.Pool | None = None
        self.state: run_state.RunState = setup.run.state
        # issue 7's consecutive-failures breaker only (its message and counting): a session
        # fails here when its task did not end done (and merged)
        self.breaker = guards.Guards(guards.Limits(0, 0, setup.max_consecutive_failures,
                                                   None, None, None))
        self.verdict: guards.Verdict | None = None
        self.scope_stop: ScopeChanged | None = None  # no new session; exit 4 at the end

    # ------------------------------------------------------------------ task calls
    def _call(self, *args: str) -> tuple[bool, str]:
        result = self.s.task.call(*args, env=self.s.env)
        return result.ok, result.output

    def _export(self) -> dict[str, dict]:
        records = task_client.export_tasks(self.s.task.bound(self.s.env))
        if records is None:
            if not self.export_warned:
                self.export_warned = True
                self.s.warn(f"Error: --parallel reads the backlog with `{self.s.task.command} "
                            "_export-json`, which failed; no task is started")
            return {}
        return {record["id"]: record for record in records if record.get("id")}

    def _passthrough(self, *args: str) -> None:
        self.s.out.flush()
        self.s.task.passthrough(*args, env=self.s.env, out=self.s.out)

    # ------------------------------------------------------------------ state
    def _save(self) -> None:
        st = self.state
        pids = self.pool.pids() if self.pool else {}
        listed = [_listed(tid, x.agent, x.wt, x.log, x.started, x.pidfile, pids.get(tid))
                  for tid, x in self.sessions.items()]
        if self.starting:
            listed.append(self.starting)
        if listed:
            st.active = {"n": st.sessions_started, "task": ", ".join(x["task"] for x in listed),
                         "startedAt": min(x["startedAt"] for x in listed), "pid": None,
                         "log": f"{len(listed)} session logs", "agent": None,
                         "sessions": listed}
        else:
            st.active = None
        # run_control's resume only knows one session (state.active): the sessions are kept
        # here too, for _recover after a crash
        st.extra["parallel"] = {"slots": self.s.parallel, "runBranch": self.s.run_branch,
                                "merge": self.s.merge,
                                "agents": [self.s.first_agent, *self.extra_agents],
                                "sessions": (st.active or {}).get("sessions", [])}
        run_state.save(self.ralph_dir, st)
        progress.write_progress(self.ralph_dir, st)

    def _event(self, name: str, **fields: Any) -> None:
        progress.append_event(self.ralph_dir, self.state.run_id, name, **fields)

    # ------------------------------------------------------------------ start and recovery
    def _open_run(self) -> None:
        """run_control opened (or resumed) the run; a resumed parallel run's sessions died
        with their ralph.py: finish what they left (its sessions, and its branches: a task
        done on a branch that was never merged is merged now or re-opened)."""
        if "parallel" in self.state.extra:
            parallel_recovery.recover(self.state, cwd=Path(self.s.cwd),
                                      run_branch=self.s.run_branch, export=self._export,
                                      call=self._call, merge=self._merge, warn=self.s.warn)
        self._save()
        self._event("log", kind="parallel", message=f"{self.s.parallel} slots, merge "
                                                     f"{self.s.merge}, into {self.s.run_branch}")

    # ------------------------------------------------------------------ scheduler callbacks
    def _peek(self) -> list[dict]:
        if self.s.scope_check is not None:       # before the sessions this peek may start
            try:
                if self.s.scope_check():
                    return []                    # every frozen task is done
            except ScopeChanged as err:
                self.scope_stop = err
                return []
        tasks = self._export()
        done = {tid for tid, t in tasks.items() if t.get("status") == "done"}
        frozen = self._frozen_ids()
        found = [t for t in tasks.values()
                 if t.get("status") == "open" and not t.get("held") and not t.get("deleted_at")
                 and (frozen is None or t["id"] in frozen)
                 and all(dep in done for dep in t.get("deps") or [])]
        if not found and not self.sessions and self.s.verify and self.s.verify.recheck():
            return self._peek()                  # a stale verification failed: reopened
        return found

    def _frozen_ids(self) -> set[str] | None:
        """Issue 5 with --parallel: only frozen tasks are candidates (a claim of another one
        fails anyway under RALPH_FROZEN_IDS_FILE; not offering it keeps the scheduler from
        retrying it). None when the scope is not frozen."""
        path = self.s.env.get("RALPH_FROZEN_IDS_FILE")
        if not path:
            return None
        try:
            return set(Path(path).read_text(encoding="utf-8").split())
        except OSError:
            return set()

    def _claim(self, task: dict) -> bool:
        if not self.free_agents:
            return False
        agent = self.free_agents[0]
        ok, _ = self._call("claim", task["id"], "--agent", agent, "--lease", LEASE)
        if ok:
            self.free_agents.remove(agent)
            task["_agent"] = agent
        return ok

    def _launch(self, task: dict) -> _Session | None:
        s, tid, agent = self.s, task["id"], task["_agent"]
        self.state.sessions_started += 1
        n = self.state.sessions_started
        stem = f"{s.stem}-{n:03d}-{worktrees.branch_safe(tid)}"
        log = workspace.ralph_subdir(Path(s.cwd), "logs") / f"{stem}.jsonl"   # s.20.3
        run_dir = self.ralph_dir / "runs" / self.state.run_id
        pidfile = run_dir / f"session-{n:03d}.pid"
        # Write-ahead (issue 8 recovery): the session is in the run state before its worktree
        # or agent exists, and its agent records its pid in `pidfile` before it runs
        # (session_pidfile), so a kill -9 of ralph.py at any point leaves nothing unlisted.
        try:
            planned = worktrees.planned(s.cwd, self.state.run_id, tid, s.run_branch)
        except RalphError as err:
            return self._not_started(task, f"cannot create its worktree: {err}")
        self.starting = _listed(tid, agent, planned, log, run_state.utc_now(), pidfile, None)
        self._save()                    # a state that cannot be written stops the run here
        try:
            wt = worktrees.create(s.cwd, self.state.run_id, tid, s.run_branch)
        except RalphError as err:
            return self._not_started(task, f"cannot create its worktree: {err}")
        block = assignment.render_block(assignment.build_task(task, Path(s.cwd)), self.template)
        prompt = assignment.session_prompt(block)
        if not s.adapter.prompt_on_stdin and not agents.prompt_fits(prompt):
            prompts = workspace.ralph_subdir(Path(s.cwd), "prompts")      # as the loop's
            prompt = agents.spill_prompt("/ralph-build", block, prompts / f"{stem}.md")
        argv = s.adapter.argv(prompt, danger=s.danger, model=s.model)
        frozen = run_dir / f"task-{worktrees.branch_safe(tid)}"
        frozen.write_text(tid + "\n")
        env = {**s.env, **s.adapter.env(danger=s.danger),
               **worktrees.session_env(wt, s.env, Path(s.cwd)),
               "RALPH_AGENT_ID": agent, "RALPH_FROZEN_IDS_FILE": str(frozen)}
        writer = session_pool.PrefixWriter(s.out, tid)
        s.out.flush()
        failed = self.pool.start(tid, argv, env=env, cwd=wt.path, log_path=log,
                                 renderer=s.adapter.new_renderer(writer),
                                 stdin=s.adapter.stdin(prompt), pidfile=pidfile)
        if failed is not None:
            s.warn(f"Error: cannot run '{argv[0]}': {failed.error}")
            worktrees.remove(wt)
            pidfile.unlink(missing_ok=True)
            return self._not_started(task, f"cannot run '{argv[0]}': {failed.error}")
        self.sessions[tid] = _Session(task, agent, wt, log, writer, n,
                                      self.starting["startedAt"], pidfile)
        self.starting = None
        s.say(f"[{tid}] started: agent {agent}, branch {wt.branch}")
        self._event("session_start", n=self.state.sessions_started, task=tid, agent=agent,
                    branch=wt.branch, log=str(log))
        self._save()
        return self.sessions[tid]

    def _not_started(self, task: dict, reason: str) -> None:
        self.starting = None
        self._call("fail", task["id"], "--reason", reason)
        self.free_agents.append(task["_agent"])
        self.state.failed.append({"task": task["id"], "at": run_state.utc_now(),
                                  "reason": reason})
        self._save()
        return None

    def _wait(self, active: dict) -> list[tuple[str, bool]]:
        """One ended session at a time: its slot is refilled before the next one is merged, so
        a new session runs while the merges (the serial part, git) go on (bench/parallel)."""
        if not self.ended:
            self.ended = self.pool.wait()
        if not self.ended:
            return []
        tid, result = self.ended.pop(0)
        return [(tid, self._finish(tid, result))]

    # ------------------------------------------------------------------ one session's end
    def _merge(self, wt: worktrees.Worktree) -> tuple[bool, str]:
        try:
            merged = worktrees.merge_back(wt, self.s.merge)
        except RalphError as err:
            merged = worktrees.MergeResult(False, True, str(err))
        if merged.merged or (self.s.merge == "none" and not merged.conflict):
            return True, merged.message
        self._call("_reopen", wt.task, "--reason", merged.message)
        return False, merged.message

    def _outcome(self, result) -> outcome.Outcome:
        """Issue 7's classification (usage limits are not detected in parallel runs)."""
        limits = self.s.timeouts or watchdog.SessionTimeouts(None, None)
        return outcome.classify(result.returncode, result.summary, timed_out=result.timed_out,
                                idle_out=result.idle_out, session_timeout_s=limits.session_s,
                                idle_timeout_s=limits.idle_s)

    def _finish(self, tid: str, result) -> bool:
        x = self.sessions.pop(tid)
        x.writer.close()
        how = self._outcome(result)
        record = self._export().get(tid) or {}
        status = record.get("status")
        verdict = self.s.verify.judge_worktree(record, x.wt) if status == "done" and self.s.verify \
            else None
        if verdict is not None and not verdict.ok:
            ok, message = False, verdict.reason.split("\n", 1)[0]       # reopened (or held)
        elif status == "done":
            ok, message = self._merge(x.wt)
        elif status == "active":
            # s.15.5 crash safety; a timeout is named as the single loop names it
            reason = how.detail if result.timed_out or result.idle_out else FAIL_REASON
            self._passthrough("fail", tid, "--reason", reason)
            ok, message = False, reason
        else:
            ok, message = status == "deleted", f"the session left the task {status}"
        try:
            worktrees.remove(x.wt)
        except RalphError as err:
            self.s.warn(f"[{tid}] could not remove its worktree: {err}")
        self.free_agents.append(x.agent)
        self.state.iteration += 1                      # sessions ended, as the loop's k
        entry = {"task": tid, "at": run_state.utc_now(), "agent": x.agent, "n": x.n,
                 "branch": x.wt.branch, "exit_code": result.returncode}
        (self.state.completed if ok else self.state.failed).append(
            entry if ok else {**entry, "reason": message})
        summary = result.summary
        self._event("session_end", n=x.n, task=tid, exit_code=result.returncode,
                    outcome="completed" if ok else "failed", reason=message,
                    **{"class": how.kind, "detail": how.detail,
                       "counts_as_failure": how.counts_as_failure},
                    cost_usd=getattr(summary, "total_cost_usd", None),
                    turns=getattr(summary, "num_turns", None))
        self._save()
        if x.pidfile:
            x.pidfile.unlink(missing_ok=True)
        self.s.say(f"[{tid}] {'done' if ok else 'failed'}: {message}")
        counted = outcome.Outcome(how.kind, message, not ok)
        if tripped := self.breaker.after_session(counted, None, "", None):
            self.verdict = self.verdict or tripped          # no new session; exit 6 at the end
        return ok

    # ------------------------------------------------------------------ the run
    def run(self) -> str:
        """Run to the end; returns the scheduler's reason (`complete`, `blocked`,
        `max_iterations`) or `interrupted`. Raises NoProgress when
        --max-consecutive-failures sessions in a row failed, and ScopeChanged when the frozen
        scope changed under STOP_ON_SCOPE_CHANGE (the running sessions end first)."""
        s = self.s
        if not s.run_branch:
            raise UsageError("--parallel needs a checked-out branch to merge into "
                             "(HEAD is detached or this is not a git repository)")
        plan = scheduler.ParallelRun(parallel=s.parallel, max_iterations=s.max_iterations)
        reason = "interrupted"
        with session_pool.Pool(s.guard, s.on_first_interrupt, timeouts=s.timeouts,
                               kill_grace_s=s.kill_grace_s) as pool:
            self.pool = pool                           # from here a signal is queued, not raised:
            try:                                       # recovery and registrations are finished
                self._open_run()
                self.free_agents = [s.first_agent] + [self._register()
                                                      for _ in range(s.parallel - 1)]
                self._save()                   # the agents, before any of them claims a task
                plan.started = self.state.sessions_started if s.max_iterations else 0
                scheduler.run(plan, peek=self._peek, claim=self._claim, launch=self._launch,
                              wait=self._wait,
                              stopping=lambda: (pool.interrupted or bool(s.guard.pending)
                                                or self.verdict is not None
                                                or self.scope_stop is not None))
                if self.scope_stop is not None and not pool.interrupted:
                    reason = "scope_changed"
                elif plan.reason != "stopped":
                    reason = plan.reason
                elif self.verdict is not None and not pool.interrupted:
                    reason = "no_progress"
                while self.ended or len(pool):         # stopped: the sessions end (s.16)
                    pool.handle_signals()
                    self._wait({})
            finally:
                for tid, result in [*self.ended, *pool.kill_all()]:   # nothing outlives the run
                    self._finish(tid, result)
                self.ended = []
                if s.guard.pending or pool.interrupted:
                    reason = "interrupted"
                self.close(reason)
        if reason == "no_progress":
            raise self.verdict.error()                 # exit 6, as the single loop
        if reason == "scope_changed":
            raise self.scope_stop                      # exit 4, as the single loop
        return reason

    def _register(self) -> str:
        ok, out = self._call("agent", "register")
        self.extra_agents.append(out)
        return out

    def close(self, reason: str) -> None:
        """Worktrees and the extra agents go; the state is closed by ralph.py's exit cleanup
        (run_control.finish_run), after the first agent's deregistration (s.17)."""
        s = self.s
        s.guard.closing = True
        try:
            worktrees.cleanup_run(s.cwd, self.state.run_id, s.run_branch)
        except RalphError as err:
            s.warn(f"could not remove the run's worktrees: {err}")
        for agent in self.extra_agents:
            if agent:
                self._passthrough("agent", "deregister", agent)
        self._save()


def run(setup: Setup) -> str:
    """The parallel build loop; returns why it ended (see ParallelBuild.run)."""
    return ParallelBuild(setup).run()


__all__ = ["Setup", "run", "FAIL_REASON"]
