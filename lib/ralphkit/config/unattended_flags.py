"""Owns the settings of issue 7 for one run: the flags (`--session-timeout`, `--idle-timeout`,
`--kill-grace`, `--max-attempts`, `--max-idle-sessions`, `--max-consecutive-failures`,
`--max-cost`, `--max-runtime`, `--max-limit-wait`, `--limit-wait-margin`,
`--limit-default-wait`), their merge with ralph.yml through config's table, and the lead's
default rule: the breakers and --max-attempts take the issue's defaults (3, 5, 3) only in a
build run without an iteration limit; with `-n N` (and in plan mode) they are off unless given
explicitly. Knows nothing of acting on them (overnight.py, session.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ralphkit.config import flags as cli_args
from ralphkit.config import settings as config
from ralphkit.unattended import guards
from ralphkit.config.durations import parse_duration

_DURATION = "requires a duration (e.g. 90s, 15m, 1h)"
# (flag, setting, kind, modes, help line): the help lines go just before `--help, -h` (s.4).
_FLAGS = (
    ("--session-timeout", "session_timeout", "duration", cli_args.MODES,
     "  --session-timeout DUR       End a session after DUR (default: 60m; 0: off)"),
    ("--idle-timeout", "idle_timeout", "duration", cli_args.MODES,
     "  --idle-timeout DUR          End a session silent for DUR (default: 15m; 0: off)"),
    ("--kill-grace", "kill_grace", "duration", cli_args.MODES,
     "  --kill-grace DUR            SIGTERM to SIGKILL after a timeout (default: 10s)"),
    ("--max-attempts", "max_attempts", "int", ("build",),
     "  --max-attempts N            Hold a task after N failed attempts"),
    ("--max-idle-sessions", "max_idle_sessions", "int", cli_args.MODES,
     "  --max-idle-sessions N       Stop (exit 6) after N sessions without progress"),
    ("--max-consecutive-failures", "max_consecutive_failures", "int", cli_args.MODES,
     "  --max-consecutive-failures N Stop (exit 6) after N failed sessions in a row"),
    ("--max-cost", "max_cost", "number", cli_args.MODES,
     "  --max-cost USD              Stop (exit 5) once the sessions cost USD"),
    ("--max-runtime", "max_runtime", "duration", cli_args.MODES,
     "  --max-runtime DUR           Stop (exit 5) once the run has lasted DUR"),
    ("--max-limit-wait", "max_limit_wait", "duration", cli_args.MODES,
     "  --max-limit-wait DUR        Longest usage-limit wait (default: 6h; exit 5)"),
    ("--limit-wait-margin", "limit_wait_margin", "duration", cli_args.MODES,
     "  --limit-wait-margin DUR     Wait this long past a limit's reset (default: 2m)"),
    ("--limit-default-wait", "limit_default_wait", "duration", cli_args.MODES,
     "  --limit-default-wait DUR    Wait for a limit without reset time (default: 30m)"),
)
# Flags without a row in config's table (its row set is pinned by tests/test_config.py; the
# lead may add rows): flag-only, with these defaults.
_FLAG_ONLY = {"kill_grace": 10.0, "limit_wait_margin": 120.0, "limit_default_wait": 1800.0}
DEFAULT_MAX_LIMIT_WAIT_S = 6 * 3600.0


def _count(text: str) -> int:
    if not text.isdigit():
        raise ValueError(text)
    return int(text)


def _convert(kind: str):
    if kind == "duration":
        return parse_duration
    if kind == "int":
        return _count
    return float


_registered = False


def register() -> None:
    """Add the flags to cli_args' table (once; ralph.py calls this before parsing)."""
    global _registered
    if _registered:
        return
    _registered = True
    for name, dest, kind, modes, line in _FLAGS:
        what = {"duration": _DURATION, "int": "requires a number",
                "number": "requires a number (USD)"}[kind]
        cli_args.add_flag(cli_args.Flag((name,), dest, f"Error: {name} {what}",
                                        _convert(kind), modes=modes, help_lines=(line,),
                                        setting=dest not in _FLAG_ONLY))


@dataclass(frozen=True)
class NightConfig:
    session_s: float | None
    idle_s: float | None
    kill_grace_s: float
    margin_s: float
    default_wait_s: float
    limits: guards.Limits


def resolve(opts: cli_args.Options, explicit: Iterable[str]) -> NightConfig:
    """From the settled options (cli_args.settle: flags > environment > ralph.yml > defaults,
    or a resumed run's persisted options) and the flag-only values. `explicit`: the settings
    not left at their default (the run state's options). opts.max_iterations is the run's
    limit after the mode default."""
    explicit = set(explicit)
    settings = {s.name: opts.extra.get(s.name, s.default) for s in config.SETTINGS}
    only = {dest: float(opts.extra.get(dest, default)) for dest, default in _FLAG_ONLY.items()}
    unattended = opts.mode == "build" and opts.max_iterations == 0

    def breaker(name: str) -> int:
        # Lead's rule [SH-COMPAT]: with `-n N` the user's N is the bound, as in ralph.sh.
        if name not in explicit and not unattended:
            return 0
        return int(settings[name])

    limit_wait = settings["max_limit_wait"]
    return NightConfig(
        session_s=settings["session_timeout"] or None,
        idle_s=settings["idle_timeout"] or None,
        kill_grace_s=only["kill_grace"],
        margin_s=only["limit_wait_margin"],
        default_wait_s=only["limit_default_wait"],
        limits=guards.Limits(
            max_attempts=breaker("max_attempts") if opts.mode == "build" else 0,
            max_idle_sessions=breaker("max_idle_sessions"),
            max_consecutive_failures=breaker("max_consecutive_failures"),
            max_cost_usd=settings["max_cost"],
            max_runtime_s=settings["max_runtime"],
            max_limit_wait_s=DEFAULT_MAX_LIMIT_WAIT_S if limit_wait is None else limit_wait or None))


__all__ = ["NightConfig", "register", "resolve"]
