"""Owns one session as the loop runs it (docs/contract/ralph-cli.md s.11): the prompt (spilled to a
file when it cannot be one argument), the agent's argv and environment, respawn safety and the
one-shot FRESH_START, the run state around it (write-ahead pid file, agent pid), `session.run` with
the run's timeouts; then its record (run state, progress, the unattended-run outcome) and s.15.5's
crash safety. Knows nothing of the loop's order (ralph.py) or of the session pump (session)."""
from __future__ import annotations

import os
from typing import Callable

from ralphpy import strays, workspace
from ralphpy.agents import adapters as agents
from ralphpy.assign import mode as assign_mode
from ralphpy.assign import session as assigned_session
from ralphpy.backlog import answers as backlog
from ralphpy.backlog import readonly as backlog_readonly
from ralphpy.config.settings import find_repo_root
from ralphpy.config.table import BY_NAME
from ralphpy.loop.context import RunContext
from ralphpy.loop.features import Assign, Prompt, Verify
from ralphpy.runs import leftovers, lifecycle
from ralphpy.fleet import store as fleet_store
from ralphpy.session import fresh_start
from ralphpy.session import heartbeat
from ralphpy.session import respawn
from ralphpy.session import run as session
from ralphpy.backlog.answers import DELETED_NOTICE, DELETED_UNHELD_NOTICE, FAIL_REASON

WAITING = "Waiting for {agent} to finish cleanup... Press Ctrl+C again to force quit."
# Flags a --parallel run has no use for (docs/parallel.md), and why.
NOT_PARALLEL = {"continue_session": "each --parallel session starts fresh in its own worktree",
                "max_idle_sessions": "a --parallel run starts each task at most once"}


def first_interrupt(ctx: RunContext) -> None:
    """s.16: the first Ctrl+C lets the agent clean up."""
    ctx.say("")
    ctx.say(WAITING.format(agent=ctx.adapter.name))


def run_session(ctx: RunContext, command: str, prompt: Prompt) -> session.SessionResult:
    """s.11: build the prompt and argv, run the agent, stream and log its output."""
    ctx.sessions += 1
    command = prompt.command or command                         # a --prompt template
    text = f"{command} {prompt.data}" if prompt.data else command
    adapter = ctx.adapter                                       # claude unless --agent
    if not adapter.prompt_on_stdin and not agents.prompt_fits(text):   # [SAFER] ralph.sh: E2BIG
        path = workspace.ralph_subdir(ctx.cwd, "prompts") / f"{ctx.session_stem()}.md"
        text = agents.spill_prompt(command, prompt.data, path)
        size = len(prompt.data.encode("utf-8", "surrogateescape"))
        ctx.say(f"Note: task data ({size} bytes) is too large for one command-line argument; "
                f"passing it in {path}")
    argv = adapter.argv(text, danger=ctx.options.danger, model=ctx.model)
    if ctx.options.respawn_safety:
        note = respawn.neutralise_ralph_loop(ctx.cwd)           # no inherited ralph-loop
        if note:
            ctx.notice("respawn_safety", note)
    fresh = fresh_start.consume(ctx.ralph_dir)                  # FRESH_START is one-shot
    argv += fresh_start.session_resume_args(ctx.options.continue_session, fresh)
    log_path = workspace.ralph_subdir(ctx.cwd, "logs") / f"{ctx.session_stem()}.jsonl"
    pidfile = lifecycle.begin_session(ctx.run, task=prompt.task, log=log_path,
                                      agent=ctx.agent_id, cli=adapter.name)
    if _reads_back(ctx):                      # what a `task fail` during the session changes
        ctx.run.retries_before = backlog_readonly.retry_counts(environ=ctx.env, cwd=ctx.cwd)
    ctx.stdout.flush()
    env = {**ctx.env, **adapter.env(danger=ctx.options.danger)}
    result = session.run(argv, env=env,
                         log_path=log_path, out=ctx.stdout.buffer, guard=ctx.guard,
                         on_first_interrupt=lambda: first_interrupt(ctx),
                         renderer=adapter.new_renderer(ctx.stdout.buffer),
                         stdin=adapter.stdin(text),
                         on_start=lambda pid: lifecycle.agent_started(ctx.run, pid),
                         pidfile=pidfile,                       # write-ahead: a kill -9 before on_start
                         timeouts=ctx.night.timeouts,           # TERM, grace, KILL
                         kill_grace_s=ctx.night.cfg.kill_grace_s,
                         heartbeat=_heartbeat(ctx, env),        # a fleet's store: renew claims
                         read_stderr=adapter.reads_stderr)      # amp: its refusals are there
    if not result.started:
        ctx.warn(f"Error: cannot run '{argv[0]}': {result.error}")
    if result.heartbeat is not None and result.heartbeat.failures:
        ctx.notice("heartbeat", heartbeat.problem(result.heartbeat))
    if result.strays:
        ctx.notice("strays", strays.line(result.strays))
    if result.timed_out or result.idle_out:                     # stdout stays s.12's rendering
        ctx.notice("timeout", ctx.night.fail_reason(result))
    return result


