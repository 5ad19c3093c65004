"""Owns the features that plug into ralph.py's loops, all through one interface (`Feature`): the
unattended-run checks between sessions (`ralph ctl`, SIGHUP, --max-runtime), scope freeze
(FREEZE_SCOPE), the verify gate (--verify, the tamper check), assignment mode (--assign), the
prompt template (--prompt), git across machines (--sync), a worktree's set-up (RALPH_SLOT,
.worktreeinclude, worktree_setup) and the sandbox (--sandbox). `Features` runs them in order,
so each loop has one path whichever are on; the run-level hooks (holding, resume, before_end,
startable_again) let a --parallel run hold, wait and end as the single loop does without
naming a feature. Knows nothing of the loop's own order (ralph.py) or of what a feature does
inside (unattended.night, scope, verify, assign.mode, sync.runner, parallel.worktree_setup,
questions, pulls, sandbox).

One concern over 500 lines: the interface and each feature's adapter to it, side by side so
a reader sees every hook's users in one place; what a feature does lives in its package."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable, Mapping, TypeVar

from ralphpy import errors
from ralphpy.assign import mode as assign_mode
from ralphpy.assign.choice import dispatch_prompt
from ralphpy.backlog import answers
from ralphpy.config.settings import find_repo_root
from ralphpy.loop import night_shift
from ralphpy.loop.context import RunContext
from ralphpy.loop.sessions import Prompt, Session
from ralphpy.runs import progress
from ralphpy.unattended import guards, logrotate, outcome
from ralphpy.unattended.night import Night
from ralphpy.verify import completion

FROZEN_DONE = "All frozen tasks complete. Exiting loop."
F = TypeVar("F", bound="Feature")

# How a run ends on a feature's hold (Hold.reason; ralph.py's parallel_build reads them).
STOPPED_BY_AGENT = "stopped_by_agent"        # an agent that cannot go on: exit 7, 9, 10
STOPPED_BY_REQUEST = "stopped_by_request"    # ralph ctl stop, SIGHUP: exit 0
LIMIT_REACHED = "limit_reached"              # the breaker, a budget: exit 5, 6


@dataclasses.dataclass(frozen=True)
class Hold:
    """Why the run starts no new session now (Feature.holding). reason None: a wait (a pause,
    a usage limit) that resume() waits out; else the run ends for that reason once its running
    sessions have ended: `error` raised when set, else `line` printed (exit 0)."""

    reason: str | None = None
    line: str = ""
    error: errors.RalphError | None = None


class Feature:
    """The one interface; every hook does nothing unless a feature says otherwise. A feature
    gets each session (loop.sessions.Session) of both loops: the single loop's, in the
    checkout, and each `--parallel` session's, in its worktree (`session.place`)."""

    def start(self) -> None:
        """The loop begins."""

    def before_session(self) -> str | None:
        """Between two sessions of the single loop (a --parallel run has sessions running then
        and asks the unattended checks itself): a line, the run stops there (exit 0). May
        wait, or raise a RalphError (exit 4, 5)."""
        return None

    def before_claims(self) -> str | None:
        """Before the loop looks for the next task to start, in both loops (the single loop's
        peek, a --parallel run's fill of its slots): a line, no task is started any more
        (the run ends once the running sessions have). May raise a RalphError (exit 4)."""
        return None

    def prompt(self, prompt: Prompt) -> Prompt | None:
        """What the single loop's session is given; None: nothing to run ("No tasks
        available"). A `--parallel` session's task is ralph's claim (loop.parallel_loop)."""
        return prompt

    def start_point(self, task: str) -> str | None:
        """Where a --parallel session of `task` starts: a commit its worktree's branch is made
        at, or None for the run's branch (the single loop's checkout is placed by prompt)."""
        return None

    def prepare(self, session: Session) -> None:
        """Before the agent starts: where it runs, its environment, its output."""

    def wrap(self, session: Session) -> None:
        """The agent's argv and environment are final (its prompt, its CLI's flags): what runs
        it inside something else (the sandbox) replaces session.argv."""

    def after_session(self, session: Session) -> None:
        """After the session, before docs/contract/ralph-cli.md s.15.5's crash safety: add the tasks
        this feature failed to session.failed and say why in session.reason."""

    def record(self, session: Session) -> None:
        """The session is recorded: add fields to its session_end event (session.fields).
        A dead run's --parallel session judged when the run resumed has no result."""

    def settle(self, session: Session, counts: str | None, last: bool) -> None:
        """Between a session and the next (after the loop's plan-status or promise check):
        raise what ends the run, or wait. last: no session is left to run after this one."""

    def holding(self) -> Hold | None:
        """Run-level, in both loops: why no new session may start now, or None. Never waits:
        a --parallel run asks before each session it starts while others run, and waits or
        ends once they have ended; the single loop asks between two sessions, after
        before_session."""
        return None

    def resume(self, last: bool) -> None:
        """Run-level: wait out this feature's wait hold (no session of the run is running);
        the loop then asks holding() again. last: no session is left to run, so nothing is
        worth waiting for. May raise a RalphError (exit 5)."""

    def before_end(self) -> bool:
        """A --parallel run has no task left to start and no session running: True when this
        feature put work back (the tasks are looked for again), else the run ends."""
        return False

    def startable_again(self) -> set[str]:
        """Run-level: the tasks this feature let go since it was last asked, which a
        --parallel run (it starts each task once) may start again."""
        return set()

    def end_lines(self, lines: list[str]) -> list[str]:
        """The lines that end the build loop."""
        return lines

    def end(self) -> None:
        """The loop has ended, not by a signal or an error."""

    def finish(self) -> None:
        """The run exits, whichever way (after start())."""


