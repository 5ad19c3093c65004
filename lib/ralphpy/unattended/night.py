"""Owns what one plan/build run does between its sessions in unattended runs, and the settings
it acts on (`NightConfig`: session timeouts, the kill grace, usage-limit waits, and the
breakers' default rule: --max-attempts, --max-idle-sessions and --max-consecutive-failures take
their defaults (3, 3, 5) only in a build run without an iteration limit; with `-n N` (and in
plan mode) they are off unless given explicitly; --max-idle-sessions is off in a `--parallel`
run, which starts each task once). Between sessions: `ralph ctl` pause/stop and SIGHUP, log
rotation; after each: counting its outcome (its fields for the session_end event, the outcomes
in progress.md), holding tasks that failed --max-attempts times, the breaker and budgets (their
state persisted in the run state), and waiting out usage limits (the resume time persisted in
the run state, and one persisted by an earlier run honoured), or, with fallback agents, handing the
next session to another agent; before a session, pace:'s wait (the night shift's choices are
unattended.shift's). Each piece is one call into the module that owns it (outcome,
usage_limits, limit_wait, guards, control, logrotate, shift, clock). Knows
nothing of running the agent (session), of classifying a session (the session lifecycle does,
once), of where the settings come from (config) or of the run's lifecycle on disk
(runlife.lifecycle), and never prints: lines for the user go through the `say`/`warn`
callables ralph.py passes in."""
from __future__ import annotations

import dataclasses
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Container, Iterable, Mapping

from ralphpy import programs
from ralphpy.config.options import Options
from ralphpy.unattended import (clock, control, guards, limit_wait, logrotate, outcome, shift,
                                 usage_limits)
from ralphpy.runs import progress
from ralphpy.runs import state as run_state
from ralphpy.backlog import client as task_client
from ralphpy.unattended.backlog_watch import BacklogWatch
from ralphpy.signals import Guard

if TYPE_CHECKING:                        # an annotation only: runlife sits above unattended
    from ralphpy.runlife.lifecycle import Run
_POLL_S = 0.05
DEFAULT_MAX_LIMIT_WAIT_S = 6 * 3600.0


@dataclasses.dataclass(frozen=True)
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


