"""Owns the start-up and clean-up steps of one plan/build run that ralph.py calls in ralph.sh's
order: the task source (before the task command is resolved), the agent and model
(docs/contract/ralph-cli.md s.7), the sandbox (--sandbox, checked to start), the run lock and
state (a new run or a resumed one, whose persisted settings win), session setup (s.9: branch,
exports, agent registration) and the exit cleanup (s.17: deregistration, exactly once); the
--sync check before any write. Knows nothing of the loops."""
from __future__ import annotations

import os
import signal
from pathlib import Path

from ralphpy import workspace
from ralphpy.agents import adapters
from ralphpy.agents import backend
from ralphpy.backlog import answers
from ralphpy.loop import launch, night_shift
from ralphpy.config.options import Options
from ralphpy.errors import UsageError
from ralphpy.fleet import store as fleet_store
from ralphpy.loop.context import RunContext, Say
from ralphpy.runlife import lifecycle
from ralphpy.runs import lock as run_lock
from ralphpy.runs import state as run_state
from ralphpy.sources import registry
from ralphpy.tasks import store_url


def task_source(opts: Options, warn: Say) -> None:
    """--tasks: before the task command is resolved and before any write, the source's tool
    is there (else UsageError: one line naming what to install, exit 1); RALPH_TASKS (and the
    source's root) reach every child through ralph.py's environment; files the source will
    skip are named on stderr (docs/task-sources.md). A store URL reaches them as
    RALPH_TASKS_DB (and as RALPH_TASKS when the `tasks` setting names it), its scheme checked
    first and the store reached within store_connect_timeout (docs/fleet.md)."""
    exports, notes = registry.prepare(opts.tasks, opts.mode, os.environ, Path.cwd())
    os.environ.update(exports)
    fleet_store.check(os.environ, opts.store_connect_timeout,   # unknown scheme, no driver,
                      warn)                                     # never reached: exit 1
    for note in notes:
        warn(note)


def choose_agent(ctx: RunContext) -> None:
    """The agent backend (`--agent`, `--agent-cmd`; unknown name: exit 1, nothing
    written), then the model: s.7's aliases for claude, the name as given for other CLIs."""
    opts = ctx.options
    ctx.adapter = adapters.get_adapter(opts.agent or "claude", opts.agent_cmd)
    ctx.model = None
    if opts.model is not None:                                  # s.7
        ctx.model = opts.model if ctx.adapter.name != "claude" else backend.resolve_model(
            opts.model, ctx.backend, backend.models_file(ctx.script_dir))
    ctx.adapter.argv("", model=ctx.model)                       # a --model this agent cannot take
    night_shift.check_escalate(ctx)                             # docs/night-shift.md


UNGUARDED = ("Warning: --danger in an unattended run without a sandbox: the agent can read "
             "your keys and write anywhere you can (--sandbox auto, docs/sandbox.md)")


def choose_sandbox(ctx: RunContext) -> None:
    """--sandbox: the backend, checked to start a sandbox here before anything is written
    (else UsageError: one line naming what to install or start, exit 1; never a silent run on
    the host); without one, --danger in a run nobody watches (nohup, no terminal) is warned
    about once, on stderr."""
    from ralphpy.sandbox import backends
    opts = ctx.options
    # A resumed run keeps its sandbox (its persisted settings win, as start_run applies them):
    # a plain `ralph build` after a crash must not run the rest of a sandboxed run on the host.
    kept = lifecycle.kept_options(ctx.ralph_dir, ctx.mode, opts.resume)
    ctx.sandbox = backends.resolve(kept.get("sandbox", opts.sandbox),
                                   kept.get("sandbox_image", opts.sandbox_image), ctx.env)
    if ctx.sandbox is None and opts.danger and _unattended():
        ctx.warn(UNGUARDED)


def _unattended() -> bool:
    """nohup (SIGHUP ignored) or no controlling terminal (cron, systemd, a detached shell)."""
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        return True
    try:
        os.close(os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY))
    except OSError:
        return True
    return False


def check_checkout(ctx: RunContext) -> None:
    """Before anything is written, what the checkout must offer, else UsageError (one line,
    exit 1): --parallel a checked-out branch to merge into (docs/parallel.md); --sync a git
    repository on a branch, the remote of the shared branch, no rebase under way, and no
    --parallel (docs/fleet.md)."""
    opts = ctx.options
    if opts.pr and opts.mode == "build":
        from ralphpy.pulls import start as pulls_start      # --pr only
        pulls_start.check(opts, ctx.env, ctx.cwd)
    if not opts.sync:
        if opts.mode == "build" and opts.parallel > 1 and not workspace.current_branch(ctx.env):
            from ralphpy.parallel import NEEDS_BRANCH     # the package only: no git worktrees
            raise UsageError(NEEDS_BRANCH)
        return
    if opts.mode == "build" and opts.parallel > 1:
        raise UsageError("--sync does not work with --parallel: run one ralph per clone")
    ctx.sync_target()                                   # resolved once: the run reuses it