class Features(Feature):
    """Features in order; each hook runs them all (a stop line or a None prompt ends it)."""

    def __init__(self, *features: Feature | None):
        self.items = [f for f in features if f is not None]

    def get(self, kind: type[F]) -> F | None:
        """The feature of this kind, if it is on."""
        return next((f for f in self.items if isinstance(f, kind)), None)

    def start(self) -> None:
        for feature in self.items:
            feature.start()

    def before_session(self) -> str | None:
        """Each feature's before_session, then its before_claims, in the features' order;
        then the features' holds, honoured as a --parallel run honours them: a wait waited
        out, an end raised or its line returned."""
        for feature in self.items:
            if (line := feature.before_session() or feature.before_claims()) is not None:
                return line
        while (hold := self.holding()) is not None:
            if hold.error is not None:
                raise hold.error
            if hold.reason is not None:
                return hold.line
            self.resume(last=False)
        return None

    def before_claims(self) -> str | None:
        for feature in self.items:
            if (line := feature.before_claims()) is not None:
                return line
        return None

    def prompt(self, prompt: Prompt) -> Prompt | None:
        for feature in self.items:
            if (prompt := feature.prompt(prompt)) is None:
                return None
        return prompt

    def start_point(self, task: str) -> str | None:
        return next((c for f in self.items if (c := f.start_point(task)) is not None), None)

    def prepare(self, session: Session) -> None:
        for feature in self.items:
            feature.prepare(session)

    def wrap(self, session: Session) -> None:
        for feature in self.items:
            feature.wrap(session)

    def after_session(self, session: Session) -> None:
        for feature in self.items:
            feature.after_session(session)

    def record(self, session: Session) -> None:
        for feature in self.items:
            feature.record(session)

    def settle(self, session: Session, counts: str | None, last: bool) -> None:
        for feature in self.items:
            feature.settle(session, counts, last)

    def holding(self) -> Hold | None:
        """The first feature's hold that ends the run, else the first wait, else None."""
        holds = [hold for feature in self.items if (hold := feature.holding()) is not None]
        return next((h for h in holds if h.reason is not None), holds[0] if holds else None)

    def resume(self, last: bool) -> None:
        for feature in self.items:
            feature.resume(last)

    def before_end(self) -> bool:
        return any([feature.before_end() for feature in self.items])   # each one asked

    def startable_again(self) -> set[str]:
        return set().union(*(feature.startable_again() for feature in self.items))

    def end_lines(self, lines: list[str]) -> list[str]:
        for feature in self.items:
            lines = feature.end_lines(lines)
        return lines

    def end(self) -> None:
        for feature in self.items:
            feature.end()

    def finish(self) -> None:
        for feature in self.items:
            feature.finish()