class Night:
    def __init__(self, cfg: NightConfig, run: Run, *, task: Any, env: Mapping[str, str],
                 guard: Guard, log_dir: Path, say: Callable[[str], None],
                 warn: Callable[[str], None]):
        """log_dir: where the session logs go (./.ralph/logs, s.20.3), rotated before each."""
        self.cfg, self.run, self.task, self.env, self.log_dir = cfg, run, task, env, log_dir
        self.ralph_dir, self.state = run.ralph_dir, run.state
        self.agent = str(self.state.options.get("agent") or "claude")   # the CLI that runs
        self.guard, self.say, self.warn = guard, say, warn
        saved = self.state.extra.get("guards")
        self.guards = (guards.Guards.from_dict(cfg.limits, saved) if isinstance(saved, dict)
                       else guards.Guards(cfg.limits))     # a resumed run keeps its counters
        self.stop_line: str | None = None
        self._pending: tuple[Any, Any, float] | None = None   # (outcome, limit hit, cost)
        self.watch = BacklogWatch(task, env, Path.cwd())       # the backlog's fingerprint
        self._hold_warned = False
        self.shift: shift.Shift | None = None   # pace:, agents:, escalate: (night shift)

    # ------------------------------------------------------------------ run start and end
    def start(self) -> None:
        """Record the run; drop a STOP left from before it; honour a persisted resume time."""
        if control.consume_stop(self.ralph_dir):
            self.warn(f"Note: removed {self.ralph_dir / control.STOP} left from before this run")
        persisted = self._persisted_limit()
        if self.task.embedded and (self.cfg.limits.max_idle_sessions or self.cfg.limits.max_attempts):
            # no task call of s.1's table
            self.guards.baseline(self.watch.fingerprint(None), self._head())
        if persisted is not None:
            self.say(f"Usage limit from an earlier run: resume time {persisted.reset_at.isoformat()}")
            if not self.hand_over(persisted, persisted.message):     # agents: another one
                self.wait_limit(persisted)

    def finish(self) -> None:
        """At every exit after start(): a stop request is used up (the next run starts normally)."""
        control.consume_stop(self.ralph_dir, strict=False)

    # ------------------------------------------------------------------ between sessions
    def between_sessions(self) -> str | None:
        """None: start the next session. A line: stop gracefully (exit 0). Waits while the run
        is paused. Raises BudgetExhausted for --max-runtime. Rotates the logs before the
        session."""
        if self.stop_line is None:
            control.check_between_sessions(self.ralph_dir, self._wait, log=self.say, poll_s=0.2)
        if self.stop_requested() is not None:
            self._event("log", kind="stop", message=self.stop_line)
            return self.stop_line
        verdict = self.guards.before_session()                   # --max-runtime
        if verdict is not None:
            raise verdict.error()
        logrotate.rotate(self.log_dir)                           # .ralph/logs bounded
        return None

    def stop_requested(self) -> str | None:
        """The stop line once SIGHUP or `ralph ctl stop` asked the run to end, else None.
        Never waits: a `--parallel` run asks before each session it starts while others run
        (and waits out a pause with between_sessions once they have ended). A SIGINT or
        SIGTERM that a `--parallel` run's pool queued is not a stop request: the pool ends
        the run (exit 130)."""
        if self.stop_line is None and not self.guard.pending:
            if self.guard.hangup:
                self.stop_line = "Stopped: SIGHUP received; the last session finished"
            elif (self.ralph_dir / control.STOP).exists():
                self.stop_line = "Stopped: `ralph ctl stop` requested; the last session finished"
        return self.stop_line

    def held(self) -> list[tuple[str, str]]:
        """(id, reason) of unfinished held tasks; a task CLI not ours only under --assign."""
        if not (self.task.embedded or self.state.options.get("assign")):
            return []
        return task_client.held_tasks(self.task.bound(self.env))

    def paused(self) -> bool:
        """`ralph ctl pause` holds the next session (between_sessions waits it out)."""
        return (self.ralph_dir / control.PAUSE).exists()

    # ------------------------------------------------------------------ after a session
    def after_session(self, result: Any, classified: tuple[outcome.Outcome, Any],
                      failed: list[str], reason: str, progressed: bool = False,
                      reasons: Mapping[str, str] = {}) -> dict[str, Any]:
        """Count the failed attempts of the tasks crash safety (or the agent, with reasons) put
        back (`failed`) and hold those at the limit, for a session the lifecycle classified
        (`classified`: its outcome and the usage limit it hit). Returns the fields for its
        session_end event; the outcome is also kept for progress.md. progressed: the session
        marked a task done, so the breaker does not count it as a failure."""
        summary = result.summary
        out, hit = classified
        if progressed and out.counts_as_failure and out.kind not in outcome.NOT_AN_ATTEMPT:
            out = dataclasses.replace(out, counts_as_failure=False)
        cost = guards.reported_cost(summary)
        held = []
        if out.kind not in outcome.NOT_AN_ATTEMPT:
            held = [slug for slug in failed if self.attempt_failed(
                slug, reasons.get(slug, reason), self.watch.retries.get(slug))]
        n = (self.state.active or {}).get("n", self.state.sessions_started)
        progress.keep_outcome(self.state, n, out.kind, out.detail, out.counts_as_failure)
        self._pending = (out, hit, cost)
        fields = {"class": out.kind, "detail": out.detail,
                  "counts_as_failure": out.counts_as_failure}
        if held:
            fields["held"] = held
        retries = getattr(summary, "api_retries", 0)
        if retries:
            fields["api_retries"] = retries                     # the CLI retried API calls
        if hit is not None and hit.reset_at is not None:
            fields["resume_at"] = hit.reset_at.isoformat()
        return fields

    def attempt_failed(self, slug: str, reason: str, prior_failures: int | None) -> bool:
        """Count a failed attempt at slug, which the loop put back with reason; hold the task
        once its attempts reach --max-attempts (prior_failures: its retry_count before its
        first failure in this run, so earlier runs count). True when it was held."""
        hold = self.guards.after_task_failure(slug, reason, prior_failures=prior_failures)
        return hold is not None and self._hold(hold)

    def settle(self, counts_text: str | None = None, last: bool = False) -> None:
        """After the loop's own checks (plan-status, promise): raise what ends the run (exit 7,
        9, 10, 5 or 6) or wait out a usage limit. counts_text: the `plan-status` output, the backlog
        fingerprint when the task CLI is not ours (no extra task call). last: the iteration
        limit leaves no session to run after this one, so a usage limit is not waited out."""
        if self._pending is None:
            return
        out, hit, cost = self._pending
        self._pending = None
        need = self.cfg.limits.max_idle_sessions or self.cfg.limits.max_attempts
        verdict = self.guards.after_session(
            out, cost, self.watch.fingerprint(counts_text) if need else "",
            self._head() if need else None)
        self._keep()                   # saved with the session's record (lifecycle), or below
        handed = out.kind in (outcome.USAGE_LIMIT, outcome.USAGE_DISABLED) and \
            self.hand_over(hit, out.detail)
        stop = None if handed else outcome.stop_error(out, self.agent)
        if stop is not None:
            raise stop
        if verdict is not None:
            raise verdict.error()
        if handed:
            return
        if out.kind == outcome.USAGE_LIMIT:
            hit = self.free_first(hit)                   # agents: the first agent free
        if out.kind == outcome.USAGE_LIMIT and last:
            self.skip_limit(hit)
        elif out.kind == outcome.USAGE_LIMIT:
            self.wait_limit(hit)

    # ------------------------------------------------------------------ the night shift
    def hand_over(self, hit: usage_limits.LimitHit | None, detail: str) -> bool:
        """agents: the session's agent (self.agent) hit a usage limit or found its usage
        disabled: True when another agent takes the next session (no wait, no stop)."""
        if self.shift is None:
            return False
        other = self.shift.take_over(self.agent, hit, clock.now(self.env))
        if other is None:
            return False
        until = f"until {hit.reset_at.isoformat()}" if hit and hit.reset_at else "for this run"
        said = hit.message if hit is not None else detail
        line = f"Fallback: {self.agent} is limited {until} ({said}); {other} takes over"
        self.warn(line)
        self._event("log", kind="fallback", message=line, agent=self.agent, to=other)
        self._save()
        return True

    def free_first(self, hit: usage_limits.LimitHit) -> usage_limits.LimitHit:
        """agents: every agent is limited: the wait ends when the first of them is free (its
        reset, or its pace), not at the reset the last session hit. Without agents: `hit`."""
        if self.shift is None or len(self.shift.cfg.agents) < 2:
            return hit
        choice = self.shift.choose(clock.now(self.env))
        if choice.until is None or hit.reset_at is None or choice.until >= hit.reset_at:
            return hit
        return dataclasses.replace(hit, reset_at=choice.until,
                                   message=f"{hit.message}; {choice.why}")

    def held_by_pace(self) -> bool:
        """pace:, agents: no agent may start a session now (a `--parallel` run then lets its
        running sessions end and waits with next_agent)."""
        return self.shift is not None and self.shift.choose(clock.now(self.env)).until is not None

    def next_agent(self) -> str | None:
        """pace:, agents: before a session: the agents whose limit has reset are back; when
        every agent is limited or held by pace:, one stderr line (which window, why, until
        when) and the wait, through the clock seam. Returns the stop line when `ralph ctl
        stop` or SIGHUP ended the wait, else None (self.shift.choose now names an agent)."""
        while self.shift is not None:
            now = clock.now(self.env)
            for agent in self.shift.back(now):
                line = f"Fallback: {agent} is back: its usage limit has reset"
                self.warn(line)
                self._event("log", kind="fallback_back", message=line, agent=agent)
                self._save()
            choice = self.shift.choose(now)
            if choice.until is None:
                return None
            line = (f"Pace: waiting until {choice.until.strftime('%Y-%m-%d %H:%M UTC')} "
                    f"({choice.why})")
            self.warn(line)
            self._event("log", kind="pace_wait", message=line, agent=choice.agent,
                        resume_at=choice.until.isoformat())
            while (left := (choice.until - clock.now(self.env)).total_seconds()) > 0:
                if clock.wait(left, self._wait, self.env):      # a stop ends it at once
                    if not self.guard.pending:
                        self.stop_line = ("Stopped: SIGHUP received while pacing"
                                          if self.guard.hangup else
                                          "Stopped: `ralph ctl stop` requested while pacing")
                    return self.stop_line
        return None

    # ------------------------------------------------------------------ helpers
    def skip_limit(self, hit: usage_limits.LimitHit) -> None:
        """No session is left to run: not waited out; the next run honours its resume time."""
        self._keep_limit(hit)
        line = f"Usage limit: not waited out: no session is left to run ({hit.message})"
        self.say(line)
        self._event("log", kind="usage_limit_not_waited", message=line,
                    resume_at=self.state.resume_at)

    def _keep_limit(self, hit: usage_limits.LimitHit) -> None:
        margin = timedelta(seconds=self.cfg.margin_s)
        self.state.resume_at = (hit.reset_at + margin).isoformat()
        self.state.extra["limit"] = hit.to_dict()
        self._save()

    def wait_limit(self, hit: usage_limits.LimitHit) -> str | None:
        """Wait out a usage limit (the single loop's, and a `--parallel` run's once its
        sessions have ended): the resume time persisted meanwhile. Returns the stop line when
        `ralph ctl stop` or SIGHUP ended the wait, else None (a queued SIGINT/SIGTERM of a
        `--parallel` run also ends it: the caller's pool handles that). Raises BudgetExhausted
        (exit 5) when the reset is further away than the cap."""
        self._keep_limit(hit)
        margin = timedelta(seconds=self.cfg.margin_s)
        self._event("log", kind="usage_limit_wait", message=hit.message,
                    resume_at=self.state.resume_at)
        cap_s, flag = self.guards.limit_wait_cap()
        started = time.monotonic()
        res = limit_wait.wait_until(hit.reset_at, margin=margin, cap_flag=flag,
                                    max_wait=None if cap_s is None else timedelta(seconds=cap_s),
                                    clock=lambda: clock.now(self.env),
                                    wait=lambda s: clock.wait(s, self._wait, self.env),
                                    log=self.say)   # BudgetExhausted: exit 5
        self.guards.note_limit_wait(time.monotonic() - started)
        self.state.resume_at = None
        self.state.extra.pop("limit", None)
        self._save()
        if res == limit_wait.STOPPED and not self.guard.pending:
            self.stop_line = ("Stopped: SIGHUP received while waiting for the usage limit"
                              if self.guard.hangup else
                              "Stopped: `ralph ctl stop` requested while waiting for the usage limit")
        return self.stop_line

    def _wait(self, seconds: float) -> bool:
        """Block up to `seconds`; True when a stop was requested (SIGHUP or ralph ctl stop).
        SIGINT/SIGTERM raise Interrupted from the sleep (docs/contract/ralph-cli.md s.16: exit 130),
        or, while a `--parallel` run's pool queues them, end the wait for the pool to handle."""
        end = time.monotonic() + seconds
        while True:
            if self.guard.hangup or self.guard.pending or (self.ralph_dir / control.STOP).exists():
                return True
            left = end - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(_POLL_S, left))

    def _persisted_limit(self) -> usage_limits.LimitHit | None:
        """This run's resume time (a resumed run), else the newest earlier run's."""
        state = self.state
        if not state.resume_at:
            previous = run_state.previous_run(self.ralph_dir, state.run_id)
            state = run_state.read(self.ralph_dir, previous) if previous else None
        data = state.extra.get("limit") if state is not None else None
        if not state or not state.resume_at:
            return None
        try:
            if isinstance(data, dict):
                hit = usage_limits.LimitHit.from_dict(data)
            else:
                hit = usage_limits.LimitHit(usage_limits.LIMIT,
                                            datetime.fromisoformat(state.resume_at),
                                            "persisted resume time", "state")
        except (KeyError, ValueError, TypeError):
            return None
        if hit.reset_at is None or hit.reset_at + timedelta(seconds=self.cfg.margin_s) <= \
                datetime.now(timezone.utc):
            return None
        return hit

    def _hold(self, hold: guards.Hold) -> bool:
        res = self.task.call("_hold", hold.task_id, "--reason", hold.reason, env=self.env)
        self._event("log", kind="task_held", task=hold.task_id, attempts=hold.attempts,
                    message=hold.reason, ok=res.ok)
        if res.ok:
            self.watch.held.add(hold.task_id)           # `held` is no volatile field
            self.say(f"Held task {hold.task_id}: {hold.reason}")
        elif not self._hold_warned:      # an external task CLI may lack _hold: warn once
            self._hold_warned = True
            self.warn(f"Warning: cannot hold task {hold.task_id} (`task _hold` failed); "
                      "the breakers still bound the run")
        return res.ok

    def _head(self) -> str | None:
        done = programs.run([*programs.GIT, "rev-parse", "-q", "--verify", "HEAD"], cwd=Path.cwd(),
                            env=self.env)
        return done.out.strip() or None

    def _event(self, event: str, **fields: Any) -> None:
        progress.append_event(self.ralph_dir, self.state.run_id, event, **fields)

    def _keep(self) -> None:
        self.state.extra["guards"] = self.guards.to_dict()

    def _save(self) -> None:           # now, before a wait: the resume time a resume honours
        self._keep()
        self.run.save()


__all__ = ["Night", "NightConfig", "breaker_applies", "resolve"]
