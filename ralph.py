#!/usr/bin/env python3
"""ralph.py: run an AI coding agent in a Ralph loop over a task backlog. A drop-in for ralph.sh
(same commands, flags, messages and exit codes; contract: docs/contract/ralph-cli.md).

    $ ./ralph.py plan                  # one planner session: study specs/, create tasks
    $ ./ralph.py plan -n 3 --completion-promise DONE
    $ ./ralph.py build -n 20 --model sonnet
    ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━
    Mode:   build
    ...
    No tasks available. Exiting loop.
    $ ./ralph.py task peek -n 10       # the task CLI ($RALPH_TASK_CMD, else scripts/task)

ralph.py prints and picks exit codes; everything else is one call into lib/ralphpy, with
the ralph.sh line it ports as a trailing comment.
"""
from __future__ import annotations

import os
import sys

SCRIPT_DIR = os.path.dirname(os.path.realpath(__file__))      # s.1: every symlink resolved


def _bootstrap() -> None:
    """Run from a checkout: lib/ first on sys.path, its bytecode cached; without PyYAML,
    re-exec with the checkout's .venv (so `./ralph.py build -n 5` works after `make setup`)."""
    lib = os.path.join(SCRIPT_DIR, "lib")
    if os.path.isdir(lib) and lib not in sys.path:
        sys.path.insert(0, lib)
        # Compiling the package at every start under PYTHONDONTWRITEBYTECODE (common in
        # containers) doubles a start's CPU: `ralph status`, `ralph ctl`, `ralph task`. As
        # scripts/task does (docs/decisions/0002), into lib/**/__pycache__ (git-ignored).
        sys.dont_write_bytecode = False
    import importlib.util
    if all(importlib.util.find_spec(name) for name in ("yaml",)):
        return
    venv = os.path.join(SCRIPT_DIR, ".venv")
    python = os.path.join(venv, "bin", "python")
    if os.path.exists(python) and os.path.realpath(sys.prefix) != os.path.realpath(venv):
        os.execv(python, [python, os.path.realpath(__file__), *sys.argv[1:]])


_bootstrap()

import dataclasses  # noqa: E402
import importlib  # noqa: E402
from pathlib import Path  # noqa: E402

from ralphpy import errors, signals, workspace  # noqa: E402
from ralphpy.agents import backend  # noqa: E402
from ralphpy.agents import claude_render as render  # noqa: E402
from ralphpy.assign import mode as assign_mode  # noqa: E402
from ralphpy.backlog import answers as backlog  # noqa: E402
from ralphpy.backlog import calls as task_calls  # noqa: E402
from ralphpy.config import flags, settings  # noqa: E402
from ralphpy.config.options import Options  # noqa: E402
from ralphpy.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE  # noqa: E402
from ralphpy.fleet import outage  # noqa: E402
from ralphpy.fleet import store as fleet_store  # noqa: E402
from ralphpy.loop import features, launch, preview, start  # noqa: E402
from ralphpy.loop.context import RunContext  # noqa: E402
from ralphpy.runs import lifecycle  # noqa: E402
from ralphpy.unattended import night_config  # noqa: E402
from ralphpy.unattended import night  # noqa: E402

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


def say(text: str = "", end: str = "\n") -> None:
    """Print and flush at once: a child may write to the same stdout next (s.1 ordering)."""
    sys.stdout.write(text + end)
    sys.stdout.flush()


def warn(text: str) -> None:
    sys.stdout.flush()
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def banner(ctx: RunContext) -> None:
    """s.10."""
    opts = ctx.options
    lines = [RULE,
             f"Mode:   {ctx.mode}",
             f"Prompt: /ralph-{ctx.mode}",
             f"Branch: {ctx.branch}",
             "Safe:   " + (f"NO ({ctx.adapter.danger_shown})" if opts.danger else "yes"),
             # s.10's backend is claude's (anthropic, bedrock); another agent names itself
             f"Backend: {ctx.backend if ctx.adapter.name == 'claude' else ctx.adapter.name}"]
    if (store := fleet_store.url(ctx.env)) is not None:      # a fleet's store, never its password
        lines.append(f"Tasks:  {fleet_store.shown(store)}")
    if ctx.agent_id:
        lines.append(f"Agent:  {ctx.agent_id}")
    if opts.model is not None:
        lines.append(f"Model:  {opts.model} ({ctx.model})")
    if opts.max_iterations > 0:
        unit = "iteration" if opts.max_iterations == 1 else "iterations"
        lines.append(f"Max:    {opts.max_iterations} {unit}")
    lines.append(RULE)
    say("\n".join(lines))