class Unattended(Feature):
    """`ralph ctl` pause/stop and SIGHUP between sessions, --max-runtime, log rotation; each
    session's outcome counted (--max-attempts holds a task, the breaker, the budgets) and,
    between sessions, what ends the run or a usage limit waited out; no silent "All tasks
    complete" while tasks are held (--max-attempts, the respawn guard); the night shift
    (docs/night-shift.md): pace:'s waits and agents:' hand-over before a session, each
    session's agent and model (escalate:) as it starts. Night does the work."""

    def __init__(self, night: Night, ctx: RunContext | None = None):
        self.night, self.ctx = night, ctx
        # A --parallel run's sessions end while others run: what they mean for the run is
        # kept here and told by holding() (the single loop's settle acts at once instead).
        self.stop: errors.RalphError | None = None     # an agent that cannot go on
        self.verdict: guards.Verdict | None = None     # the breaker, a budget
        self.limit = None                              # the latest usage limit hit, to wait out
        self.running: set = set()                      # the logs being written (not rotated)
        self.handed_over: set[str] = set()             # tasks another agent takes (agents:)

    def start(self) -> None:
        self.night.start()                               # stale STOP, persisted limit wait

    def before_session(self) -> str | None:
        # pace:, agents: may wait here; a --parallel run holds instead (holding()) and waits
        # once its sessions have ended (resume()): its one pump must go on meanwhile
        return self.night.between_sessions() or self.night.next_agent()

    def prepare(self, session: Session) -> None:
        if self.night.shift is not None:
            night_shift.prepare(self.ctx, self.night.shift, session)
        if session.place is not None:        # .ralph/logs bounded, as before a single loop's
            logrotate.rotate(self.night.log_dir, protect=[*self.running, session.log])
            self.running.add(session.log)

    def record(self, session: Session) -> None:
        result = session.result
        if result is None:               # a dead run's session, judged when the run resumed:
            tid = session.task           # its failed attempt counts (--max-attempts)
            if session.place is not None and tid in session.failed:
                self.night.attempt_failed(tid, session.reasons.get(tid, session.reason),
                                          session.prior)
            return
        self.night.agent = session.adapter.name          # the CLI this session ran
        if self.night.shift is not None:
            session.fields.update(self.night.shift.after_session(
                session.adapter.name, session.fields.get("model"), result.summary,
                len(session.completed), self.ctx.warn))
        if session.place is not None:                   # a --parallel session: its one task
            self.running.discard(session.log)
            self._record_claimed(session)
            self._judge(session)
            return
        if result.interrupted:
            return
        session.fields.update(self.night.after_session(
            result, (session.outcome, session.hit), session.failed, session.reason,
            progressed=bool(session.completed), reasons=session.reasons))

    def _record_claimed(self, session: Session) -> None:
        """A session on the task ralph claimed for it: a failed attempt at it is counted
        (--max-attempts holds it; not after a session that was no attempt: a usage limit);
        its outcome kept for progress.md, a failure unless its task ended done."""
        tid, out = session.task, session.outcome
        if tid in session.failed and out.kind not in outcome.NOT_AN_ATTEMPT and \
                self.night.attempt_failed(tid, session.reasons.get(tid, session.reason),
                                          session.prior):
            session.fields["held"] = [tid]
        progress.keep_outcome(self.night.state, session.n, out.kind, out.detail,
                              tid not in session.completed)

    def _judge(self, session: Session) -> None:
        """A --parallel session ended: counted by the breaker and the budgets (their counts
        saved with the session's record), budgets first; a usage limit is no failure, waited
        out once the running sessions have ended (the latest reset of theirs)."""
        night, how, hit = self.night, session.outcome, session.hit
        tripped = night.guards.after_session(session.counted,
                                             guards.reported_cost(session.result.summary),
                                             None, None)
        night.state.extra["guards"] = night.guards.to_dict()   # a resumed run keeps them
        if how.kind in (outcome.USAGE_LIMIT, outcome.USAGE_DISABLED) and \
                night.hand_over(hit, how.detail):
            self.handed_over.add(session.task)            # agents: another agent, no wait
        elif stop := outcome.stop_error(how, night.agent):  # a rejected key, root refused, a
            self.stop = self.stop or stop                 # disabled account: exit 9/10/7
        elif tripped:
            self.verdict = tripped                        # exit 5/6, after the sessions end
        elif how.kind == outcome.USAGE_LIMIT and (self.limit is None
                                                  or hit.reset_at > self.limit.reset_at):
            self.limit = hit

    def settle(self, session: Session, counts: str | None, last: bool) -> None:
        self.night.settle(counts, last=last)             # exit 5/6/7, or wait out a limit

    def holding(self) -> Hold | None:
        night = self.night
        if self.stop is not None:
            return Hold(STOPPED_BY_AGENT, error=self.stop)
        if self.verdict is None:
            self.verdict = night.guards.before_session()          # --max-runtime
        if night.stop_line is None and (line := night.stop_requested()):
            progress.append_event(night.ralph_dir, night.state.run_id, "log", kind="stop",
                                  message=line)                   # ralph ctl stop, SIGHUP
        if night.stop_line is not None:
            return Hold(STOPPED_BY_REQUEST, line=night.stop_line)
        if self.verdict is not None:
            return Hold(LIMIT_REACHED, error=self.verdict.error())
        if self.limit is not None or night.paused() or night.held_by_pace():
            return Hold()                         # waited out by resume(); pace:, or every
        return None                               # agent of agents: limited

    def resume(self, last: bool) -> None:
        if self.limit is not None and last:
            self.night.skip_limit(self.limit)    # no session left: not waited out
        elif self.limit is not None:             # Usage limit: ...; exit 5; a stop ends it
            self.night.wait_limit(self.night.free_first(self.limit))
        elif self.night.paused() or self.night.held_by_pace():
            self.night.between_sessions()        # Paused: ...; --max-runtime: exit 5
            self.night.next_agent()              # pace: waits; a stop ends it
        self.limit = None

    def startable_again(self) -> set[str]:
        taken, self.handed_over = self.handed_over, set()
        return taken

    def end_lines(self, lines: list[str]) -> list[str]:
        return assign_mode.end_line(self.night.held(), lines[0]) + lines[1:]

    def finish(self) -> None:
        self.night.finish()                              # .ralph/STOP consumed


