"""Owns the one session lifecycle both loops run (docs/architecture.md, "The life of one
session"): the `Session` record, and its steps in order. `begin`: the prompt as the agent gets
it (spilled to a file when it cannot be one argument), argv, environment, respawn safety and
FRESH_START, its log, and the features' `prepare` hook (a `--parallel` session's worktree), then
their `wrap` hook once argv is final (--sandbox).
`launch`: the agent in the pool (the single loop's is a pool of one). `end`: its outcome
classified once, the notices of its heartbeat, strays and timeout, the features' `after_session`
hooks in their order (assignment's completion check, the verify gate, a worktree's merge,
`--sync`'s push), docs/contract/ralph-cli.md s.15.5's crash safety for what its agent left active,
and the features' `record` hook (the unattended checks count its attempts). Knows nothing of the
loops' order (ralph.py, loop.parallel_loop), of the run's record on disk (runlife.lifecycle,
parallel_book) or of what a feature does inside (loop.features)."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ralphpy import strays, workspace
from ralphpy.agents import adapters, version
from ralphpy.backlog import answers
from ralphpy.backlog.answers import FAIL_REASON
from ralphpy.fleet import store as fleet_store
from ralphpy.parallel import worktrees
from ralphpy.loop.context import RunContext
from ralphpy.session import fresh_start, heartbeat, respawn, watchdog
from ralphpy.session.pool import Pool, SessionResult
from ralphpy.unattended import outcome


@dataclass(frozen=True)
class Prompt:
    data: str                            # the text after the skill command (s.11)
    task: str | None = None              # the task ralph assigned for this session, if any
    command: str | None = None           # instead of both: the whole prompt (a --prompt template)


WAITING = "Waiting for {agent} to finish cleanup... Press Ctrl+C again to force quit."
INTERRUPTED_REASON = "ralph.py was interrupted during the session"


@dataclass
class Session:
    """One agent session, from its prompt to its record. The single loop's runs in the
    checkout and its agent claims its own task (`task` None unless a feature claimed one);
    a `--parallel` session's runs in its worktree (`place`) on the task ralph claimed."""

    n: int                                   # its number in the run (sessions started)
    command: str                             # the skill: /ralph-build, /ralph-plan
    prompt: Prompt
    agent: str                               # its agent id ("" in plan mode)
    adapter: Any = None                      # its agent CLI (the run's, or a fallback agent)
    model: str | None = None                 # its resolved model (--model, or escalate:)
    slot: int = 0                            # its --parallel slot (RALPH_SLOT); 0: single loop
    task: str | None = None                  # the task ralph claimed for it, if any
    record: dict = field(default_factory=dict)   # that task as claimed (--parallel)
    place: Any = None                        # its worktree (--parallel); None: the checkout
    cwd: Path | None = None                  # where the agent runs (None: ralph's own)
    env: dict[str, str] = field(default_factory=dict)     # its agent's environment
    log: Path | None = None
    pidfile: Path | None = None
    out: Any = None                          # where its rendering goes (stdout, or prefixed)
    tag: str = ""                            # "[task] " before its lines (--parallel)
    text: str = ""                           # the prompt as the agent gets it
    argv: list[str] = field(default_factory=list)
    beat: Any = None                         # its heartbeat on a fleet's store
    started: str = ""                        # when it was written ahead (UTC, --parallel)
    clock: float = field(default_factory=time.monotonic)
    result: SessionResult | None = None
    outcome: outcome.Outcome | None = None   # how it ended (outcome.classify_session)
    hit: Any = None                          # the usage limit it hit
    counted: outcome.Outcome | None = None   # --parallel: as the breaker counts it (a
                                             # failure unless its task ended done, merged)
    failed: list[str] = field(default_factory=list)      # tasks it left failed (attempts)
    completed: list[str] = field(default_factory=list)   # tasks it finished
    reasons: dict[str, str] = field(default_factory=dict)   # a failed task's own reason
    reason: str = FAIL_REASON                # why its failed tasks went back
    prior: int | None = None                 # its task's failures before it (earlier runs)
    fields: dict[str, Any] = field(default_factory=dict)    # for its session_end event

    @property
    def attempt(self) -> bool:
        """False when the session was no attempt at its task (a usage limit, a stop of the
        run: outcome.NOT_AN_ATTEMPT, or Ctrl+C during it): its task goes back uncounted."""
        interrupted = bool(self.result and self.result.interrupted)
        return not interrupted and (self.outcome is None
                                    or self.outcome.kind not in outcome.NOT_AN_ATTEMPT)

    def give_back_reason(self) -> str:
        """Why a task this session left active goes back: s.15.5's reason, or the one naming
        the timeout or the usage limit (outcome.fail_reason), or the interrupt."""
        if self.result is not None and self.result.interrupted and self.place is not None:
            return INTERRUPTED_REASON
        return outcome.fail_reason(self.outcome) if self.outcome else FAIL_REASON