def start_run(ctx: RunContext) -> None:
    """The run lock before the first write to the backlog (`agent register`), then the run
    state: a new run, or the interrupted one resumed with its counters and its persisted
    settings (they win over the flags given now; each mismatch is a stderr line)."""
    _not_inside_another_run(ctx)                                # exit 3, before any write
    workspace.ralph_subdir(ctx.ralph_dir.parent, "runs")       # .ralph/ with its .gitignore (exit 8)
    opts = ctx.options
    asked = opts.max_iterations if opts.source("max_iterations") != "default" else None
    with ctx.guard.deferred():                                  # a signal cannot split lock and state
        ctx.run = lifecycle.start_run(
            ctx.ralph_dir, ctx.mode, max_iterations=opts.max_iterations,
            cli_max_iterations=asked, options=opts.persisted(), resume=opts.resume,
            recover=lambda run_id, agent, why, attempt: launch.release_dead_agent(
                ctx, run_id, agent, why, attempt=attempt),
            source=store_url.redact(opts.tasks))            # a resumed run's backlog (exit 1)
    for note in ctx.run.notes:                                  # stderr: stdout stays s.10's
        ctx.warn(note)
    state = ctx.run.state
    ctx.options = opts.with_values({**state.options, "max_iterations": state.max_iterations})
    _sync_or_parallel(ctx, asked_sync=opts.sync)
    choose_agent(ctx)


def _not_inside_another_run(ctx: RunContext) -> None:
    """RALPH_TASKS_DB names a task database in another checkout's .ralph/ (a --parallel
    session's worktree is given its run's): that backlog's run lock is the one that counts
    (one run per backlog, docs/runs.md), not the worktree's own .ralph/."""
    db = ctx.env.get("RALPH_TASKS_DB", "")
    if not db or store_url.scheme(db) is not None:
        return
    home = (ctx.cwd / db).resolve().parent
    if home.name == ".ralph" and home != ctx.ralph_dir.resolve():
        run_lock.refuse_if_held(home / "run.lock", "this run's backlog (RALPH_TASKS_DB)")


def _sync_or_parallel(ctx: RunContext, asked_sync: bool) -> None:
    """--sync does not work with --parallel. check_checkout refuses both flags, but a resumed run
    may keep one and be given the other now: the kept one wins, as every kept setting does,
    and the other is dropped from the run's settings with one line (docs/fleet.md)."""
    opts = ctx.options
    if ctx.mode != "build" or not opts.sync or opts.parallel <= 1:
        return
    if asked_sync:                                              # the run kept --parallel
        dropped, values = "sync", {"sync": False}
        line = (f"--sync ignored: the resumed run runs --parallel {opts.parallel}, which does "
                "not work with --sync")
    else:                                                       # the run kept --sync
        dropped, values = "parallel", {"parallel": 1}
        line = (f"--parallel {opts.parallel} ignored: the resumed run syncs (--sync), which "
                "does not work with --parallel")
    ctx.run.state.options.pop(dropped, None)                    # a later resume decides alike
    run_state.save(ctx.ralph_dir, ctx.run.state)
    ctx.options = opts.with_values(values)
    ctx.notice("flag_mismatch", line)


def session_setup(ctx: RunContext) -> None:
    """s.9, in order; on a fleet's store, then the agent's claims file (RALPH_CLAIMS_FILE)."""
    ctx.branch = workspace.current_branch(ctx.env)              # BRANCH=$(git branch --show-current)
    ctx.export("RALPH_TASK_SCRIPT", ctx.task.script(ctx.ralph_dir))  # export RALPH_TASK_SCRIPT=$TASK_SCRIPT
    ctx.export("SCRIPT_DIR", str(ctx.script_dir))               # export SCRIPT_DIR
    scope = ctx.task.call("_get-scope", env=ctx.env)            # SCOPE=$(task _get-scope)
    if scope.ok:
        parsed = answers.scope(scope.output)
        ctx.export("RALPH_SCOPE_REPO", parsed.repo)             # export RALPH_SCOPE_REPO=...
        ctx.export("RALPH_SCOPE_BRANCH", parsed.branch)         # export RALPH_SCOPE_BRANCH=...
    if ctx.mode == "build":
        agent = ctx.task.call("agent", "register", env=ctx.env)  # AGENT_ID=$(task agent register)
        if agent.output:                                        # whatever the exit status (s.9.4)
            ctx.agent_id = agent.output
            ctx.export("RALPH_AGENT_ID", agent.output)          # export RALPH_AGENT_ID
    if (store := ctx.fleet()) is not None:                      # a fleet's store (docs/fleet.md)
        ctx.run.state.extra["fleet"] = {"store": fleet_store.shown(store),
                                        "leaseS": ctx.options.lease}     # for ralph status
        if ctx.agent_id:                                        # the agent's fencing tokens
            ctx.export("RALPH_CLAIMS_FILE", str(fleet_store.claims_file(
                ctx.ralph_dir, ctx.run.state.run_id, ctx.agent_id)))


def exit_cleanup(ctx: RunContext) -> None:
    """s.17: exactly once, on every way out after session setup has begun."""
    ctx.guard.closing = True                                    # from here a signal cannot cut it short
    if ctx.cleaned_up:
        return
    ctx.cleaned_up = True
    if ctx.agent_id:
        ctx.stdout.flush()
        ctx.task.passthrough("agent", "deregister", ctx.agent_id,  # task agent deregister $AGENT_ID
                             env=ctx.env, out=ctx.stdout.buffer)


__all__ = ["task_source", "choose_agent", "check_checkout", "start_run", "session_setup",
           "exit_cleanup"]