class ScopeFreeze(Feature):
    """FREEZE_SCOPE: the scope snapshot at run start (a resumed run keeps its own), checked
    before every session; each change named once, STOP_ON_SCOPE_CHANGE stops the run (exit 4).
    A build run ends when every frozen task is done; a plan run goes on."""

    def __init__(self, ctx: RunContext):
        from ralphpy.scope import freeze  # only a run with it on pays for it
        opts, self.ctx = ctx.options, ctx
        self.freeze = freeze.start(ctx.task, ctx.env, ctx.run.ralph_dir, ctx.run.state,
                                      find_repo_root(ctx.cwd),
                                      stop_on_change=opts.stop_on_scope_change,
                                      watch_specs=opts.scope_watch)
        ctx.export("RALPH_FROZEN_IDS_FILE", str(self.freeze.ids_file))   # task calls, agent
        snap = self.freeze.snapshot
        kept = "frozen" if snap.created else f"kept from {snap.frozen_at}"
        ctx.warn(f"Scope {kept}: {len(snap.task_ids)} tasks ({self.freeze.run_dir}/scope.json)")
        for line in snap.warnings:
            ctx.warn(f"Warning: scope: {line}")

    def check(self) -> bool:
        """True when every frozen task is done."""
        from ralphpy.scope import freeze
        ctx = self.ctx
        found = freeze.check(self.freeze, ctx.task, ctx.env)
        if found.report is None:
            ctx.warn("Warning: scope check skipped: the task command could not list the backlog")
        for line in found.new_lines:
            ctx.warn(f"Scope changed: {line}")
        if found.stop:
            raise errors.ScopeChanged(found.report.summary())
        return found.target_done

    def target_met(self) -> bool:
        from ralphpy.scope import freeze
        return freeze.target_met(self.freeze, self.ctx.task, self.ctx.env)

    def before_claims(self) -> str | None:
        done = self.check()
        return FROZEN_DONE if done and self.ctx.mode == "build" else None


def scope_freeze(ctx: RunContext) -> ScopeFreeze | None:
    """Scope freeze for this run, or None when off (then no extra task call)."""
    opts = ctx.options                   # CLI > env > ralph.yml; a resume: persisted
    return ScopeFreeze(ctx) if opts.freeze_scope or opts.stop_on_scope_change else None