def store_retrying(ctx: RunContext, line: str) -> None:
    """The task CLI retries a lost server inside one of the run's calls: say so; a Ctrl+C
    meanwhile stops the run at once (nothing of the failed transaction was written)."""
    warn(line)
    if not ctx.guard.in_session:
        ctx.guard.raise_pending()


def loop_separator(ctx: RunContext, n: int) -> None:
    ctx.guard.raise_pending()             # a signal during the last in-process task call: stop here
    lifecycle.iteration_done(ctx.run, n)                    # the counter a resume continues
    say(f"\n\n======================== LOOP {n} ========================")  # printf "\n\nLOOP %d\n"


def stop(ctx: RunContext, line: str, code: int = EXIT_OK) -> int:
    """Print the run's last line; it is also the run's exit reason (run state, ralph status)."""
    ctx.exit_reason = line.strip()
    say(line)
    return code


def finish(ctx: RunContext, line: str) -> int:
    """An end of the build loop: ralph.sh's line, unless a feature has more to say
    (assignment mode never ends with a silent "All tasks complete" while tasks are held)."""
    first, *more = ctx.features.end_lines([line])
    code = stop(ctx, first)
    for text in more:
        say(text)
    return code


# ---------------------------------------------------------------------------- the loops

def plan_loop(ctx: RunContext) -> int:
    """s.14."""
    limit = ctx.options.max_iterations
    for i in range(ctx.run.state.iteration + 1, limit + 1):               # a resumed run goes on
        if (line := ctx.features.before_session()) is not None:          # ralph ctl stop, SIGHUP; FREEZE_SCOPE
            return stop(ctx, line)
        dag = ctx.task.call("list", "--all", "--markdown", env=ctx.env)   # DAG=$(task list --all --markdown)
        plan = features.Prompt(dag.output)
        result = launch.run_session(ctx, "/ralph-plan", plan)             # claude -p "/ralph-plan $DAG"
        launch.record_session(ctx, result)                                # progress record
        if result.interrupted:
            return EXIT_INTERRUPTED
        if result.summary is not None and render.promise_received(
                result.summary, ctx.options.completion_promise):          # grep "<promise>$PROMISE</promise>"
            return stop(ctx, "\nPlan complete: completion promise received.")
        ctx.night.settle(last=i == limit)                                 # exit 5/6/7, or wait out a usage limit
        loop_separator(ctx, i)
    return stop(ctx, f"Reached max iterations: {limit}")                  # [SH-COMPAT] exit 0


def build_loop(ctx: RunContext) -> int:
    """s.15. The features (unattended checks, scope freeze, assignment mode, the verify gate)
    plug in through ctx.features; with none on, this is ralph.sh's loop."""
    if ctx.options.parallel > 1:                                          # --parallel N (build)
        return parallel_build(ctx)
    limit, done = ctx.options.max_iterations, ctx.run.state.iteration   # a resumed run goes on
    ctx.features.start()                                                  # assign: its notice, on stderr
    while True:
        if limit > 0 and done >= limit:
            return stop(ctx, f"Reached max iterations: {limit}")          # [SH-COMPAT] exit 0
        if (line := ctx.features.before_session()) is not None:          # ralph ctl stop, SIGHUP, frozen
            return stop(ctx, line)                                        # scope done; assign: inbox
        peek = ctx.task.call("peek", "-n", "10", env=ctx.env)             # PEEK_MD=$(task peek -n 10)
        if peek.ok and not peek.output:                                   # nothing claimable: done
            return finish(ctx, "No tasks available. Exiting loop.")
        prompt = ctx.features.prompt(features.Prompt(peek.output))        # assign: ralph claims, injects
        if prompt is None and not peek.ok:                                # no claim, backlog unreadable:
            raise task_calls.backlog_unreadable(peek)                     # exit 8, not "no tasks"
        if prompt is None:                                                # only tasks leased to others
            return finish(ctx, "No tasks available. Exiting loop.")
        result = launch.run_session(ctx, "/ralph-build", prompt)          # claude -p "/ralph-build $PEEK_MD"
        if result.interrupted:
            launch.record_session(ctx, result)                            # progress record
            return EXIT_INTERRUPTED
        reason = ctx.night.fail_reason(result)                            # the spec's, or naming the timeout
        failed = ctx.features.after_session(result)                       # assign: done -> archive, else fail
        attempt = ctx.night.no_attempt(result) is None                    # [SAFER] a usage limit is none
        failed += launch.fail_active_tasks(ctx, reason=reason,            # crash safety, before plan-status:
                                           attempt=attempt)               # fail, or _release after no attempt
        reason = ctx.features.fail_reason(reason)                         # verify: why a task was reopened
        launch.record_session(ctx, result, failed, reason)                # record, attempts, holds
        counts = ctx.task.call("plan-status", env=ctx.env)                # task plan-status
        if counts.ok and backlog.all_done(counts.output):                 # 0 open, 0 active
            return finish(ctx, "All tasks complete. Exiting loop.")
        ctx.night.settle(counts.output, last=0 < limit <= done + 1)      # exit 5/6/7, or wait out a usage limit
        done += 1
        loop_separator(ctx, done)