def first_interrupt(ctx: RunContext) -> None:
    """s.16: the first Ctrl+C lets the agent clean up."""
    ctx.say("")
    ctx.say(WAITING.format(agent=ctx.adapter.name))


def new(ctx: RunContext, command: str, prompt: Prompt, *, n: int, agent: str | None = None,
        record: dict | None = None) -> Session:
    """A session about to begin: its number, its agent (the run's, or a --parallel slot's)."""
    return Session(n=n, command=prompt.command or command, prompt=prompt,
                   agent=ctx.agent_id if agent is None else agent, adapter=ctx.adapter,
                   model=ctx.model,
                   task=prompt.task, record=record or {}, out=ctx.stdout.buffer)


def begin(ctx: RunContext, s: Session) -> Session:
    """s.11: everything the agent's start needs: its environment (over what the caller set: a
    worktree's variables) and log, then the features' `prepare` hook, then the prompt (spilled
    to a file when too big), argv and heartbeat."""
    env = dict(ctx.env)
    if s.place is not None:
        # the slot's agent id and its claims file, so its own task calls present its
        # fencing token (docs/fleet.md); the single loop's agent's are ctx.env's already
        env = fleet_store.as_agent(env, ctx.ralph_dir, ctx.run.state.run_id, s.agent)
    s.env = {**env, **s.env}                     # what the caller set: a worktree's variables
    s.log = s.log or log_path(ctx, s)
    stem = s.log.stem
    ctx.features.prepare(s)
    s.text = f"{s.command} {s.prompt.data}" if s.prompt.data else s.command
    adapter = s.adapter                     # claude unless --agent (or a feature's choice)
    if not adapter.prompt_on_stdin and not adapters.prompt_fits(s.text):   # [SAFER] ralph.sh: E2BIG
        path = workspace.ralph_subdir(ctx.cwd, "prompts") / f"{stem}.md"
        s.text = adapters.spill_prompt(s.command, s.prompt.data, path)
        size = len(s.prompt.data.encode("utf-8", "surrogateescape"))
        ctx.say(f"{s.tag}Note: task data ({size} bytes) is too large for one command-line "
                f"argument; passing it in {path}")
    s.argv = adapter.argv(s.text, danger=ctx.options.danger, model=s.model)
    if s.place is None:                  # a worktree starts fresh: nothing inherited, no resume
        if ctx.options.respawn_safety:
            note = respawn.neutralise_ralph_loop(ctx.cwd)       # no inherited ralph-loop
            if note:
                ctx.notice("respawn_safety", note)
        fresh = fresh_start.consume(ctx.ralph_dir)              # FRESH_START is one-shot
        s.argv += fresh_start.session_resume_args(ctx.options.continue_session, fresh)
    s.env.update(adapter.env(danger=ctx.options.danger))
    ctx.features.wrap(s)                                        # --sandbox: bwrap ... -- argv
    if s.agent and ctx.fleet():                                 # a fleet's store: renew claims
        s.beat = fleet_store.heartbeat(ctx.task.executable, s.agent, ctx.options.lease, s.env,
                                       s.cwd)
    return s


def log_path(ctx: RunContext, s: Session) -> Path:
    """.ralph/logs/<run stamp>-<pid>-<mode>-<n>[-<task>].jsonl (s.20.3): a --parallel
    session's (its lines tagged with its task) names its task."""
    stem = f"{ctx.run_stamp}-{os.getpid()}-{ctx.mode}-{s.n:03d}"
    if s.tag and s.task:
        stem += f"-{worktrees.branch_safe(s.task)}"
    return workspace.ralph_subdir(ctx.cwd, "logs") / f"{stem}.jsonl"


def launch(ctx: RunContext, pool: Pool, s: Session) -> SessionResult | None:
    """Start the agent of `s` in `pool` under the key of its task (or "session"); None when it
    runs, else the result of a start that failed (its error said on stderr)."""
    ctx.stdout.flush()
    adapter = s.adapter
    failed = pool.start(_key(s), s.argv, env=s.env, cwd=s.cwd, log_path=s.log,
                        renderer=adapter.new_renderer(s.out), stdin=adapter.stdin(s.text),
                        pidfile=s.pidfile, heartbeat=s.beat, read_stderr=adapter.reads_stderr)
    if failed is not None:
        ctx.warn(f"Error: cannot run '{s.argv[0]}': {failed.error}")
    return failed