class Verify(Feature):
    """The verify gate (docs/verify.md): after each session, every task it marked done is
    verified (the verify command, the tamper check of its diff) and reopened or held when it
    fails; stale verifications are run again before the run may end complete; the next
    session's task data says why a verification failed."""

    def __init__(self, gate: completion.Gate):
        self.gate = gate

    def prompt(self, prompt: Prompt) -> Prompt | None:
        self.gate.session_starts()          # the session's diff starts here (after --sync)
        return dataclasses.replace(prompt, data=self.gate.annotate(prompt.data))

    def after_session(self, session: Session) -> None:
        if session.place is not None:                   # --parallel: its task, in its worktree,
            if session.record.get("status") != "done":  # before its branch is merged
                return
            verdict = self.gate.judge_worktree(session.record, session.place)
            if verdict is not None and not verdict.ok:  # reopened (or held): an attempt
                session.failed.append(session.task)
                session.reasons[session.task] = verdict.reason.split("\n", 1)[0]
            return
        reopened, reason = self.gate.after_session([], "")
        session.failed += [slug for slug in reopened if slug not in session.failed]
        if reason:
            session.reason = reason                     # why a task was reopened

    def before_end(self) -> bool:
        return bool(self.gate.recheck())        # a stale verification failed: reopened


class VerifyScratch:
    """Where the verify gate's second run runs: a detached worktree outside the checkout
    (parallel.worktrees.scratch), made ready as a --parallel worktree is (.worktreeinclude's
    files) with the project's dependency folders linked in; removed after the run, and by the
    next run's gate when ralph was killed during it. The user's checkout is never touched."""

    def __init__(self, cwd: Path, env: Mapping[str, str]):
        self.repo, self.env = find_repo_root(cwd), env

    def clean(self) -> None:
        from ralphpy.parallel import worktrees           # only a run that verifies pays for it
        worktrees.remove_scratch(self.repo, env=self.env)        # a killed run's

    def make(self, commit: str) -> Path:
        from ralphpy.parallel import worktrees
        return worktrees.scratch(self.repo, commit, env=self.env)

    def bring_in(self, tree: Path, scratch: Path) -> None:
        from ralphpy.parallel import worktree_setup
        worktree_setup.copy_included(self.repo, scratch, self.env)
        for source in dict.fromkeys((Path(tree), self.repo)):   # the task's tree, the checkout
            worktree_setup.link_dependencies(source, scratch, self.env)

    def remove(self, scratch: Path) -> None:
        from ralphpy.parallel import worktrees
        worktrees.remove_scratch(self.repo, env=self.env)


def verification(ctx: RunContext) -> Verify | None:
    """Build mode's verify gate, from the commit before the first session (with no verify
    setting and no task's own `verify:` line, it judges nothing). None in plan mode."""
    if ctx.mode != "build":
        return None
    return Verify(completion.Gate(ctx.options, ctx.task, ctx.env, ctx.cwd, ctx.run, ctx.warn,
                                  scratch=VerifyScratch(ctx.cwd, ctx.env)))


class Assign(Feature):
    """--assign: ralph claims one task per session and sends its anti-drift block; the
    inbox is imported before each claim; the completion check follows each session."""

    def __init__(self, ctx: RunContext, mode: assign_mode.AssignMode):
        self.ctx, self.mode = ctx, mode

    def _report(self, step: assign_mode.Step) -> assign_mode.Step:
        for kind, message in step.notices:
            self.ctx.notice(kind, message)
        for event in step.events:
            self.ctx.record(**event)
        return step

    def start(self) -> None:
        self.ctx.notice("assign", self.mode.describe())
        if line := assign_mode.prompt_ignored(self.ctx.options):
            self.ctx.notice("flag_ignored", line)

    def before_claims(self) -> str | None:
        self._report(self.mode.import_inbox())          # inbox before each claim
        return None

    def prompt(self, prompt: Prompt) -> Prompt | None:
        step = self._report(self.mode.before(self.ctx.agent_id))   # ralph claims, injects
        if step.task is None:                                       # only tasks leased to others
            return None
        return Prompt(step.prompt_data, step.task)

    def after_session(self, session: Session) -> None:   # done: archive, else fail (spawns
        if session.place is not None:                   # count); a worktree's: parallel's own
            return
        no_attempt = None if session.attempt else session.give_back_reason()
        step = self._report(self.mode.after(no_attempt=no_attempt))
        if step.fail_output:
            self.ctx.say(step.fail_output)              # `failed <id>`, as s.15.5 passes it
        if step.outcome == "failed" and step.task not in session.failed:
            session.failed.append(step.task)


def assignment(ctx: RunContext) -> Assign | None:
    """Assignment mode for this run (a resumed run keeps its mode), or None when off."""
    mode = assign_mode.setup(ctx.options, ctx.task, ctx.env, find_repo_root(ctx.cwd),
                             ctx.ralph_dir, lease_s=ctx.options.lease if ctx.fleet() else None)
    return Assign(ctx, mode) if mode is not None else None