def parallel_build(ctx: RunContext) -> int:
    """Up to N sessions at once, one claimed task each, in git worktrees whose branches are
    merged back (lib/ralphpy/parallel owns it all; here: how it ends)."""
    scope = ctx.features.get(features.ScopeFreeze)                       # FREEZE_SCOPE: exit 4
    reason = launch.run_parallel(ctx, scope.check if scope else None)
    if reason == "interrupted":
        return EXIT_INTERRUPTED
    if reason == "stopped_by_request":                                   # ralph ctl stop, SIGHUP
        return stop(ctx, ctx.night.stop_line)
    if reason == "max_iterations":
        return stop(ctx, f"Reached max iterations: {ctx.options.max_iterations}")
    counts = ctx.task.call("plan-status", env=ctx.env)                   # task plan-status
    if counts.ok and backlog.all_done(counts.output):
        return finish(ctx, "All tasks complete. Exiting loop.")          # or: N held
    if scope is not None and scope.target_met():
        return stop(ctx, features.FROZEN_DONE)                            # FREEZE_SCOPE: target met
    return finish(ctx, "No tasks available. Exiting loop.")              # left: failed or held


# ---------------------------------------------------------------------------- commands

def run_mode(mode: str, args: list[str]) -> int:
    """`ralph plan|build`: ralph.sh's order (s.5)."""
    guard = signals.Guard()
    guard.arm()                                                   # Ctrl+C before setup: exit 130, no traceback
    given = flags.parse(mode, args)                               # while [[ $# -gt 0 ]]; do case $1 ...
    if given.help:
        say(flags.help_text(mode), end="")
        return EXIT_OK
    opts = load_options(mode, given)                              # CLI > env > ralph.yml > defaults
    if opts is None:
        return EXIT_USAGE
    start.task_source(opts, warn)                                 # --tasks: tool missing: exit 1
    task = task_calls.resolve(Path(SCRIPT_DIR), os.environ)      # TASK_SCRIPT=${RALPH_TASK_CMD:-...}
    ctx = RunContext(mode=mode, options=opts, guard=guard, script_dir=Path(SCRIPT_DIR),
                     say=say, warn=warn, stdout=sys.stdout, task=task)
    ctx.task = dataclasses.replace(task, critical=guard.deferred,  # a lost store: waited out
                                   notice=lambda line: store_retrying(ctx, line),
                                   store_lost=outage.Waiter(guard, warn, ctx.record))
    if mode == "build":
        assign_mode.validate(opts, settings.find_repo_root(ctx.cwd))   # template, before any write
    ctx.backend = backend.detect(ctx.env, ctx.cwd, Path(os.path.expanduser("~")))   # detect_backend
    start.choose_agent(ctx)                                       # --agent; MODEL=$(jq ...)
    if not workspace.specs_present(ctx.cwd):                      # [ -d specs ] && [ "$(ls -A specs)" ]
        say(NO_SPECS)                                             # [SH-COMPAT] on stdout
        return EXIT_USAGE
    start.check_checkout(ctx)                                     # --parallel, --sync: a branch (exit 1)
    if opts.dry_run:                                              # writes nothing
        ctx.branch = workspace.current_branch(ctx.env)            # BRANCH=$(git branch --show-current)
        banner(ctx)
        for line in preview.lines(ctx):
            say(line)
        return EXIT_OK
    code, error = EXIT_USAGE, None
    try:
        start.start_run(ctx)                                      # lock (exit 3), state, resume
        assign = features.assignment(ctx) if mode == "build" else None   # a resumed run keeps its mode
        start.session_setup(ctx)                                  # [SAFER] cleanup armed from here on
        scope = features.scope_freeze(ctx)                        # FREEZE_SCOPE: snapshot the backlog
        ctx.guard.raise_pending()                                 # a signal during an in-process call
        banner(ctx)
        night_cfg = night_config.resolve(ctx.options, ctx.run.state.options)  # breakers' default rule
        ctx.night = night.Night(night_cfg, ctx.run, task=ctx.task, env=ctx.env, guard=ctx.guard,
                          log_dir=ctx.cwd / ".ralph" / "logs", say=say, warn=warn)
        ctx.features = features.Features(features.Unattended(ctx.night), scope,
                                         assign or features.prompt_template(ctx),
                                         features.verification(ctx),    # --verify: reopen, hold
                                         features.sync(ctx))            # --sync: rebase, push
        ctx.night.start()                                         # stale STOP, persisted limit wait
        code = plan_loop(ctx) if mode == "plan" else build_loop(ctx)
        if code != EXIT_INTERRUPTED:
            ctx.features.end()                                    # --sync: push what is left
    except signals.Interrupted:                                   # trap 'exit 130' INT TERM
        code = EXIT_INTERRUPTED
    except errors.RalphError as err:                              # printed by main(), after the cleanup
        error, code, ctx.exit_reason = err, err.exit_code, str(err)
    finally:
        while not ctx.cleaned_up:                                 # trap cleanup EXIT
            try:
                start.exit_cleanup(ctx)
            except signals.Interrupted:                           # arrived just before it was armed
                code = EXIT_INTERRUPTED
        if ctx.guard.pending:                                     # a signal during the cleanup
            code = EXIT_INTERRUPTED
        if ctx.night is not None:
            ctx.night.finish()                                    # .ralph/STOP consumed
        try:                                                      # after deregistration,
            lifecycle.finish_run(ctx.run, code,                   # lock released last
                                 "interrupted" if code == EXIT_INTERRUPTED else ctx.exit_reason)
        except errors.EnvironmentFailure as err:
            error = error or err
    if error is not None:
        raise error
    return code


