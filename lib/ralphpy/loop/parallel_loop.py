"""Owns the `--parallel N` build run (seed 001 "Fill capacity"): N registered agent ids
(slots), one claimed task per session in its own git worktree and branch `ralph/<runId>/<task>`,
all sessions pumped together (session.pool, which enforces each session's timeouts), the
order of things (recovery of a parallel run whose ralph.py died, then the scheduler's
fill-capacity loop, then the sessions' end and cleanup), and what ends it early as it ends the
single loop: an agent that cannot go on (a rejected key, root refused, usage disabled: exit
9, 10, 7), the --max-consecutive-failures breaker (exit 6), the budgets --max-cost and
--max-runtime (exit 5), `ralph ctl stop` and SIGHUP (exit 0) and the frozen scope's stop
(exit 4): no new session starts, the running ones end (and are merged), then the run ends. A
usage limit and `ralph ctl pause` are waited out as the single loop waits them once the
running sessions have ended; after a usage limit's wait the limited sessions' tasks may start
again. What holds or ends the run, and the waits, are the features' (loop.features: holding,
resume, before_end); the loop never asks a feature by name.

Does not own choosing which tasks may run together (parallel.scheduler, parallel.components),
the run's record (parallel_book), starting or ending one session (parallel_sessions, which run
it through the one session lifecycle, loop.sessions), git (parallel.worktrees), the verify
gate (a stale verification is re-checked when nothing is left to start: before_end), the
prompt text (assign.choice), the agent argv (agents) or printing: messages go through the run
context's `say`/`warn`, sessions' renderings to its stdout, each line prefixed.
"""
from __future__ import annotations

from pathlib import Path

from ralphpy.assign import mode as assign_mode
from ralphpy.assign import task_files
from ralphpy.config.table import BY_NAME
from ralphpy.errors import RalphError, ScopeChanged, UsageError
from ralphpy.loop import features, parallel_sessions, sessions
from ralphpy.loop.context import RunContext
from ralphpy.loop.parallel_book import Book
from ralphpy.parallel import NEEDS_BRANCH, components, recovery, scheduler, worktrees
from ralphpy.config.settings import find_repo_root
from ralphpy.runlife import lifecycle
from ralphpy.session import pool as session_pool
from ralphpy.unattended import outcome

LEASE = "3600"           # a claimed task stays ours while its session runs
                         # (docs/contract/task-cli.md s.9.4)