class PromptTemplate(Feature):
    """--prompt TEMPLATE, the dispatch of pi-ticketflow's /ralph-loop (`pi "/tf <id> --auto"`):
    ralph claims the next task for the session's agent and the prompt is the template with
    `{id}` replaced by its id. Works over any task command (docs/task-sources.md)."""

    def __init__(self, ctx: RunContext, template: str):
        self.ctx, self.template = ctx, template

    def prompt(self, prompt: Prompt) -> Prompt | None:
        claimed = self.ctx.task.call("claim", "--agent", self.ctx.agent_id, env=self.ctx.env)
        ids = answers.slugs(claimed.output) if claimed.ok else []
        if not ids:                                     # only tasks leased to others
            return None
        return Prompt("", ids[0], command=dispatch_prompt(self.template, ids[0]))


def prompt_template(ctx: RunContext) -> PromptTemplate | None:
    """The prompt template of a build run, or None (off, or --assign: that mode claims)."""
    template = assign_mode.dispatch_template(ctx.options)
    if ctx.mode != "build" or not template:
        return None
    return PromptTemplate(ctx, template)


class Sync(Feature):
    """--sync (docs/fleet.md): fetch and rebase before each session, push after a finished
    task (a race retried; a conflict reopens the task, its commits kept on a branch)."""

    def __init__(self, ctx: RunContext):
        from ralphpy.sync import runner                # only a --sync run pays for it
        self.ctx, env, build = ctx, ctx.env, ctx.mode == "build"
        self.runner = runner.start(ctx.sync_target(), env, ctx.task.bound(env), ctx.agent_id,
                                   self.report, carry=build, resumed=ctx.run.resumed)

    def report(self, line: str, fields: dict) -> None:
        self.ctx.warn(line)                             # stderr: stdout stays ralph.sh's
        self.ctx.record("sync", message=line, **fields)

    def before_session(self) -> str | None:
        return self.runner.before_session()             # never a stop line

    def after_session(self, session: Session) -> None:
        reopened, reason = self.runner.after_session(self.ctx.run.session_since)
        session.failed += [slug for slug in reopened if slug not in session.failed]
        if reason:
            session.reason = reason                     # a conflict: why it was reopened

    def end(self) -> None:
        self.runner.end()


def sync(ctx: RunContext) -> Sync | None:
    """--sync for this run (checked at start-up: start.check_checkout), or None when off."""
    return Sync(ctx) if ctx.options.sync else None


class WorktreeSetup(Feature):
    """RALPH_SLOT in every agent's environment (its --parallel slot, 0..N-1; 0 in the single
    loop), so servers a session starts can pick distinct ports; and a new --parallel worktree
    made ready before its agent starts: the ignored files `.worktreeinclude` names copied in
    from the checkout, then the `worktree_setup` command (parallel.worktree_setup). A set-up
    that fails raises SessionNotStarted: that session's task fails with the reason."""

    def __init__(self, ctx: RunContext):
        self.ctx = ctx

    def prepare(self, session: Session) -> None:
        session.env["RALPH_SLOT"] = str(session.slot)
        wt = session.place
        if wt is None:                                  # the checkout has its files already
            return
        from ralphpy.parallel import worktree_setup     # only a --parallel run pays for it
        try:
            copied = worktree_setup.copy_included(wt.repo, wt.path, self.ctx.env)
        except OSError as err:
            raise errors.SessionNotStarted(
                f"cannot copy {worktree_setup.FILE}'s files into its worktree: {err}") from None
        if copied:
            session.fields["included"] = copied         # its session_end event names them
        if command := self.ctx.options.worktree_setup:
            worktree_setup.run_command(command, wt.path, session.env,
                                       timeout=self.ctx.options.worktree_setup_timeout,
                                       kill_grace=self.ctx.limits.kill_grace_s)