def _heartbeat(ctx: RunContext, env: dict[str, str]) -> heartbeat.Heartbeat | None:
    """The session's heartbeat: only on a fleet's store, for the run's agent."""
    if not ctx.agent_id or not ctx.fleet():
        return None
    return fleet_store.heartbeat(ctx.task.executable, ctx.agent_id, ctx.options.lease, env, None)


def _reads_back(ctx: RunContext) -> bool:
    """The session's tasks are read back from the store: our own task CLI, an agent id, and
    no other host (a fleet's) whose `fail` could be taken for this session's."""
    return bool(ctx.agent_id and ctx.task.embedded and not ctx.fleet())


def _names_unheld(ctx: RunContext) -> bool:
    """A task nobody in the run's sessions held, deleted during them, is named: in a build run
    (a plan session prunes by design) that reads its store back, not a fleet's, where another
    host may have deleted it."""
    return ctx.mode == "build" and _reads_back(ctx)


def _deleted(ctx: RunContext) -> None:
    """Name each task deleted during the session: the backlog shrank without the work and
    nothing verified it (never silent). One this agent held: its agent deleted it instead of
    finishing it. In a build run, one nobody in the session held, too, unless other hosts (a
    fleet's store) may have deleted it; a frozen scope names it as well, but only before a
    next session, and a run whose backlog the deletion emptied has none."""
    others = _names_unheld(ctx)
    for slug, holder in backlog_readonly.deleted_since(ctx.run.session_since, environ=ctx.env,
                                                       cwd=ctx.cwd):
        if holder == ctx.agent_id:
            ctx.notice("deleted", DELETED_NOTICE.format(slug), task=slug)
        elif others:
            ctx.notice("deleted", DELETED_UNHELD_NOTICE.format(slug), task=slug)


def record_session(ctx: RunContext, result: session.SessionResult, failed: list[str] = (),
                   reason: str = FAIL_REASON) -> None:
    """The session's outcome in the run state and progress record. The tasks are read back
    (read-only, no task call): those the crash-safety step (or a feature) failed, those this
    agent marked done since the session started, and those a `task fail` of the agent put back
    (the build skill's way to give up: a failed attempt with the agent's reason). A task
    deleted during the session is a notice (_deleted)."""
    completed, gave_up = [], {}
    if ctx.agent_id and ctx.task.embedded:
        completed = backlog_readonly.finished_by(ctx.agent_id, ctx.run.session_since,
                                                 environ=ctx.env, cwd=ctx.cwd)
        _deleted(ctx)
    if _reads_back(ctx):
        gave_up = {slug: why for slug, why in backlog_readonly.failed_since(
            ctx.run.retries_before, ctx.run.session_since, environ=ctx.env,
            cwd=ctx.cwd).items() if slug not in failed}
    failed = [*failed, *gave_up]
    assign = ctx.features.get(Assign) if ctx.features else None
    assigned = (ctx.run.state.active or {}).get("task") if assign else None
    for slug in (s for s in completed if assigned and s != assigned):   # never silent creep
        ctx.notice("drift", f"task {assigned}: the session also finished task {slug}, which "
                            "it was not assigned")
    outcome = None if result.interrupted else ctx.night.after_session(
        result, failed, reason, progressed=bool(completed), reasons=gave_up)
    lifecycle.end_session(ctx.run, returncode=result.returncode, summary=result.summary,
                          interrupted=result.interrupted, completed=completed,
                          failed=failed, fail_reason=reason, reasons=gave_up,
                          extra=outcome)                        # how the session ended


