#!/usr/bin/env python3
"""ralph.py: run an AI coding agent in a Ralph loop over a task backlog. A drop-in for ralph.sh
(same commands, flags, messages and exit codes; contract: spec/ralph-cli.md).

    $ ./ralph.py plan                  # one planner session: study specs/, create tasks
    $ ./ralph.py plan -n 3 --completion-promise DONE
    $ ./ralph.py build -n 20 --model sonnet
    ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━
    Mode:   build
    ...
    No tasks available. Exiting loop.
    $ ./ralph.py task peek -n 10       # the task CLI ($RALPH_TASK_CMD, else scripts/task)

ralph.py prints and picks exit codes; everything else is one call into lib/ralphkit, with
the ralph.sh line it ports as a trailing comment.
"""
from __future__ import annotations

import os
import sys

SCRIPT_DIR = os.path.dirname(os.path.realpath(__file__))      # s.1: every symlink resolved


def _bootstrap() -> None:
    """Run from a checkout: lib/ first on sys.path; without plumbum/yaml, re-exec with the
    checkout's .venv (so `./ralph.py build -n 5` works after `make setup`)."""
    lib = os.path.join(SCRIPT_DIR, "lib")
    if os.path.isdir(lib) and lib not in sys.path:
        sys.path.insert(0, lib)
    import importlib.util
    if all(importlib.util.find_spec(name) for name in ("plumbum", "yaml")):
        return
    venv = os.path.join(SCRIPT_DIR, ".venv")
    python = os.path.join(venv, "bin", "python")
    if os.path.exists(python) and os.path.realpath(sys.prefix) != os.path.realpath(venv):
        os.execv(python, [python, os.path.realpath(__file__), *sys.argv[1:]])


_bootstrap()

import dataclasses  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
import shlex  # noqa: E402
import time  # noqa: E402

from ralphkit.agents import adapters as agents  # noqa: E402
from ralphkit.agents import backend
from ralphkit.backlog import answers as backlog
from ralphkit.config import flags as cli_args
from ralphkit import errors
from ralphkit.agents import claude_render as render
from ralphkit.session import run as session
from ralphkit.commands import ctl  # noqa: E402
from ralphkit.commands import install
from ralphkit.parallel import run as parallel
from ralphkit import signals
from ralphkit.commands import status
from ralphkit.backlog import calls as task_calls
from ralphkit import workspace
from ralphkit.backlog import readonly as backlog_readonly  # noqa: E402
from ralphkit.config import settings as config
from ralphkit.runs import lifecycle as run_control
from ralphkit.scope import freeze as scope_run
from ralphkit.assign import mode as assign_mode  # noqa: E402
from ralphkit.session import fresh_start
from ralphkit.unattended import night as overnight
from ralphkit.config import unattended_flags as overnight_options
from ralphkit.runs import progress
from ralphkit.session import respawn
from ralphkit.verify import completion as verify
from ralphkit.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE  # noqa: E402

GENERAL_HELP = """\
Usage: ralph <command> [options]

Commands:
  plan   Run the planner (study specs, create tasks)
  build  Run the builder (claim and implement tasks)
  task   Interact with the task backlog

Run 'ralph <command> --help' for command-specific options.
"""
RULE = "\u2501" * 40
NO_SPECS = "Error: No specs found. Run /ralph-spec first to generate specs in ./specs/"
WAITING = "Waiting for {agent} to finish cleanup... Press Ctrl+C again to force quit."
FAIL_REASON = overnight.FAIL_REASON


def say(text: str = "", end: str = "\n") -> None:
    """Print and flush at once: a child may write to the same stdout next (s.1 ordering)."""
    sys.stdout.write(text + end)
    sys.stdout.flush()


def warn(text: str) -> None:
    sys.stdout.flush()
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