class PullRequests(Feature):
    """--pr (docs/github.md): before each single-loop session the waiting pull requests are
    settled (merged, reopened with their checks' or reviewers' word, held) and waited for
    when nothing else can run; the session starts detached at the remote base, or on the
    branch of the reopened task it continues, whose feedback its prompt quotes; after it,
    each task it finished gets its branch and pull request and is held until the merge. A
    --parallel session of a reopened task starts at its branch's tip (start_point). A failed
    check counts as a failed attempt (--max-attempts); a wait or a review does not."""

    def __init__(self, ctx: RunContext):
        from ralphpy.pulls import start                 # only a --pr run pays for it
        self.ctx = ctx
        self.runner = start.runner(ctx.options, ctx.env, ctx.cwd, ctx.ralph_dir,
                                   ctx.task.bound(ctx.env), ctx.agent_id, self.report,
                                   ours=ctx.task.embedded)
        ctx.export("RALPH_PR", "1")                     # a GitHub task's `done` leaves it open
        if ctx.options.parallel > 1:                    # the pull request is the merge
            ctx.options = dataclasses.replace(ctx.options, merge="none")

    def report(self, line: str, fields: dict) -> None:
        self.ctx.warn(line)                             # stderr: stdout stays ralph.sh's
        self.ctx.record("pr", message=line, **fields)

    def _night(self) -> Night | None:
        checks = self.ctx.features.get(Unattended) if self.ctx.features else None
        return checks.night if checks is not None else None

    def before_claims(self) -> str | None:
        self.runner.safely(self.runner.between_sessions)   # may wait for pull requests
        night = self._night()
        for task, (reason, prior) in self.runner.take_failed().items():
            if night is not None:        # a failed check counts as a failed session does
                night.attempt_failed(task, reason, prior)          # (--max-attempts)
        return None

    def start_point(self, task: str) -> str | None:
        return self.runner.continues_at(task)             # a reopened task: its branch's tip

    def prompt(self, prompt: Prompt) -> Prompt | None:
        note = self.runner.place()
        return dataclasses.replace(prompt, data=prompt.data + note) if note else prompt

    def after_session(self, session: Session) -> None:
        summary = session.result.summary if session.result else None
        cost = getattr(summary, "total_cost_usd", None)
        if session.place is None:
            pushed = self.runner.pushed
            self.runner.safely(self.runner.after_session, cost)
            for task, (reason, _) in self.runner.take_failed().items():
                session.failed.append(task)             # counted with the session's own
                session.reasons[task] = reason          # failures (--max-attempts)
            night = self._night()
            if night is not None and self.runner.pushed != pushed:   # HEAD is back on the
                night.guards.landed_elsewhere()     # base: --max-idle-sessions sees the push
        elif session.record.get("status") == "done":    # --parallel: its task, its worktree
            self.runner.safely(self.runner.publish_worktree, session.record,
                               session.place.path, cost)

    def finish(self) -> None:
        self.runner.restore()                           # never left detached (Ctrl+C)


def pull_requests(ctx: RunContext) -> PullRequests | None:
    """--pr for a build run (checked at start-up: start.check_checkout), or None when off."""
    return PullRequests(ctx) if ctx.options.pr and ctx.mode == "build" else None


def worktree_setup(ctx: RunContext) -> WorktreeSetup:
    """Always on: RALPH_SLOT costs nothing; the rest acts only on a --parallel worktree."""
    return WorktreeSetup(ctx)


class Questions(Feature):
    """docs/questions.md: a question an agent asked (`task ask`) is told once between sessions
    (stderr and the events, so the notify channels carry it); at its deadline its default is
    the answer; an answer goes into the prompt of its task's next session; a task done
    forgets its question. questions.between does the work."""

    def __init__(self, ctx: RunContext):
        from ralphpy.questions import between
        from ralphpy.tasks import question_files
        self.ctx, where = ctx, ctx.ralph_dir / "questions"
        ctx.export(question_files.DIR_ENV, str(where))  # a worktree's `task ask` writes here
        self.waiting = between.Waiting(where, ctx.task.bound(ctx.env))
        self.answered: set[str] = set()      # released since startable_again() last asked

    def startable_again(self) -> set[str]:
        """The tasks whose questions were answered since the last call: parked by a question,
        each may start again once answered."""
        taken, self.answered = self.answered, set()
        return taken

    def _tell(self) -> None:
        for note in self.waiting.between():
            if note.kind in ("question_answered", "question_default"):
                self.answered.add(note.task)
            self.ctx.warn(note.message)
            self.ctx.record("log", kind=note.kind, message=note.message, task=note.task,
                            **note.fields)

    def before_claims(self) -> str | None:
        self._tell()                                    # a deadline passed: its default
        return None

    def prepare(self, session: Session) -> None:
        prompt = session.prompt
        if prompt.data:                                 # a --prompt template has none
            session.prompt = dataclasses.replace(
                prompt, data=self.waiting.annotate(prompt.data, prompt.task))

    def record(self, session: Session) -> None:
        self.waiting.done(session.completed)
        self._tell()                                    # what this session asked, told now