def load_options(mode: str, given: flags.CommandLine) -> Options | None:
    """ralph.yml at the git top level, the environment and the flags, validated before
    anything is written; each problem is its own `Error: ` line (exit 1)."""
    try:
        return settings.load(mode, given.values, os.environ, settings.find_repo_root(Path.cwd()))
    except errors.UsageError as err:
        problems = getattr(err, "problems", None)
        if problems is None:
            raise                                                 # s.3's plan -n 0: main() prints it
        for line in problems:
            warn(line if line.startswith("Error: ") else f"Error: {line}")
        return None


def task_command(args: list[str]) -> int:
    """`ralph task ...`: the task command with the rest of argv, exec style (s.2), on the store
    or source a run started here would use: the `tasks` setting (RALPH_TASKS, then ralph.yml)."""
    opts = load_options("build", flags.parse("build", []))          # ralph.yml's tasks:
    if opts is None:
        return EXIT_USAGE
    start.task_source(opts, warn)                                 # tool missing, bad URL: exit 1
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
def library_command(name: str, *, in_ralph_dir: bool = True):
    """A command ralph.sh did not have (lib/ralphpy/commands/); its module is imported only
    when it runs, so `ralph plan`, `build` and `--help` do not pay for it."""
    def run(args: list[str]) -> int:
        module = importlib.import_module(f"ralphpy.commands.{name}")
        if not in_ralph_dir:
            return module.main(args)
        return module.main(args, ralph_dir=workspace.ralph_dir(Path.cwd()))
    return run


COMMANDS = {
    "plan": lambda args: run_mode("plan", args),
    "build": lambda args: run_mode("build", args),
    "task": task_command,
    "install": library_command("install", in_ralph_dir=False),   # Claude Code skills + hooks
    "status": library_command("status"),                          # is a run alive
    "ctl": library_command("ctl"),                                # pause | resume | stop
    "report": library_command("report"),                          # what a run did
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