@dataclass
class RunContext:
    """Everything one plan/build run knows. Later features (run lock, run state, scope
    freeze, assignment, timeouts, budgets, parallel) add their fields here."""

    mode: str
    options: cli_args.Options
    task: task_calls.TaskCommand
    guard: signals.Guard
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))  # every child's env
    cwd: Path = field(default_factory=Path.cwd)
    backend: str = backend.ANTHROPIC
    model: str | None = None                 # resolved model id (s.7); None without --model
    branch: str = ""
    agent_id: str = ""
    run_stamp: str = field(default_factory=lambda: time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    sessions: int = 0                        # sessions started in this run
    cleaned_up: bool = False
    ralph_dir: Path = field(default_factory=lambda: workspace.ralph_dir(Path.cwd()))  
    run: run_control.Run | None = None       # lock + state + progress
    night: overnight.Night | None = None     # timeouts, limits, breaker, budgets, ctl
    exit_reason: str = "unexpected error"    # the run's last line, for run_end / ralph status
    freeze: scope_run.Freeze | None = None   # FREEZE_SCOPE: the frozen scope
    assign: assign_mode.AssignMode | None = None   # --assign / assign: true
    adapter: agents.AgentAdapter = field(default_factory=lambda: agents.get_adapter("claude"))
    verify: verify.Gate | None = None              # build: --verify, tamper check (docs/verify.md)

    def export(self, name: str, value: str) -> None:
        """s.9: an export reaches every child (explicit env) and ralph.py's own environment."""
        self.env[name] = value
        os.environ[name] = value

    def session_stem(self) -> str:
        return f"{self.run_stamp}-{os.getpid()}-{self.mode}-{self.sessions:03d}"


# ---------------------------------------------------------------------------- start-up steps

def session_setup(ctx: RunContext) -> None:
    """s.9, in order."""
    ctx.branch = workspace.current_branch(ctx.env)              # BRANCH=$(git branch --show-current)
    ctx.export("RALPH_TASK_SCRIPT", ctx.task.command)           # export RALPH_TASK_SCRIPT=$TASK_SCRIPT
    ctx.export("SCRIPT_DIR", SCRIPT_DIR)                        # export SCRIPT_DIR
    scope = ctx.task.call("_get-scope", env=ctx.env)            # SCOPE=$(task _get-scope)
    if scope.ok:
        parsed = backlog.scope(scope.output)
        ctx.export("RALPH_SCOPE_REPO", parsed.repo)             # export RALPH_SCOPE_REPO=...
        ctx.export("RALPH_SCOPE_BRANCH", parsed.branch)         # export RALPH_SCOPE_BRANCH=...
    if ctx.mode == "build":
        agent = ctx.task.call("agent", "register", env=ctx.env)  # AGENT_ID=$(task agent register)
        if agent.output:                                        # whatever the exit status (s.9.4)
            ctx.agent_id = agent.output
            ctx.export("RALPH_AGENT_ID", agent.output)          # export RALPH_AGENT_ID


def exit_cleanup(ctx: RunContext) -> None:
    """s.17: exactly once, on every way out after session setup has begun."""
    ctx.guard.closing = True                                    # from here a signal cannot cut it short
    if ctx.cleaned_up:
        return
    ctx.cleaned_up = True
    if ctx.agent_id:
        sys.stdout.flush()
        ctx.task.passthrough("agent", "deregister", ctx.agent_id,  # task agent deregister $AGENT_ID
                             env=ctx.env, out=sys.stdout.buffer)


def freeze_scope(ctx: RunContext) -> None:
    """At run start: Snapshot the scope (a resumed run keeps its own); from here every
    task call and the agent see only the frozen ids (RALPH_FROZEN_IDS_FILE)."""
    freeze, stop_on_change = (bool(ctx.options.extra.get(name))    # CLI > env > ralph.yml; a
                              for name in ("freeze_scope", "stop_on_scope_change"))  # resume: persisted
    if not (freeze or stop_on_change):                            # off: no extra task call
        return
    ctx.freeze = scope_run.start(ctx.task, ctx.env, ctx.run.ralph_dir, ctx.run.state,
                                 config.find_repo_root(ctx.cwd), stop_on_change=stop_on_change,
                                 watch_specs=ctx.options.extra.get("scope_watch") is not False)
    ctx.export("RALPH_FROZEN_IDS_FILE", str(ctx.freeze.ids_file))
    snap = ctx.freeze.snapshot
    kept = "frozen" if snap.created else f"kept from {snap.frozen_at}"
    warn(f"Scope {kept}: {len(snap.task_ids)} tasks ({ctx.freeze.run_dir}/scope.json)")
    for line in snap.warnings:
        warn(f"Warning: scope: {line}")


def check_scope(ctx: RunContext) -> bool:
    """Before every session: Name each change once, stop on it under
    STOP_ON_SCOPE_CHANGE (exit 4). True when every frozen task is done."""
    if ctx.freeze is None:
        return False
    found = scope_run.check(ctx.freeze, ctx.task, ctx.env)
    if found.report is None:
        warn("Warning: scope check skipped: the task command could not list the backlog")
    for line in found.new_lines:
        warn(f"Scope changed: {line}")
    if found.stop:
        raise errors.ScopeChanged(found.report.summary())
    return found.target_done


def banner(ctx: RunContext) -> None:
    """s.10."""
    opts = ctx.options
    lines = [RULE,
             f"Mode:   {ctx.mode}",
             f"Prompt: /ralph-{ctx.mode}",
             f"Branch: {ctx.branch}",
             "Safe:   " + ("NO (--dangerously-skip-permissions)" if opts.danger else "yes"),
             f"Backend: {ctx.backend}"]
    if ctx.agent_id:
        lines.append(f"Agent:  {ctx.agent_id}")
    if opts.model is not None:
        lines.append(f"Model:  {opts.model} ({ctx.model})")
    if opts.max_iterations > 0:
        unit = "iteration" if opts.max_iterations == 1 else "iterations"
        lines.append(f"Max:    {opts.max_iterations} {unit}")
    lines.append(RULE)
    say("\n".join(lines))


# ---------------------------------------------------------------------------- one session

def run_session(ctx: RunContext, command: str, data: str) -> session.SessionResult:
    """s.11: build the prompt and argv, run the agent, stream and log its output."""
    ctx.sessions += 1
    prompt = f"{command} {data}" if data else command
    if not ctx.adapter.prompt_on_stdin and not agents.prompt_fits(prompt):  # [SAFER] ralph.sh: E2BIG
        path = workspace.ralph_subdir(ctx.cwd, "prompts") / f"{ctx.session_stem()}.md"
        prompt = agents.spill_prompt(command, data, path)
        size = len(data.encode("utf-8", "surrogateescape"))
        say(f"Note: task data ({size} bytes) is too large for one command-line argument; "
            f"passing it in {path}")
    adapter = ctx.adapter                                        # claude unless --agent
    argv = adapter.argv(prompt, danger=ctx.options.danger, model=ctx.model)
    if ctx.options.extra.get("respawn_safety", True):
        note = respawn.neutralise_ralph_loop(ctx.cwd)           # no inherited ralph-loop
        if note:
            notice(ctx, "respawn_safety", note)
    fresh = fresh_start.consume(ctx.ralph_dir)                  # FRESH_START is one-shot
    argv += fresh_start.session_resume_args(bool(ctx.options.extra.get("continue_session")), fresh)
    log_path = workspace.ralph_subdir(ctx.cwd, "logs") / f"{ctx.session_stem()}.jsonl"
    pidfile = run_control.begin_session(ctx.run, task=ctx.assign and ctx.assign.current,  
                                        log=log_path, agent=ctx.agent_id)
    sys.stdout.flush()
    result = session.run(argv, env={**ctx.env, **adapter.env(danger=ctx.options.danger)},
                         log_path=log_path,                      # claude -p "$PROMPT" ... | tee | jq
                         out=sys.stdout.buffer, guard=ctx.guard,
                         on_first_interrupt=lambda: (say(), say(WAITING.format(agent=adapter.name))),
                         renderer=adapter.new_renderer(sys.stdout.buffer),
                         stdin=adapter.stdin(prompt),
                         on_start=lambda pid: run_control.agent_started(ctx.run, pid),
                         pidfile=pidfile,                       # write-ahead: a kill -9 before on_start
                         timeouts=ctx.night.timeouts,           # TERM, grace, KILL
                         kill_grace_s=ctx.night.cfg.kill_grace_s)
    if not result.started:
        warn(f"Error: cannot run '{argv[0]}': {result.error}")
    return result


def record_session(ctx: RunContext, result: session.SessionResult, failed: list[str] = (),
                   reason: str = FAIL_REASON) -> None:
    """The session's outcome in the run state and progress record. In agent-selects
    build mode the tasks are read back: those the crash-safety step failed, and those this
    agent marked done since the session started (read-only, no task call)."""
    completed = []
    if ctx.agent_id and ctx.task.embedded:
        completed = backlog_readonly.finished_by(ctx.agent_id, ctx.run.session_since,
                                                 environ=ctx.env, cwd=ctx.cwd)
    outcome = None if result.interrupted else ctx.night.after_session(result, list(failed), reason)
    run_control.end_session(ctx.run, returncode=result.returncode, summary=result.summary,
                            interrupted=result.interrupted, completed=completed,
                            failed=list(failed), fail_reason=reason,
                            extra=outcome)                      # how the session ended


def notice(ctx: RunContext, kind: str, message: str) -> None:
    """A feature's notice: stderr (stdout stays ralph.sh's) and a `log` event."""
    warn(message)
    record(ctx, "log", kind=kind, message=message)


def record(ctx: RunContext, event: str, **fields: object) -> None:
    """One line of this run's events.jsonl."""
    if ctx.run is not None:
        progress.append_event(ctx.ralph_dir, ctx.run.state.run_id, event, **fields)


def report(ctx: RunContext, step: assign_mode.Step) -> assign_mode.Step:
    """Print and record what an assignment-mode step did."""
    for kind, message in step.notices:
        notice(ctx, kind, message)
    for event in step.events:
        record(ctx, **event)
    return step


def loop_separator(ctx: RunContext, n: int) -> None:
    ctx.guard.raise_pending()             # a signal during the last in-process task call: stop here
    run_control.iteration_done(ctx.run, n)                  # the counter a resume continues
    say(f"\n\n======================== LOOP {n} ========================")  # printf "\n\nLOOP %d\n"


def stop(ctx: RunContext, line: str, code: int = EXIT_OK) -> int:
    """Print the run's last line; it is also the run's exit reason (run state, ralph status)."""
    ctx.exit_reason = line.strip()
    say(line)
    return code


def finish(ctx: RunContext, line: str) -> int:
    """An end of the build loop: ralph.sh's line, except that assignment mode never ends with
    a silent "All tasks complete" while tasks are held (issue 6 respawn guard)."""
    lines = assign_mode.end_line(ctx.assign.held(), line) if ctx.assign else [line]
    code = stop(ctx, lines[0])
    for text in lines[1:]:
        say(text)
    return code


# ---------------------------------------------------------------------------- the loops

def plan_loop(ctx: RunContext) -> int:
    """s.14."""
    limit = ctx.options.max_iterations
    for i in range(ctx.run.state.iteration + 1, limit + 1):               # a resumed run goes on
        if (line := ctx.night.between_sessions()) is not None:           # ralph ctl stop, SIGHUP
            return stop(ctx, line)
        check_scope(ctx)                                                  # FREEZE_SCOPE: log, maybe stop
        dag = ctx.task.call("list", "--all", "--markdown", env=ctx.env)   # DAG=$(task list --all --markdown)
        result = run_session(ctx, "/ralph-plan", dag.output)              # claude -p "/ralph-plan $DAG"
        record_session(ctx, result)                                       # progress record
        if result.interrupted:
            return EXIT_INTERRUPTED
        if result.summary is not None and render.promise_received(
                result.summary, ctx.options.completion_promise):          # grep "<promise>$PROMISE</promise>"
            return stop(ctx, "\nPlan complete: completion promise received.")
        ctx.night.settle()                                                # exit 5/6/7, or wait out a usage limit
        loop_separator(ctx, i)
    return stop(ctx, f"Reached max iterations: {limit}")                  # [SH-COMPAT] exit 0


def build_loop(ctx: RunContext) -> int:
    """s.15."""
    if ctx.options.extra.get("parallel", 1) > 1:                         # --parallel N (build)
        return parallel_build(ctx)
    limit, done = ctx.options.max_iterations, ctx.run.state.iteration   # a resumed run goes on
    if ctx.assign:
        notice(ctx, "assign", ctx.assign.describe())                      # issue 6, on stderr
    while True:
        if limit > 0 and done >= limit:
            return stop(ctx, f"Reached max iterations: {limit}")          # [SH-COMPAT] exit 0
        if (line := ctx.night.between_sessions()) is not None:           # ralph ctl stop, SIGHUP
            return stop(ctx, line)
        if check_scope(ctx):                                              # FREEZE_SCOPE: target met
            return stop(ctx, "All frozen tasks complete. Exiting loop.")
        if ctx.assign:
            report(ctx, ctx.assign.import_inbox())                        # inbox before each claim
        peek = ctx.task.call("peek", "-n", "10", env=ctx.env)             # PEEK_MD=$(task peek -n 10)
        if peek.ok and not peek.output:                                   # nothing claimable: done
            return finish(ctx, "No tasks available. Exiting loop.")
        data = ctx.verify.annotate(peek.output)                           # + why a verify failed
        if ctx.assign:
            step = report(ctx, ctx.assign.before(ctx.agent_id))           # ralph claims, injects
            if step.task is None:                                         # only tasks leased to others
                return finish(ctx, "No tasks available. Exiting loop.")
            data = step.prompt_data
        result = run_session(ctx, "/ralph-build", data)                   # claude -p "/ralph-build $PEEK_MD"
        if result.interrupted:
            record_session(ctx, result)                                   # progress record
            return EXIT_INTERRUPTED
        reason = ctx.night.fail_reason(result)                            # the spec's, or naming the timeout
        failed = []
        if ctx.assign:
            step = report(ctx, ctx.assign.after())                        # done -> archive, else fail
            if step.fail_output:
                say(step.fail_output)                                     # `failed <id>`, as s.15.5 passes it
            failed = [step.task] if step.outcome == "failed" else []
        failed += fail_active_tasks(ctx, reason=reason)                   # crash safety, before plan-status
        failed, reason = ctx.verify.after_session(failed, reason)         # verify gate: reopen, hold
        record_session(ctx, result, failed, reason)                       # issue 4+7: record, attempts, holds
        counts = ctx.task.call("plan-status", env=ctx.env)                # task plan-status
        if counts.ok and backlog.all_done(counts.output):                 # 0 open, 0 active
            return finish(ctx, "All tasks complete. Exiting loop.")
        ctx.night.settle(counts.output)                                   # exit 5/6/7, or wait out a usage limit
        done += 1
        loop_separator(ctx, done)


def parallel_build(ctx: RunContext) -> int:
    """Up to N sessions at once, one claimed task each, in git worktrees whose
    branches are merged back (lib/ralphkit/parallel.py owns it all; here: what it prints)."""
    opts = ctx.options
    reason = parallel.run(parallel.Setup(
        task=ctx.task, env=ctx.env, cwd=ctx.cwd, adapter=ctx.adapter, danger=opts.danger,
        model=ctx.model, parallel=opts.extra["parallel"], max_iterations=opts.max_iterations,
        merge=opts.extra["merge"], run_branch=ctx.branch, first_agent=ctx.agent_id, run=ctx.run,
        guard=ctx.guard, out=sys.stdout.buffer, say=say, warn=warn,
        on_first_interrupt=lambda: (say(), say(WAITING.format(agent=ctx.adapter.name))),
        stem=f"{ctx.run_stamp}-{os.getpid()}-build",
        timeouts=ctx.night.timeouts, kill_grace_s=ctx.night.cfg.kill_grace_s,  # issue 7, per session
        max_consecutive_failures=ctx.night.cfg.limits.max_consecutive_failures,  # breaker: exit 6
        scope_check=(lambda: check_scope(ctx)) if ctx.freeze else None,   # FREEZE_SCOPE: exit 4
        verify=ctx.verify))                                               # verify gate per worktree
    if reason == "interrupted":
        return EXIT_INTERRUPTED
    if reason == "max_iterations":
        return stop(ctx, f"Reached max iterations: {opts.max_iterations}")
    counts = ctx.task.call("plan-status", env=ctx.env)                   # task plan-status
    if counts.ok and backlog.all_done(counts.output):
        return stop(ctx, "All tasks complete. Exiting loop.")
    if ctx.freeze is not None and scope_run.target_met(ctx.freeze, ctx.task, ctx.env):
        return stop(ctx, "All frozen tasks complete. Exiting loop.")     # FREEZE_SCOPE: target met
    return stop(ctx, "No tasks available. Exiting loop.")                # left: failed or held


def fail_active_tasks(ctx: RunContext, agent: str | None = None, reason: str = FAIL_REASON,
                      passthrough: bool = True) -> list[str]:
    """s.15.5: release what the session left active for this agent; the slugs it failed.
    Also used on resume for a dead run's agent (its `fail` output not passed through)."""
    agent = agent or ctx.agent_id
    if not agent:
        return []
    active = ctx.task.call("list", "--status", "active", "--assignee", agent,
                           "--markdown", env=ctx.env)                    # task list --status active ...
    slugs = backlog.slugs(active.output)
    for slug in slugs:
        if passthrough:
            sys.stdout.flush()
            ctx.task.passthrough("fail", slug, "--reason", reason,        # task fail $id --reason "..."
                                 env=ctx.env, out=sys.stdout.buffer)
        else:
            ctx.task.call("fail", slug, "--reason", reason, env=ctx.env)
    return slugs


def release_dead_agent(ctx: RunContext, agent: str, reason: str) -> list[str]:
    """On resume after a crash: Fail what the dead run's agent still holds, then
    deregister it (quietly: these are not this run's calls of s.1's table)."""
    slugs = fail_active_tasks(ctx, agent, reason, passthrough=False)
    ctx.task.call("agent", "deregister", agent, env=ctx.env)
    return slugs


# ---------------------------------------------------------------------------- commands

def run_mode(mode: str, args: list[str]) -> int:
    """`ralph plan|build`: ralph.sh's order (s.5)."""
    guard = signals.Guard()
    guard.arm()                                                   # Ctrl+C before setup: exit 130, no traceback
    overnight_options.register()                                  # issue 7 flags
    opts = cli_args.parse(mode, args)                             # while [[ $# -gt 0 ]]; do case $1 ...
    if opts.help:
        say(cli_args.help_text(mode), end="")
        return EXIT_OK
    settings = load_settings(opts)                                # CLI > env > ralph.yml > defaults
    if settings is None:
        return EXIT_USAGE
    opts = cli_args.settle(opts, settings)
    task = task_calls.resolve(Path(SCRIPT_DIR), os.environ)      # TASK_SCRIPT=${RALPH_TASK_CMD:-...}
    ctx = RunContext(mode=mode, options=opts, guard=guard,
                     task=dataclasses.replace(task, critical=guard.deferred))
    if mode == "build":
        assign_mode.validate(settings, config.find_repo_root(ctx.cwd))   # template, before any write
    ctx.backend = backend.detect(ctx.env, ctx.cwd, Path(os.path.expanduser("~")))   # detect_backend
    choose_agent(ctx)                                             # --agent; MODEL=$(jq ...)
    if not workspace.specs_present(ctx.cwd):                      # [ -d specs ] && [ "$(ls -A specs)" ]
        say(NO_SPECS)                                             # [SH-COMPAT] on stdout
        return EXIT_USAGE
    if opts.dry_run:
        return dry_run(ctx)                                       # writes nothing
    code, error = EXIT_USAGE, None
    try:
        start_run(ctx, settings)                                  # lock (exit 3), state, resume
        if mode == "build":                                       # a resumed run keeps its mode
            ctx.assign = assign_mode.setup(ctx.options.extra, ctx.task.bound(ctx.env),
                                           config.find_repo_root(ctx.cwd), ctx.ralph_dir)
        session_setup(ctx)                                        # [SAFER] cleanup armed from here on
        freeze_scope(ctx)                                         # FREEZE_SCOPE: snapshot the backlog
        if mode == "build":                                       # the commit before the first session
            ctx.verify = verify.start(ctx.options.extra, ctx.task, ctx.env, ctx.cwd, ctx.run, warn)
        ctx.guard.raise_pending()                                 # a signal during an in-process call
        banner(ctx)
        night_cfg = overnight_options.resolve(ctx.options, ctx.run.state.options)  # lead's default rule
        ctx.night = overnight.Night(night_cfg, ctx.run, task=ctx.task, env=ctx.env,
                                    guard=ctx.guard, log_dir=ctx.cwd / ".ralph" / "logs",
                                    say=say, warn=warn)
        ctx.night.start()                                         # stale STOP, persisted limit wait
        code = plan_loop(ctx) if mode == "plan" else build_loop(ctx)
    except signals.Interrupted:                                   # trap 'exit 130' INT TERM
        code = EXIT_INTERRUPTED
    except errors.RalphError as err:                              # printed by main(), after the cleanup
        error, code, ctx.exit_reason = err, err.exit_code, str(err)
    finally:
        while not ctx.cleaned_up:                                 # trap cleanup EXIT
            try:
                exit_cleanup(ctx)
            except signals.Interrupted:                           # arrived just before it was armed
                code = EXIT_INTERRUPTED
        if ctx.guard.pending:                                     # a signal during the cleanup
            code = EXIT_INTERRUPTED
        if ctx.night is not None:
            ctx.night.finish()                                    # .ralph/STOP consumed
        try:                                                      # after deregistration,
            run_control.finish_run(ctx.run, code,                 # lock released last
                                   "interrupted" if code == EXIT_INTERRUPTED else ctx.exit_reason)
        except errors.EnvironmentFailure as err:
            error = error or err
    if error is not None:
        raise error
    return code


def load_settings(opts: cli_args.Options) -> config.Settings | None:
    """Ralph.yml at the git top level, the environment and the flags, validated before
    anything is written; each problem is its own `Error: ` line (exit 1)."""
    try:
        return config.load(cli_args.given_values(opts), os.environ,
                           config.find_repo_root(Path.cwd()))
    except errors.UsageError as err:
        for line in getattr(err, "problems", [str(err)]):
            warn(line if line.startswith("Error: ") else f"Error: {line}")
        return None


def choose_agent(ctx: RunContext) -> None:
    """The agent backend (`--agent`, `--agent-cmd`; unknown name: exit 1, nothing
    written), then the model: s.7's aliases for claude, the name as given for other CLIs."""
    extra = ctx.options.extra
    ctx.adapter = agents.get_adapter(extra.get("agent") or "claude", extra.get("agent_cmd"))
    ctx.model = None
    if ctx.options.model is not None:                             # s.7
        ctx.model = ctx.options.model if ctx.adapter.name != "claude" else backend.resolve_model(
            ctx.options.model, ctx.backend, backend.models_file(Path(SCRIPT_DIR)))
    ctx.adapter.argv("", model=ctx.model)                         # a --model this agent cannot take


# Settings a run does not persist: how this invocation runs, not what the run is.
NOT_PERSISTED = ("max_iterations", "dry_run", "resume", "scope_watch")


def start_run(ctx: RunContext, settings: config.Settings) -> None:
    """The run lock before the first write to the backlog (`agent register`), then the
    run state: a new run, or the interrupted one resumed with its counters and its persisted
    settings (they win over the flags given now; each mismatch is a stderr line)."""
    workspace.ralph_subdir(ctx.ralph_dir.parent, "runs")         # .ralph/ with its .gitignore (exit 8)
    options = {k: v for k, v in settings.explicit().items() if k not in NOT_PERSISTED}
    asked = settings.max_iterations if settings.source("max_iterations") != "default" else None
    with ctx.guard.deferred():                                    # a signal cannot split lock and state
        ctx.run = run_control.start_run(
            ctx.ralph_dir, ctx.mode, max_iterations=ctx.options.max_iterations,
            cli_max_iterations=asked, options=options, resume=ctx.options.resume,
            recover=lambda agent, reason: release_dead_agent(ctx, agent, reason))
    for note in ctx.run.notes:                                    # stderr: stdout stays s.10's
        warn(note)
    state = ctx.run.state
    ctx.options = cli_args.settle(ctx.options, {**state.options,
                                                "max_iterations": state.max_iterations})
    choose_agent(ctx)


def dry_run(ctx: RunContext) -> int:
    """Print what this run would do (the run it would start or resume, the task data,
    the prompt, the agent argv) and write nothing: no lock, state, log, agent registration,
    database change, .ralph/ or .gitignore. Exit 0."""
    ctx.branch = workspace.current_branch(ctx.env)                # BRANCH=$(git branch --show-current)
    banner(ctx)
    say("Dry run: nothing is written (no run lock, run state, log, agent registration "
        "or task change).")
    say(run_control.preview(ctx.ralph_dir, ctx.mode, ctx.options.resume))
    argv = ("peek", "-n", "10") if ctx.mode == "build" else ("list", "--all", "--markdown")
    data = ""
    if not ctx.task.embedded:
        say(f"Task data: not read: the task command {ctx.task.command} is not ralph.py's own "
            "and might write")
    else:
        read = backlog_readonly.call(list(argv), environ=ctx.env, cwd=ctx.cwd)
        if read.db_path is not None and not read.exists:
            say(f"Task data: none: {read.db_path} does not exist yet (the first task call "
                "creates it)")
        else:
            say(f"Task data (task {' '.join(argv)}, read-only):")
            say(read.output or "(empty)")
            data = read.output if read.ok else ""
            if ctx.mode == "build" and read.ok and not read.output:
                say("No tasks available: the run would stop here without starting the agent.")
    command = f"/ralph-{ctx.mode}"
    prompt = f"{command} {data}" if data else command
    if ctx.options.extra.get("assign"):                           # a claim would write
        say("Assignment mode: ralph would claim the first claimable task and send its "
            "anti-drift block instead of this prompt.")
    say("Prompt:")
    say(prompt)
    say("Agent argv:")
    say(shlex.join(ctx.adapter.argv(prompt, danger=ctx.options.danger, model=ctx.model)))
    return EXIT_OK


def task_command(args: list[str]) -> int:
    """`ralph task ...`: the task command with the rest of argv, exec style (s.2)."""
    task = task_calls.resolve(Path(SCRIPT_DIR), os.environ, in_process=False)
    if task.executable is None:
        warn(f"Error: task command '{task.command}' is not an executable file")
        return errors.EXIT_TASK_CMD_MISSING
    sys.stdout.flush()
    try:
        os.execv(task.executable, [task.command, *args])          # exec "$TASK_SCRIPT" "$@"
    except OSError as exc:
        warn(f"Error: cannot execute task command '{task.command}': {exc.strerror}")
        return errors.EXIT_TASK_CMD_MISSING


# The first argument (s.2). A later command is one line here. GENERAL_HELP stays byte-exact
# (s.2), so the commands ralph.sh did not have are documented in the README and their own --help.
COMMANDS = {
    "plan": lambda args: run_mode("plan", args),
    "build": lambda args: run_mode("build", args),
    "task": task_command,
    "install": lambda args: install.main(args),        # Claude Code skills + hooks (README)
    "status": lambda args: status.main(args, ralph_dir=workspace.ralph_dir(Path.cwd())),  # is a run alive
    "ctl": lambda args: ctl.main(args, ralph_dir=workspace.ralph_dir(Path.cwd())),  # pause | resume | stop
}


def main(argv: list[str] | None = None) -> None:
    """Console-script entry (`ralph = ralph:main`)."""
    args = sys.argv[1:] if argv is None else list(argv)
    first = args[0] if args else ""
    if first in ("", "--help", "-h"):
        say(GENERAL_HELP, end="")
        sys.exit(EXIT_OK)
    command = COMMANDS.get(first)
    if command is None:
        warn(f"Error: unknown command '{first}'\nRun 'ralph --help' for usage")
        sys.exit(EXIT_USAGE)
    try:
        code = command(args[1:])
    except errors.RalphError as err:                               # raise deep, catch once
        message = str(err)
        warn(message if message.startswith("Error: ") else f"Error: {message}")
        code = err.exit_code
    except (signals.Interrupted, KeyboardInterrupt):
        code = EXIT_INTERRUPTED
    except BrokenPipeError:                                        # `ralph build | head`: the reader left
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_USAGE)
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