def questions(ctx: RunContext) -> Questions:
    """Always on: with no question asked it costs one missing folder's look per session."""
    return Questions(ctx)


class Sandbox(Feature):
    """--sandbox (docs/sandbox.md): each session's agent runs inside the run's sandbox, its
    own tree (the checkout, or its --parallel worktree) read-write and of the rest only what
    sandbox.plan allows; a container it may leave is removed after it."""

    def __init__(self, ctx: RunContext):
        from ralphpy.sandbox import store_keeper
        self.ctx, self.backend = ctx, ctx.sandbox
        self.main = find_repo_root(ctx.cwd)
        self.keeper = store_keeper.Keeper()             # a SQLite store's WAL files kept
        ctx.run.state.extra["sandbox"] = self.backend.shown         # for ralph status

    def wrap(self, session: Session) -> None:
        from ralphpy.sandbox import one_session
        ctx = self.ctx
        session.argv = one_session.wrap(
            self.backend, self.keeper, session.argv, main=self.main, ralph_cwd=ctx.cwd,
            top=session.place.path if session.place is not None else self.main,
            cwd=session.cwd or ctx.cwd, env=session.env, state=session.adapter.state,
            name=self._name(session))
        session.fields["sandbox"] = self.backend.name   # its session_end event names it
        session.env["IS_SANDBOX"] = "1"                 # the sandbox's, as its agent's: no root
                                                        # refusal to look for (outcome.root_refusal)

    def _name(self, session: Session) -> str:
        return f"ralph-{self.ctx.run.state.run_id}-{session.n}"

    def record(self, session: Session) -> None:
        from ralphpy.sandbox import backends
        if (argv := backends.leftover(self.backend, self._name(session))) is not None:
            backends.run_quietly(argv, self.ctx.env)

    def finish(self) -> None:
        self.keeper.release()


def sandbox(ctx: RunContext) -> Sandbox | None:
    """--sandbox for this run (chosen and checked at start-up: start.choose_sandbox), or None."""
    return Sandbox(ctx) if ctx.sandbox is not None else None


def unattended(ctx: RunContext) -> Unattended:
    """The unattended checks: always on (with no setting given they only watch `ralph ctl`)."""
    from ralphpy.unattended import night
    checks = night.Night(ctx.limits, ctx.run, task=ctx.task, env=ctx.env, guard=ctx.guard,
                         log_dir=ctx.cwd / ".ralph" / "logs", say=ctx.say, warn=ctx.warn)
    checks.shift = night_shift.shift_of(ctx)             # pace:, agents:, escalate: (or None)
    return Unattended(checks, ctx)


# The features of a run, in the order each hook runs them: one line each. A new feature is a
# module of its concern and one line here; both loops then run it (loop.sessions).
Factory = Callable[[RunContext], "Feature | None"]
REGISTRY: list[Factory] = [
    unattended,                          # ralph ctl, SIGHUP, budgets, breakers, limit waits
    worktree_setup,                      # RALPH_SLOT; .worktreeinclude, worktree_setup
    scope_freeze,                        # FREEZE_SCOPE: snapshot, check before each session
    lambda ctx: ctx.assign or prompt_template(ctx),   # --assign claims and injects; --prompt
    verification,                        # --verify: reopen, hold
    sync,                                # --sync: rebase, push
    questions,                           # task ask: told, defaults, answers in the prompt
    pull_requests,                       # --pr: a pull request per finished task
    sandbox,                             # --sandbox: the agent inside bwrap, docker, podman
]


def for_run(ctx: RunContext) -> Features:
    """The run's features, built in REGISTRY's order (each may take its snapshot, print its
    notice or read the backlog as it starts)."""
    return Features(*(make(ctx) for make in REGISTRY))


__all__ = ["Prompt", "Hold", "Feature", "Features", "Unattended", "ScopeFreeze", "Verify",
           "VerifyScratch", "Assign", "PromptTemplate", "Sync", "PullRequests", "WorktreeSetup",
           "Questions", "Sandbox", "REGISTRY", "for_run", "unattended", "scope_freeze",
           "verification", "assignment", "prompt_template", "sync", "pull_requests",
           "worktree_setup", "questions", "sandbox", "FROZEN_DONE", "STOPPED_BY_AGENT",
           "STOPPED_BY_REQUEST", "LIMIT_REACHED"]