def _key(s: Session) -> str:
    return s.task if s.place is not None and s.task else "session"


def timeouts(ctx: RunContext) -> watchdog.SessionTimeouts:
    """The run's session and idle timeouts (--session-timeout, --idle-timeout)."""
    return watchdog.SessionTimeouts(ctx.limits.session_s, ctx.limits.idle_s)


def classify(ctx: RunContext, s: Session, result: SessionResult) -> None:
    """How the session ended, once for every later step (outcome.classify_session),
    and the notices of what happened around it: a failing heartbeat, processes that left
    its group, a timeout that ended it (stdout stays s.12's rendering)."""
    s.result = result
    s.outcome, s.hit = outcome.classify_session(
        result, danger=ctx.options.danger, agent=s.adapter.name, env=s.env or ctx.env,
        session_s=ctx.limits.session_s, idle_s=ctx.limits.idle_s,
        default_wait_s=ctx.limits.default_wait_s)
    s.reason = s.give_back_reason()          # the record's, unless a feature says why
    s.fields.update(version.session_fields(s.adapter, result.summary, ctx.env))  # its CLI's release
    if result.heartbeat is not None and result.heartbeat.failures:
        _notice(ctx, s, "heartbeat", heartbeat.problem(result.heartbeat))
    if result.strays:
        _notice(ctx, s, "strays", strays.line(result.strays))
    if (result.timed_out or result.idle_out) and s.place is None:   # --parallel: its end line
        _notice(ctx, s, "timeout", s.give_back_reason())


def _notice(ctx: RunContext, s: Session, kind: str, message: str) -> None:
    """A notice about the session: stderr (prefixed with its task under --parallel) and a
    `log` event naming its task when ralph claimed it."""
    ctx.warn(s.tag + message)
    ctx.record("log", kind=kind, message=message, **({"task": s.task} if s.tag else {}))


def give_back_active(ctx: RunContext, s: Session, env: dict[str, str] | None = None) -> None:
    """s.15.5: every task still active for the session's agent goes back to open; those it
    failed join `s.failed`. The single loop asks which tasks (`list --status active
    --assignee`, ralph.sh's call); a `--parallel` session's agent held its one task."""
    if not s.agent:
        return
    env = ctx.env if env is None else env
    slugs = active_tasks(ctx, s.agent, env) if s.place is None else [s.task]
    s.failed += [slug for slug in give_back(ctx, slugs, s.give_back_reason(), attempt=s.attempt,
                                            env=env) if slug not in s.failed]


def active_tasks(ctx: RunContext, agent: str, env: Mapping[str, str]) -> list[str]:
    """The tasks `agent` holds active."""
    active = ctx.task.call("list", "--status", "active", "--assignee", agent, "--markdown",
                           env=env)                             # task list --status active ...
    return answers.slugs(active.output)


def give_back(ctx: RunContext, slugs: list[str], reason: str, *, attempt: bool,
              env: Mapping[str, str], passthrough: bool = True) -> list[str]:
    """s.15.5's give-back of `slugs`: `task fail` with `reason`, or, after no attempt at them,
    released without a failure counted where the task command is ours (answers.give_back);
    its output passed through to stdout unless `passthrough` is False. The slugs it failed (a
    `fail` refused, say one another host holds on a fleet's store, is not one)."""
    failed = []
    for slug in slugs:
        argv = answers.give_back(slug, reason, attempt=attempt, ours=ctx.task.embedded)
        if passthrough:
            ctx.stdout.flush()
            done = ctx.task.passthrough(*argv, env=env,       # task fail $id --reason "..."
                                        out=ctx.stdout.buffer)
        else:
            done = ctx.task.call(*argv, env=env)
        if done.ok:
            failed.append(slug)
    return failed


def end(ctx: RunContext, s: Session, result: SessionResult) -> Session:
    """The single loop's session has ended: classified, then the features' after_session
    hooks in their order; the caller then gives back what is left active and records it.
    One a Ctrl+C or SIGTERM cut short is left as it is: the run ends (exit 130) and the next
    run settles what it left (docs/decisions/0025)."""
    classify(ctx, s, result)
    if not result.interrupted:
        ctx.features.after_session(s)
    return s


__all__ = ["Prompt", "Session", "new", "begin", "launch", "end", "classify", "give_back_active",
           "active_tasks", "give_back",
           "first_interrupt", "timeouts", "WAITING", "INTERRUPTED_REASON"]