class ParallelBuild:
    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.book = Book(ctx)
        self.template = None if self.book.dispatch_template() else \
            assign_mode.anti_drift_template(ctx.options, find_repo_root(ctx.cwd))
        self.ended: list = []                    # sessions ended, not yet finished (_wait)
        self.lease_s = ctx.options.lease if ctx.fleet() else 0.0   # claims, heartbeats
        self.stop: RalphError | None = None      # the run's lock lost: exit 8
        self.scope_stop: ScopeChanged | None = None  # no new session; exit 4 at the end
        self.hold: features.Hold | None = None   # the features' hold, as last asked
        self.limited: list[str] = []             # tasks of sessions that hit a usage limit:
                                                 # tried again after its wait
        self.plan: scheduler.ParallelRun | None = None

    # ------------------------------------------------------------------ start and recovery
    def _open_run(self) -> None:
        """The lifecycle opened (or resumed) the run; a resumed parallel run's sessions died
        with their ralph.py: finish what they left (its sessions, and its branches: a task
        done on a branch that was never merged is merged now or re-opened)."""
        book = self.book
        if "parallel" in book.state.extra:
            recovery.recover(book.state, cwd=Path(self.ctx.cwd), env=self.ctx.env,
                             run_branch=self.ctx.branch, export=book.export,
                             call=book.call,
                             land=lambda wt, record: parallel_sessions.land_recovered(
                                 book, wt, record),
                             session_end=lambda wt, agent, record: parallel_sessions.assigned_end(
                                 book, wt, agent, record),
                             warn=self._recovered,
                             deleted=lambda tid: parallel_sessions.name_deleted(book, tid))
            parallel_sessions.name_unheld(book)        # deleted while the dead run's sessions ran
        book.save()
        opts = self.ctx.options
        book.event("log", kind="parallel", message=f"{opts.parallel} slots, merge "
                                                   f"{opts.merge}, into {self.ctx.branch}",
                   at_once=self._say_at_once())

    def _say_at_once(self) -> int:
        """One stderr line (stdout stays the banner's): how many of the open tasks can run at
        once, and why only one when that is so (docs/parallel.md, components.at_once)."""
        tasks = [t for t in self.book.export().values()
                 if t.get("status") == "open" and not t.get("held") and not t.get("deleted_at")]
        count, why = components.at_once(tasks, self.ctx.options.parallel)
        if count == 0:
            line = f"parallel: {why} to start"
        elif count == 1:
            line = f"parallel: 1 session at a time: {why}"
        else:
            line = f"parallel: up to {count} sessions at once"
        self.ctx.warn(line)
        return count

    def _recovered(self, line: str) -> None:
        """A recovery line: on stderr and in events.jsonl, as the single loop's resume lines."""
        self.ctx.warn(line)
        self.book.event("log", kind="resume", message=line)

    # ------------------------------------------------------------------ scheduler callbacks
    def _peek(self) -> list[dict]:
        try:                                     # --assign's inbox; the frozen scope's check
            if self.ctx.features.before_claims() is not None:
                return []                        # every frozen task is done
        except ScopeChanged as err:
            self.scope_stop = err
            return []
        # a question answered, a task handed to a fallback agent (agents:): it may start again
        again = self.ctx.features.startable_again()
        if again and self.plan is not None:
            self.plan.tried.difference_update(again)
            self.limited = [tid for tid in self.limited if tid not in again]
        tasks = self.book.export()
        if self.ctx.assign is not None and tasks:    # --assign: backlog.json, the queue as seen now
            task_files.write_backlog(self.book.ralph_dir, list(tasks.values()))
        done = {tid for tid, t in tasks.items() if t.get("status") == "done"}
        frozen = self._frozen_ids()
        found = [t for t in tasks.values()
                 if t.get("status") == "open" and not t.get("held") and not t.get("deleted_at")
                 and (frozen is None or t["id"] in frozen)
                 and all(dep in done for dep in t.get("deps") or [])]
        if not found and not self.book.sessions and self.ctx.features.before_end():
            return self._peek()                  # work put back (a stale verification failed)
        return found

    def _frozen_ids(self) -> set[str] | None:
        """A frozen scope with --parallel: only frozen tasks are candidates (a claim of another
        one fails anyway under RALPH_FROZEN_IDS_FILE; not offering it keeps the scheduler from
        retrying it). None when the scope is not frozen."""
        path = self.ctx.env.get("RALPH_FROZEN_IDS_FILE")
        if not path:
            return None
        try:
            return set(Path(path).read_text(encoding="utf-8").split())
        except OSError:
            return set()

    def _claim(self, task: dict) -> bool:
        free = self.book.free_agents
        if not free:
            return False
        agent = free[0]
        # On a fleet's store the session's heartbeat renews the claim: its lease is the fleet's.
        lease = str(max(1, round(self.lease_s))) if self.lease_s else LEASE
        ok, _ = self.book.call("claim", task["id"], "--agent", agent, "--lease", lease,
                               agent=agent)             # its token in the agent's claims file
        if ok:
            free.remove(agent)
            task["_agent"] = agent
        return ok

    def _launch(self, task: dict):
        return parallel_sessions.start(self.book, task, self.template)

    def _wait(self, active: dict) -> list[tuple[str, bool]]:
        """One ended session at a time: its slot is refilled before the next one is merged, so
        a new session runs while the merges (the serial part, git) go on (bench/parallel)."""
        if not self.ended:
            self.ended = self.book.pool.wait()
        if not self.ended:
            return []
        tid, result = self.ended.pop(0)
        return [(tid, self._finish(tid, result))]

    def _finish(self, tid: str, result) -> bool:
        # the features' record hooks counted it (the breaker, the budgets: Unattended)
        counted, how, _ = parallel_sessions.finish(self.book, tid, result)
        self.book.save()                    # the session's record: its one write after it ended
        if lost := lifecycle.lock_lost(self.ctx.run, self.book.state.iteration):
            self.stop = self.stop or lost                   # no new session; exit 8 at the end
        elif how.kind == outcome.USAGE_LIMIT:
            self.limited.append(tid)            # not a failure: its task again after the wait
        return not counted.counts_as_failure

    def _stopping(self) -> bool:
        """The run ends: a signal, the run's lock lost, the frozen scope, or a feature's hold
        that ends it (an agent that cannot go on, a stop request, the breaker or a budget;
        --max-runtime reached and a stop request are found when asked)."""
        self.hold = self.ctx.features.holding()
        return (self.book.pool.interrupted or bool(self.ctx.guard.pending)
                or self.stop is not None or self.scope_stop is not None
                or (self.hold is not None and self.hold.reason is not None))

    def _holding(self) -> bool:
        """Asked before each session starts (the running ones go on meanwhile): True when
        none may start now: the run ends (_stopping), or a feature's wait (a usage limit, a
        pause) is waited out once the sessions ended."""
        return self._stopping() or self.hold is not None

    def _resume(self, plan: scheduler.ParallelRun) -> bool:
        """The scheduler stopped for a feature's wait: the running sessions end (they may hit
        the limit too), then the features wait (until the latest reset, or until `ralph ctl
        resume`). True: the scheduler fills the slots again (after a usage limit, the limited
        sessions' tasks among the candidates)."""
        pool = self.book.pool
        while len(pool) or self.ended:
            pool.handle_signals()
            for tid, ok in self._wait({}):
                plan.finished(tid, ok)
        if self._stopping():
            return False
        last = 0 < plan.max_iterations <= plan.started      # no session left to run
        self.ctx.features.resume(last)           # Usage limit: ...; Paused: ...; exit 5
        if last and self.limited:
            plan.reason = "max_iterations"       # the limit not waited out: the run ends
            return False
        plan.tried.difference_update(self.limited)
        self.limited = []
        pool.handle_signals()                           # a Ctrl+C during the wait
        return not self._stopping()

    # ------------------------------------------------------------------ the run
    def run(self) -> tuple[str, str]:
        """Run to the end; returns the scheduler's reason (`complete`, `blocked`,
        `max_iterations`), `interrupted` or `stopped_by_request` (ralph ctl stop or SIGHUP,
        a feature's hold), with the line a stop request ends the run with. Raises, once the
        running sessions ended, a feature's error (NoProgress when --max-consecutive-failures
        sessions in a row failed, BudgetExhausted when --max-cost or --max-runtime is reached
        or a usage limit resets later than --max-limit-wait allows), the lock's loss, or
        ScopeChanged when the frozen scope changed under STOP_ON_SCOPE_CHANGE."""
        ctx, book, opts = self.ctx, self.book, self.ctx.options
        if not ctx.branch:
            raise UsageError(NEEDS_BRANCH)
        plan = self.plan = scheduler.ParallelRun(parallel=opts.parallel,
                                                 max_iterations=opts.max_iterations)
        reason, hold = "interrupted", None
        with session_pool.Pool(ctx.guard, lambda: sessions.first_interrupt(ctx),
                               timeouts=sessions.timeouts(ctx),
                               kill_grace_s=ctx.limits.kill_grace_s) as pool:
            book.pool = pool                           # from here a signal is queued, not raised:
            try:                                       # recovery and registrations are finished
                self._open_run()
                book.free_agents = [ctx.agent_id] + [self._register()
                                                     for _ in range(opts.parallel - 1)]
                book.slots = {agent: i for i, agent in enumerate(book.free_agents)}
                book.save()                    # the agents, before any of them claims a task
                plan.started = book.state.sessions_started if opts.max_iterations else 0
                while True:
                    scheduler.run(plan, peek=self._peek, claim=self._claim, launch=self._launch,
                                  wait=self._wait, stopping=self._holding)
                    if plan.reason != "stopped" or self._stopping() or not self._resume(plan):
                        break
                hold = self.hold                       # a feature's end, or a wait (None)
                ends = hold.reason if hold is not None and not pool.interrupted else None
                if self.stop is not None and not pool.interrupted:
                    reason = "stopped_by_agent"
                elif ends == features.STOPPED_BY_AGENT:
                    reason, self.stop = ends, hold.error
                elif self.scope_stop is not None and not pool.interrupted:
                    reason = "scope_changed"
                elif ends == features.STOPPED_BY_REQUEST:
                    reason = ends
                elif plan.reason != "stopped":
                    reason = plan.reason
                elif ends is not None:
                    reason, self.stop = ends, hold.error    # limit_reached (a feature's)
                while self.ended or len(pool):         # stopped: the sessions end
                                                       # (docs/contract/ralph-cli.md s.16)
                    pool.handle_signals()
                    self._wait({})
            finally:
                for tid, result in [*self.ended, *pool.kill_all()]:   # nothing outlives the run
                    self._finish(tid, result)
                self.ended = []
                if ctx.guard.pending or pool.interrupted:
                    reason = "interrupted"
                self.close(reason)
        if reason == features.LIMIT_REACHED:           # with the figures of the sessions
            now = self.ctx.features.holding()          # that ended since it tripped
            if now is not None and now.reason == reason:
                self.stop = now.error
        if reason in ("stopped_by_agent", features.LIMIT_REACHED) and self.stop is not None:
            raise self.stop                            # exit 7, 8, 9, 10, 5 or 6, as the
                                                       # single loop
        if reason == "scope_changed":
            raise self.scope_stop                      # exit 4, as the single loop
        return reason, hold.line if reason == features.STOPPED_BY_REQUEST else ""

    def _register(self) -> str:
        ok, out = self.book.call("agent", "register")
        self.book.extra_agents.append(out)
        return out

    def close(self, reason: str) -> None:
        """Worktrees and the extra agents go; the state is closed by ralph.py's exit cleanup
        (runlife.lifecycle.finish_run), after the first agent's deregistration (s.17)."""
        ctx, book = self.ctx, self.book
        ctx.guard.closing = True
        try:
            worktrees.cleanup_run(ctx.cwd, book.state.run_id, ctx.branch, env=ctx.env)
        except RalphError as err:
            ctx.warn(f"could not remove the run's worktrees: {err}")
        for agent in book.extra_agents:
            if agent:
                book.passthrough("agent", "deregister", agent)
        book.save()


# Flags a --parallel run has no use for (docs/parallel.md), and why.
NOT_PARALLEL = {"continue_session": "each --parallel session starts fresh in its own worktree",
                "max_idle_sessions": "a --parallel run starts each task at most once"}


def run(ctx: RunContext) -> tuple[str, str]:
    """The parallel build loop; returns why it ended and a stop request's line (see
    ParallelBuild.run). Flags it has no
    use for, given on the command line, are named once."""
    opts = ctx.options
    for name, why in NOT_PARALLEL.items():
        if opts.source(name) == "cli":
            value, flag = getattr(opts, name), BY_NAME[name].flag
            shown = flag if value is True else f"{flag} {value}"
            ctx.notice("flag_ignored", f"{shown} ignored: {why}")
    return ParallelBuild(ctx).run()


__all__ = ["run", "NOT_PARALLEL"]
