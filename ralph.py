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
    """Run from a checkout: lib/ first on sys.path, its bytecode cached; re-exec with the
    checkout's .venv whenever it exists, so one `make setup` serves every feature (PyYAML,
    psycopg for a PostgreSQL store) whichever python3 runs `./ralph.py`."""
    lib = os.path.join(SCRIPT_DIR, "lib")
    if os.path.isdir(lib) and lib not in sys.path:
        sys.path.insert(0, lib)
        # Compiling the package at every start under PYTHONDONTWRITEBYTECODE (common in
        # containers) doubles a start's CPU: `ralph status`, `ralph ctl`, `ralph task`. As
        # scripts/task does (docs/decisions/0002), into lib/**/__pycache__ (git-ignored).
        sys.dont_write_bytecode = False
    venv = os.path.join(SCRIPT_DIR, ".venv")
    python = os.path.join(venv, "bin", "python")
    if os.path.exists(python) and os.path.realpath(sys.prefix) != os.path.realpath(venv):
        os.execv(python, [python, os.path.realpath(__file__), *sys.argv[1:]])


_bootstrap()

import dataclasses  # noqa: E402
import importlib  # noqa: E402
from pathlib import Path  # noqa: E402

from ralphpy import closed_stdout, errors, inert, signals, workspace  # noqa: E402
from ralphpy.agents import backend  # noqa: E402
from ralphpy.agents import claude_render  # noqa: E402
from ralphpy.assign import mode as assign_mode  # noqa: E402
from ralphpy.backlog import answers  # noqa: E402
from ralphpy.backlog import calls as task_calls  # noqa: E402
from ralphpy.config import flags, settings  # noqa: E402
from ralphpy.config.options import Options  # noqa: E402
from ralphpy.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE  # noqa: E402
from ralphpy.fleet import outage  # noqa: E402
from ralphpy.fleet import store as fleet_store  # noqa: E402
from ralphpy.loop import features, launch, preflight, preview, sessions, start  # noqa: E402
from ralphpy.loop.context import RunContext  # noqa: E402
from ralphpy.runlife import lifecycle  # noqa: E402
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
STDOUT_CLOSED = ("Stopped: ralph's stdout was closed (its reader exited); "
                 "ending the run as Ctrl+C does (exit 130)")


def say(text: str = "", end: str = "\n") -> None:
    """Print and flush at once: a child may write to the same stdout next (s.1 ordering).
    A title or reason in the line is shown, its escape sequences never obeyed."""
    sys.stdout.write(inert.shown(text, lines=True) + end)
    sys.stdout.flush()


def warn(text: str) -> None:
    sys.stdout.flush()
    sys.stderr.write(inert.shown(text, lines=True) + "\n")
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
    if ctx.sandbox is not None:                              # --sandbox (docs/sandbox.md)
        lines.append(f"Sandbox: {ctx.sandbox.shown}")
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
        session = launch.run_session(ctx, "/ralph-plan", plan)            # claude -p "/ralph-plan $DAG"
        launch.record_session(ctx, session)                               # progress record
        if session.result.interrupted:
            return EXIT_INTERRUPTED
        if session.result.summary is not None and claude_render.promise_received(
                session.result.summary, ctx.options.completion_promise):  # grep "<promise>$PROMISE</promise>"
            return stop(ctx, "\nPlan complete: completion promise received.")
        ctx.features.settle(session, None, last=i == limit)               # exit 5/6/7, or wait out a usage limit
        loop_separator(ctx, i)
    return stop(ctx, f"Reached max iterations: {limit}")                  # [SH-COMPAT] exit 0


def build_loop(ctx: RunContext) -> int:
    """s.15. The features (unattended checks, scope freeze, assignment mode, the verify gate)
    plug in through ctx.features; with none on, this is ralph.sh's loop."""
    if ctx.options.parallel > 1:                                          # --parallel N (build)
        return parallel_build(ctx)
    limit, done = ctx.options.max_iterations, ctx.run.state.iteration   # a resumed run goes on
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
        session = launch.run_session(ctx, "/ralph-build", prompt)         # claude -p "/ralph-build $PEEK_MD"
        if session.result.interrupted:                                    # then assign's check, verify, --sync
            launch.record_session(ctx, session)                           # progress record; the next run
            return EXIT_INTERRUPTED                                       # settles its task
        sessions.give_back_active(ctx, session)                           # crash safety, before plan-status:
                                                                          # fail, or _release after no attempt
        launch.record_session(ctx, session)                               # record, attempts, holds
        counts = ctx.task.call("plan-status", env=ctx.env)                # task plan-status
        if counts.ok and answers.all_done(counts.output):                 # 0 open, 0 active
            return finish(ctx, "All tasks complete. Exiting loop.")
        ctx.features.settle(session, counts.output,                       # exit 5/6/7, or wait out a usage limit
                            last=0 < limit <= done + 1)
        done += 1
        loop_separator(ctx, done)


