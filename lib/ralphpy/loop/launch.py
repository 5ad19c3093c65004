"""Owns the single loop's session as ralph.py runs it (docs/contract/ralph-cli.md s.11): through the
one session lifecycle (loop.sessions), in the checkout, a pool of one, with the run state around it
(write-ahead record and pid file, agent pid); then its record (run state, progress, the
features' fields: the unattended-run outcome, the attempts counted), and the crash-safety
give-back of a dead run's agent on resume; `--parallel`'s run handed over (loop.parallel_loop).
Knows nothing of the loop's order (ralph.py) or of the session pump (session)."""
from __future__ import annotations

from ralphpy.assign import assigned_session
from ralphpy.backlog import readonly as backlog_readonly
from ralphpy.config.settings import find_repo_root
from ralphpy.loop import sessions
from ralphpy.loop.context import RunContext
from ralphpy.loop.features import Assign
from ralphpy.loop.sessions import Prompt
from ralphpy.runlife import lifecycle
from ralphpy.runs import leftovers
from ralphpy.fleet import store as fleet_store
from ralphpy.session import run as session_run
from ralphpy.backlog.answers import DELETED_NOTICE, DELETED_UNHELD_NOTICE

def run_session(ctx: RunContext, command: str, prompt: Prompt) -> sessions.Session:
    """s.11: the single loop's session, a pool of one in the checkout: begun (the write-ahead
    record before the agent starts), run to its end, classified and given to the features'
    after_session hooks (loop.sessions); the loop then gives back what is left and records it."""
    ctx.sessions += 1
    s = sessions.begin(ctx, sessions.new(ctx, command, prompt, n=ctx.sessions))
    s.pidfile = lifecycle.begin_session(ctx.run, task=prompt.task, log=s.log,
                                        agent=ctx.agent_id, cli=s.adapter.name,
                                        model=s.fields.get("model"))
    if _reads_back(ctx):                      # what a `task fail` during the session changes
        ctx.run.retries_before = backlog_readonly.retry_counts(environ=ctx.env, cwd=ctx.cwd)
    ctx.stdout.flush()
    adapter = s.adapter
    result = session_run.run(s.argv, env=s.env,
                         log_path=s.log, out=ctx.stdout.buffer, guard=ctx.guard,
                         on_first_interrupt=lambda: sessions.first_interrupt(ctx),
                         renderer=adapter.new_renderer(ctx.stdout.buffer),
                         stdin=adapter.stdin(s.text),
                         on_start=lambda pid: lifecycle.agent_started(ctx.run, pid),
                         pidfile=s.pidfile,                     # write-ahead: a kill -9 before on_start
                         timeouts=sessions.timeouts(ctx),       # TERM, grace, KILL
                         kill_grace_s=ctx.limits.kill_grace_s,
                         heartbeat=s.beat,                      # a fleet's store: renew claims
                         read_stderr=adapter.reads_stderr)      # amp: its refusals are there
    if not result.started:
        ctx.warn(f"Error: cannot run '{s.argv[0]}': {result.error}")
    return sessions.end(ctx, s, result)


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


def record_session(ctx: RunContext, s: sessions.Session) -> None:
    """The session's outcome in the run state and progress record. The tasks are read back
    (read-only, no task call): those the crash-safety step (or a feature) failed, those this
    agent marked done since the session started, and those a `task fail` of the agent put back
    (the build skill's way to give up: a failed attempt with the agent's reason). A task
    deleted during the session is a notice (_deleted). The features' record hook adds their
    fields (the unattended checks: its class, the attempts counted, the tasks held)."""
    completed, gave_up = [], {}
    if ctx.agent_id and ctx.task.embedded:
        completed = backlog_readonly.finished_by(ctx.agent_id, ctx.run.session_since,
                                                 environ=ctx.env, cwd=ctx.cwd)
        _deleted(ctx)
    if _reads_back(ctx):
        gave_up = {slug: why for slug, why in backlog_readonly.failed_since(
            ctx.run.retries_before, ctx.run.session_since, environ=ctx.env,
            cwd=ctx.cwd).items() if slug not in s.failed}
    s.failed += list(gave_up)
    s.reasons.update(gave_up)
    s.completed = completed
    assign = ctx.features.get(Assign) if ctx.features else None
    assigned = (ctx.run.state.active or {}).get("task") if assign else None
    for slug in (x for x in completed if assigned and x != assigned):   # never silent creep
        ctx.notice("drift", f"task {assigned}: the session also finished task {slug}, which "
                            "it was not assigned")
    result = s.result
    ctx.features.record(s)
    lifecycle.end_session(ctx.run, returncode=result.returncode, summary=result.summary,
                          interrupted=result.interrupted, completed=completed,
                          failed=s.failed, fail_reason=s.reason, reasons=gave_up,
                          extra=s.fields or None)               # how the session ended


def run_parallel(ctx: RunContext) -> tuple[str, str]:
    """--parallel N: up to N sessions at once, one claimed task each, in git worktrees whose
    branches are merged back (loop.parallel_loop). Returns why it ended, and the line a stop
    request ended it with."""
    from ralphpy.loop import parallel_loop  # git worktrees: only a --parallel run pays
    return parallel_loop.run(ctx)


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
    failed = sessions.give_back(ctx, sessions.active_tasks(ctx, agent, env), reason,
                                attempt=attempt, env=env, passthrough=False)
    ctx.task.call("agent", "deregister", agent, env=ctx.env)
    return leftovers.Recovered(failed, [done] if done else [], notes)


__all__ = ["run_session", "record_session", "run_parallel", "release_dead_agent"]
