"""Owns the settings of an unattended run as the run acts on them (`NightConfig`): session
timeouts, the kill grace, usage-limit waits, and the breakers' default rule: --max-attempts,
--max-idle-sessions and --max-consecutive-failures take their defaults (3, 3, 5) only in a
build run without an iteration limit; with `-n N` (and in plan mode) they are off unless
given explicitly; --max-idle-sessions is off in a `--parallel` run (it starts each task
once). Knows nothing of acting on them (unattended.night, session.run) nor of where they come
from (config)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Container, Iterable

from ralphpy.config.options import Options
from ralphpy.unattended import guards

DEFAULT_MAX_LIMIT_WAIT_S = 6 * 3600.0


@dataclass(frozen=True)
class NightConfig:
    session_s: float | None
    idle_s: float | None
    kill_grace_s: float
    margin_s: float
    default_wait_s: float
    limits: guards.Limits


def breaker_applies(name: str, mode: str, max_iterations: int, parallel: int,
                    explicit: Container[str]) -> bool:
    """Whether the breaker `name` (max_attempts, max_idle_sessions, max_consecutive_failures)
    bounds a run of these settings; `explicit`: the settings not left at their default."""
    if name == "max_attempts" and mode != "build":
        return False
    if name == "max_idle_sessions" and parallel > 1:
        return False
    # [SH-COMPAT] with `-n N` the user's N is the bound, as in ralph.sh.
    return name in explicit or (mode == "build" and max_iterations == 0)


def resolve(opts: Options, explicit: Iterable[str]) -> NightConfig:
    """From the run's options (a resumed run's persisted values applied). `explicit`: the
    settings not left at their default (the run state's options)."""
    explicit = set(explicit)

    def breaker(name: str) -> int:
        on = breaker_applies(name, opts.mode, opts.max_iterations, opts.parallel, explicit)
        return int(getattr(opts, name)) if on else 0

    limit_wait = opts.max_limit_wait
    return NightConfig(
        session_s=opts.session_timeout or None,
        idle_s=opts.idle_timeout or None,
        kill_grace_s=float(opts.kill_grace),
        margin_s=float(opts.limit_wait_margin),
        default_wait_s=float(opts.limit_default_wait),
        limits=guards.Limits(
            max_attempts=breaker("max_attempts"),
            max_idle_sessions=breaker("max_idle_sessions"),
            max_consecutive_failures=breaker("max_consecutive_failures"),
            max_cost_usd=opts.max_cost,
            max_runtime_s=opts.max_runtime,
            max_limit_wait_s=DEFAULT_MAX_LIMIT_WAIT_S if limit_wait is None else limit_wait or None))


__all__ = ["NightConfig", "breaker_applies", "resolve"]