def parallel_build(ctx: RunContext) -> int:
    """Up to N sessions at once, one claimed task each, in git worktrees whose branches are
    merged back (loop/parallel_loop.py runs them through the same session lifecycle and
    features; here: how it ends)."""
    scope = ctx.features.get(features.ScopeFreeze)                       # FREEZE_SCOPE: exit 4
    reason, line = launch.run_parallel(ctx)
    if reason == "interrupted":
        return EXIT_INTERRUPTED
    if reason == features.STOPPED_BY_REQUEST:                            # ralph ctl stop, SIGHUP
        return stop(ctx, line)
    if reason == "max_iterations":
        return stop(ctx, f"Reached max iterations: {ctx.options.max_iterations}")
    counts = ctx.task.call("plan-status", env=ctx.env)                   # task plan-status
    if counts.ok and answers.all_done(counts.output):
        return finish(ctx, "All tasks complete. Exiting loop.")          # or: N held
    if scope is not None and scope.target_met():
        return stop(ctx, features.FROZEN_DONE)                            # FREEZE_SCOPE: target met
    return finish(ctx, "No tasks available. Exiting loop.")              # left: failed or held


# ---------------------------------------------------------------------------- commands

def run_mode(mode: str, args: list[str]) -> int:
    """`ralph plan|build`: ralph.sh's order (s.5)."""
    guard = signals.Guard()
    guard.arm()                                                   # Ctrl+C before setup: exit 130, no traceback
    sys.stdout = closed_stdout.Stdout(sys.stdout, guard,          # [SAFER] `| head -1`: as Ctrl+C
                                      lambda: warn(STDOUT_CLOSED))
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
    start.choose_sandbox(ctx)                                     # [SAFER] --sandbox: it starts, or exit 1
    if not preflight.specs_found(ctx):                            # [ -d specs ] && [ "$(ls -A specs)" ]
        say(NO_SPECS)                                             # [SH-COMPAT] on stdout
        return EXIT_USAGE
    start.check_checkout(ctx)                                     # --parallel, --sync: a branch (exit 1)
    if opts.dry_run:                                              # writes nothing
        ctx.branch = workspace.current_branch(ctx.env)            # BRANCH=$(git branch --show-current)
        banner(ctx)
        for line in preview.lines(ctx):
            say(line)
        return EXIT_OK
    preflight.check(ctx)                                          # [SAFER] agent runnable, backlog readable
    code, error = EXIT_USAGE, None
    try:
        start.start_run(ctx)                                      # lock (exit 3), state, resume
        ctx.assign = features.assignment(ctx) if mode == "build" else None   # a resumed run keeps its mode
        start.session_setup(ctx)                                  # [SAFER] cleanup armed from here on
        ctx.limits = night.resolve(ctx.options, ctx.run.state.options)  # breakers' default rule
        ctx.features = features.for_run(ctx)                      # FREEZE_SCOPE: snapshot; verify, sync
        ctx.guard.raise_pending()                                 # a signal during an in-process call
        banner(ctx)
        ctx.features.start()                                      # stale STOP, persisted limit wait; assign's notice
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
        if ctx.features is not None:
            ctx.features.finish()                                 # .ralph/STOP consumed
        try:                                                      # after deregistration,
            lifecycle.finish_run(ctx.run, code,                   # lock released last
                                 "interrupted" if code == EXIT_INTERRUPTED else ctx.exit_reason)
        except errors.EnvironmentFailure as err:
            error = error or err
    if error is not None:
        raise error
    return code


