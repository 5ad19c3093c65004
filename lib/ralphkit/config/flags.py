"""Owns the command line of `ralph plan` and `ralph build`: the flag table, parsing it by hand
into an `Options` value, and the exact help texts (ralph-cli.md s.3, s.4). Knows nothing of
the loop, the backend or the task CLI, and never prints: a bad flag raises UsageError with
ralph.sh's exact message, `--help` comes back as `Options.help`.

Later features add a flag with `add_flag(Flag(...))`: its help lines go just before the
`--help, -h` line (s.4), its value lands in `Options.extra[dest]` (or in the `Options` field
of that name when there is one)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Mapping

from ralphkit.errors import UsageError

MODES = ("plan", "build")
DEFAULT_PROMISE = "COMPLETE"

# s.4, exactly. The (default: ...) lines start with 29 spaces, the promise one with 30.
_HELP_HEAD = {
    "plan": (
        "Usage: ralph plan [options]\n"
        "\n"
        "Options:\n"
        "  --max-iterations N, -n N   Limit loop iterations\n"
        "                             (default: 1)\n"
        "  --model <alias>, -m <alias> Select model by alias (see models.json)\n"
        "  --danger                    Enable --dangerously-skip-permissions\n"
        "  --completion-promise TEXT   Stop early on <promise>TEXT</promise>\n"
        "                              (default: COMPLETE)\n"
    ),
    "build": (
        "Usage: ralph build [options]\n"
        "\n"
        "Options:\n"
        "  --max-iterations N, -n N   Limit loop iterations\n"
        "                             (default: unlimited)\n"
        "  --model <alias>, -m <alias> Select model by alias (see models.json)\n"
        "  --danger                    Enable --dangerously-skip-permissions\n"
    ),
}
_HELP_TAIL = "  --help, -h                  Show this help\n"


@dataclass
class Options:
    """What the flags of one `ralph plan|build` invocation say, defaults applied."""

    mode: str
    max_iterations: int = 0          # 0 = unlimited (build); plan defaults to 1
    model: str | None = None         # the alias as given; resolution is backend.resolve_model
    danger: bool = False
    completion_promise: str = DEFAULT_PROMISE
    help: bool = False
    dry_run: bool = False            # print what would happen, write nothing
    resume: bool = False             # continue the newest unfinished run
    extra: dict[str, object] = field(default_factory=dict)   # flags added by later features
    given: set[str] = field(default_factory=set)             # dests given on the command line


@dataclass(frozen=True)
class Flag:
    """One flag. `value_error` is None for a switch; otherwise the flag takes the next
    argument, and a missing, empty or `-`-leading value (or one `convert` rejects with
    ValueError) raises UsageError(value_error)."""

    names: tuple[str, ...]
    dest: str
    value_error: str | None = None
    convert: Callable[[str], object] = str
    modes: tuple[str, ...] = MODES
    help_lines: tuple[str, ...] = ()
    setting: bool = True             # False: a flag without a row in config's table (not merged)


def _decimal(value: str) -> int:
    if not re.fullmatch(r"[0-9]+", value):      # [SAFER] ralph.sh let `-n abc` reach bash arithmetic
        raise ValueError(value)
    return int(value)


_FLAGS: list[Flag] = [
    Flag(("--max-iterations", "-n"), "max_iterations",
         "Error: --max-iterations requires a number", _decimal),
    Flag(("--model", "-m"), "model",
         "Error: --model requires an alias (e.g. opus-4.5, sonnet, haiku)"),
    Flag(("--danger",), "danger"),
    Flag(("--completion-promise",), "completion_promise",
         "Error: --completion-promise requires a text", modes=("plan",)),
    # issue 4; s.4: lines of added options go just before `--help, -h`.
    Flag(("--dry-run",), "dry_run",
         help_lines=("  --dry-run                   Show what would run; write nothing",)),
    Flag(("--resume",), "resume",
         help_lines=("  --resume                    Continue the last unfinished run",)),
    # Scope freeze; also FREEZE_SCOPE / STOP_ON_SCOPE_CHANGE and ralph.yml (config.py).
    Flag(("--freeze-scope",), "freeze_scope",
         help_lines=("  --freeze-scope              Run only the tasks that exist at start",)),
    Flag(("--stop-on-scope-change",), "stop_on_scope_change",
         help_lines=("  --stop-on-scope-change      Stop (exit 4) when the frozen scope changes",)),
    # assignment mode and fresh context (config `assign`, `continue_session`)
    Flag(("--assign",), "assign", modes=("build",),
         help_lines=("  --assign                    Claim one task per session and inject it",)),
    Flag(("--continue-session",), "continue_session",
         help_lines=("  --continue-session          Resume the last agent conversation",
                     "                              (unless .ralph/FRESH_START exists)")),
    # agent backends (agents.py) and parallel sessions in worktrees (parallel.py)
    Flag(("--agent",), "agent", "Error: --agent requires a name (e.g. claude, codex, pi)",
         help_lines=("  --agent NAME                Agent CLI: claude (default), amp, codex,",
                     "                              command, gemini, opencode, pi")),
    Flag(("--agent-cmd",), "agent_cmd", "Error: --agent-cmd requires a command",
         help_lines=("  --agent-cmd CMD             Agent program; with --agent command, the",
                     "                              command ({prompt} marks the prompt)")),
    Flag(("--parallel",), "parallel", "Error: --parallel requires a number", _decimal,
         modes=("build",),
         help_lines=("  --parallel N                Up to N sessions at once, in git worktrees",)),
    Flag(("--merge",), "merge", "Error: --merge requires rebase, ff or none", modes=("build",),
         help_lines=("  --merge rebase|ff|none      Merge a finished task's branch (--parallel)",)),
    # verified completion (lib/ralphkit/verify, docs/verify.md)
    Flag(("--verify",), "verify", "Error: --verify requires a command", modes=("build",),
         help_lines=("  --verify CMD                Run CMD after a task is marked done;",
                     "                              a failure reopens the task")),
]


def add_flag(flag: Flag) -> None:
    """Register a flag of a later feature (its help lines print before `--help, -h`)."""
    _FLAGS.append(flag)


def help_text(mode: str) -> str:
    """The mode help of s.4, plus the lines of flags added by later features."""
    # The four flags of s.4 carry no help_lines: their lines are in _HELP_HEAD, never change.
    extra = "".join(line + "\n" for flag in _FLAGS if mode in flag.modes
                    for line in flag.help_lines)
    return _HELP_HEAD[mode] + extra + _HELP_TAIL


def parse(mode: str, args: list[str]) -> Options:
    """Read the flags after `plan`/`build` left to right (s.3); the last of a repeated flag wins."""
    opts = Options(mode=mode)
    explicit_limit = None
    by_name = {name: flag for flag in _FLAGS if mode in flag.modes for name in flag.names}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("--help", "-h"):
            opts.help = True                     # later arguments are not examined
            return opts
        flag = by_name.get(arg)
        if flag is None:
            raise UsageError(f"Error: Unknown option '{arg}'\nRun 'ralph {mode} --help' for usage")
        if flag.value_error is None:
            value: object = True
        else:
            raw = args[i + 1] if i + 1 < len(args) else ""
            if not raw or raw.startswith("-"):
                raise UsageError(flag.value_error)
            try:
                value = flag.convert(raw)
            except ValueError:
                raise UsageError(flag.value_error) from None
            i += 1
        if flag.dest == "max_iterations":
            explicit_limit = value
        opts.given.add(flag.dest)
        if flag.dest in Options.__dataclass_fields__:
            setattr(opts, flag.dest, value)
        else:
            opts.extra[flag.dest] = value
        i += 1
    if explicit_limit is None:
        opts.max_iterations = 1 if mode == "plan" else 0
    elif mode == "plan" and explicit_limit == 0:
        raise UsageError("Error: plan mode requires at least 1 iteration (-n 0 is not allowed)")
    return opts


def given_values(opts: Options) -> dict[str, object]:
    """What the command line set explicitly, by setting name (config.load's cli_values)."""
    flag_only = {flag.dest for flag in _FLAGS if not flag.setting}
    return {dest: (getattr(opts, dest) if dest in Options.__dataclass_fields__
                   else opts.extra[dest]) for dest in opts.given if dest not in flag_only}


def settle(opts: Options, settings: Mapping[str, object]) -> Options:
    """Options with the merged settings applied (CLI > environment > ralph.yml > defaults):
    the s.3 fields and every other setting in `extra`. The mode default of the iteration
    limit applies when no source set it; plan mode still refuses 0 with s.3's message."""
    for name, value in settings.items():
        if name in ("help", "given", "mode", "extra"):
            continue
        if name in Options.__dataclass_fields__:
            setattr(opts, name, value)
        else:
            opts.extra[name] = value
    if settings.get("max_iterations") is None:
        opts.max_iterations = 1 if opts.mode == "plan" else 0
    elif opts.mode == "plan" and opts.max_iterations == 0:
        raise UsageError("Error: plan mode requires at least 1 iteration (-n 0 is not allowed)")
    return opts


__all__ = ["Options", "Flag", "add_flag", "help_text", "parse", "given_values", "settle"]