def run_parallel(ctx: RunContext, scope_check: Callable[[], bool] | None) -> str:
    """--parallel N: up to N sessions at once, one claimed task each, in git worktrees whose
    branches are merged back (parallel.run owns it all). Returns why it ended."""
    from ralphpy.parallel import run as parallel   # git worktrees: only a --parallel run pays

    opts, night = ctx.options, ctx.night
    for name, why in NOT_PARALLEL.items():              # given on the command line: said once
        if opts.source(name) == "cli":
            value, flag = getattr(opts, name), BY_NAME[name].flag
            shown = flag if value is True else f"{flag} {value}"
            ctx.notice("flag_ignored", f"{shown} ignored: {why}")
    if line := assign_mode.prompt_ignored(opts):
        ctx.notice("flag_ignored", line)
    verify = ctx.features.get(Verify) if ctx.features else None
    assign = ctx.features.get(Assign) if ctx.features else None
    prompt = assign_mode.dispatch_template(opts)        # --assign takes precedence, as in the loop
    return parallel.run(parallel.Setup(
        task=ctx.task, env=ctx.env, cwd=ctx.cwd, adapter=ctx.adapter, danger=opts.danger,
        model=ctx.model, parallel=opts.parallel, max_iterations=opts.max_iterations,
        merge=opts.merge, run_branch=ctx.branch, first_agent=ctx.agent_id, run=ctx.run,
        guard=ctx.guard, out=ctx.stdout.buffer, say=ctx.say, warn=ctx.warn,
        on_first_interrupt=lambda: first_interrupt(ctx),
        stem=f"{ctx.run_stamp}-{os.getpid()}-build",
        timeouts=night.timeouts, kill_grace_s=night.cfg.kill_grace_s,      # per session
        scope_check=scope_check,                                           # FREEZE_SCOPE: exit 4
        verify=verify.gate if verify else None,                            # before each merge
        lease_s=opts.lease if ctx.fleet() else 0.0,                        # claims, heartbeats
        default_limit_wait_s=night.cfg.default_wait_s,                     # usage limits
        night=night,                   # breaker, budgets, ctl stop and pause, SIGHUP, limit waits
        prompt=prompt,                                                     # --prompt '/tf {id}'
        import_inbox=assign.before_session if assign else None,           # --assign: the inbox
        write_task_files=assign is not None,                               # and task files
        name_unheld=_names_unheld(ctx),                 # a task no session held, deleted
        template=None if prompt else assign_mode.anti_drift_template(      # read in validate
            opts, find_repo_root(ctx.cwd))))


def fail_active_tasks(ctx: RunContext, agent: str | None = None, reason: str = FAIL_REASON,
                      passthrough: bool = True, env: dict[str, str] | None = None,
                      attempt: bool = True) -> list[str]:
    """s.15.5: release what the session left active for this agent; the slugs it failed (a
    `fail` refused is not one). Also used on resume for a dead run's agent (its `fail` output
    not passed through). env: the agent's; by default ctx.env, which on a fleet's store holds
    the run's agent's claims file (session_setup), so a task another host took meanwhile is
    refused. attempt: False for a session that was no attempt at its task, whose tasks go
    back without a failure counted where the task command is ours (answers.give_back)."""
    agent = agent or ctx.agent_id
    if not agent:
        return []
    env = ctx.env if env is None else env
    active = ctx.task.call("list", "--status", "active", "--assignee", agent,
                           "--markdown", env=env)              # task list --status active ...
    failed = []
    for slug in backlog.slugs(active.output):
        argv = backlog.give_back(slug, reason, attempt=attempt, ours=ctx.task.embedded)
        if passthrough:
            ctx.stdout.flush()
            result = ctx.task.passthrough(*argv, env=env,   # task fail $id --reason "..."
                                          out=ctx.stdout.buffer)
        else:
            result = ctx.task.call(*argv, env=env)
        if result.ok:
            failed.append(slug)
    return failed


def release_dead_agent(ctx: RunContext, run_id: str, agent: str, reason: str, *,
                       attempt: bool = True) -> leftovers.Recovered:
    """On resume after a crash: settle the dead run's assigned session as its end would have
    (current-task.json: done, archived), give back what its agent still holds (failed, or,
    `attempt` False after a run the person stopped, released: answers.give_back), then
    deregister it (quietly: these are not this run's calls of s.1's table). On a fleet's store the dead
    agent's claims file is presented: a task another host took since its lease ran out is
    that host's, and its `fail` is refused."""
    env = ctx.env
    if ctx.fleet():
        env = fleet_store.as_agent(ctx.env, ctx.ralph_dir, run_id, agent)
    done, notes = assigned_session.settle_interrupted(
        ctx.task.bound(env), repo=find_repo_root(ctx.cwd), ralph_dir=ctx.ralph_dir, agent=agent)
    failed = fail_active_tasks(ctx, agent, reason, passthrough=False, env=env, attempt=attempt)
    ctx.task.call("agent", "deregister", agent, env=ctx.env)
    return leftovers.Recovered(failed, [done] if done else [], notes)


__all__ = ["run_session", "record_session", "run_parallel", "fail_active_tasks", "release_dead_agent",
           "first_interrupt", "WAITING"]