def load_options(mode: str, given: flags.CommandLine,
                 only: frozenset[str] | None = None) -> Options | None:
    """ralph.yml at the git top level, the environment and the flags, validated before
    anything is written; each problem is its own `Error: ` line (exit 1). only: the settings
    the command uses (the others, and their problems, are left out)."""
    try:
        return settings.load(mode, given.values, os.environ, settings.find_repo_root(Path.cwd()),
                             only)
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
    # ralph.yml's `tasks` and the store's connect bound alone: a typo elsewhere is build's
    opts = load_options("build", flags.parse("build", []),
                        only=frozenset({"tasks", "store_connect_timeout"}))
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


def answer_command(args: list[str]) -> int:
    """`ralph answer <id> "<answer>"` (docs/questions.md), on the store or source `ralph task`
    uses; the settings are read only once the arguments are good."""
    def task():
        opts = load_options("build", flags.parse("build", []),
                            only=frozenset({"tasks", "store_connect_timeout"}))
        if opts is None:
            return None
        start.task_source(opts, warn)                             # tool missing, bad URL: exit 1
        return task_calls.resolve(Path(SCRIPT_DIR), os.environ)
    from ralphpy.commands import answer
    return answer.main(args, ralph_dir=workspace.ralph_dir(Path.cwd()), task=task,
                       environ=os.environ)


# The first argument (s.2). A later command is one line here and one in HELP_LINES.
# GENERAL_HELP stays byte-exact (s.2); `ralph help` lists every command.
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
    "report": library_command("run_report"),                      # what a run did
    "doctor": library_command("doctor", in_ralph_dir=False),      # what to fix before a run
    "answer": answer_command,                                     # a question an agent asked
}


HELP_LINES = {
    "plan": "Run the planner (study specs, create tasks)",
    "build": "Run the builder (claim and implement tasks)",
    "task": "Interact with the task backlog ('ralph task --help' lists its commands)",
    "install": "Install the Claude Code skills and hooks (./.claude/, or --user)",
    "status": "Show this backlog's run: running, paused or ended, its task, last outcomes",
    "report": "Show what a run did: tasks, outcomes, cost, time (--md, --json, --html FILE)",
    "ctl": "Pause, resume or stop a running loop from another shell",
    "doctor": "Check the machine and this repository before a run: what to fix, one line each",
    "answer": "Answer the question an agent asked on a task; the task goes on with it",
    "help": "Show this list ('ralph help <command>' shows a command's options)",
}
HELD_TASKS = """\
Held tasks:
  A task held for review (failed verification, a tamper finding, too many attempts, no
  progress) is not claimed again until it is released; 'ralph task show <id>' says why.
  Release it with: ralph task _unhold <id>
"""


def help_text() -> str:
    """`ralph help`: every command, one line each (a command without its line still shows)."""
    width = max(map(len, COMMANDS))
    rows = "".join(f"  {name:<{width}}  {HELP_LINES.get(name, '')}".rstrip() + "\n"
                   for name in COMMANDS)
    return (f"Usage: ralph <command> [options]\n\nCommands:\n{rows}\n{HELD_TASKS}\n"
            "Run 'ralph <command> --help' for command-specific options.\n")


def help_command(args: list[str]) -> int:
    """`ralph help [<command>]`: the list, or that command's own --help."""
    if args in ([], ["--help"], ["-h"]):
        say(help_text(), end="")
        return EXIT_OK
    if len(args) > 1 or args[0] not in COMMANDS or args[0] == "help":
        warn(f"Error: unknown command '{' '.join(args)}'\nRun 'ralph help' for every command")
        return EXIT_USAGE
    return COMMANDS[args[0]](["--help"])


COMMANDS["help"] = help_command                                   # every command, one line each


def main(argv: list[str] | None = None) -> None:
    """Console-script entry (`ralph = ralph:main`)."""
    args = sys.argv[1:] if argv is None else list(argv)
    first = args[0] if args else ""
    if first in ("", "--help", "-h"):
        say(GENERAL_HELP, end="")                                  # s.2: stdout byte for byte
        more = ", ".join(name for name in COMMANDS if name not in ("plan", "build", "task", "help"))
        warn(f"More commands ({more}): run 'ralph help'")          # [SAFER] on stderr
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
    if code == EXIT_INTERRUPTED and signals.terminated():          # [SAFER] s.16 prints nothing
        warn(f"Terminated: SIGTERM stopped the run (exit 130); "   # for SIGTERM: say why it ended
             f"'ralph {first} --resume' continues it")
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
