"""Owns the run-level limits of unattended runs, as one state object the loop consults after each
session: per-task attempts (--max-attempts), the no-progress breaker (--max-idle-sessions,
--max-consecutive-failures) and the budgets (--max-cost, --max-runtime, and the cap left for
usage-limit waits, --max-limit-wait). Its state is a plain dict the loop persists in the run
state. Knows nothing of running sessions, of the task CLI or of printing."""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

from ralphpy.durations import format_duration
from ralphpy.errors import (EXIT_BUDGET, EXIT_NO_PROGRESS, BudgetExhausted, NoProgress,
                             RalphError)

# Fields of `task _export-json` that change without anyone making progress: leases and
# assignees move on claim, retry_count/fail_reason on the loop's own crash-safety `fail`,
# holds are the loop's own doing, updated_at moves with all of them.
# `held` is not volatile: a hold (attempts, respawn guard) moves the loop on to other work,
# so it ends an idle streak rather than feeding the no-progress breaker.
_VOLATILE = ("assignee", "lease_expires_at", "retry_count", "fail_reason", "updated_at")
_REASONS_KEPT = 3
_HOLD_REASON_MAX = 500
_STATE_KEYS = ("started_at", "sessions", "total_cost_usd", "consecutive_failures",
               "idle_sessions", "limit_wait_s", "last_fingerprint", "last_head",
               "last_failure", "tasks")


def backlog_fingerprint(export_jsonl: str) -> str:
    """A hash of the backlog as `task _export-json` prints it, without volatile fields, so a
    claim followed by the loop's own `fail` leaves it unchanged. Active counts as open for the
    same reason (a claimed task left active is released by crash safety)."""
    rows = []
    for line in export_jsonl.split("\n"):       # not splitlines(): U+2028 in a JSON string
        line = line.strip()
        if not line:
            continue
        try:
            row = json.loads(line)
        except ValueError:
            rows.append(json.dumps({"unparsed": line}, sort_keys=True))
            continue
        rows.append(stable_row(row))
    rows.sort()
    return hashlib.sha256(("[" + ", ".join(rows) + "]").encode()).hexdigest()


def stable_row(row: Any) -> str:
    """One task of the export as the fingerprint sees it: its volatile fields left out, active
    as open (backlog_fingerprint)."""
    if isinstance(row, dict):
        row = {k: v for k, v in row.items() if k not in _VOLATILE}
        if row.get("status") == "active":
            row["status"] = "open"
    return json.dumps(row, sort_keys=True)


def reported_cost(summary: Any) -> float | None:
    """The USD cost a session's summary reports (`total_cost_usd`), None unless a number."""
    cost = getattr(summary, "total_cost_usd", None)
    return cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None


@dataclass(frozen=True)
class Limits:
    """0 or None turns a limit off."""

    max_attempts: int = 3
    max_idle_sessions: int = 3
    max_consecutive_failures: int = 5
    max_cost_usd: float | None = None
    max_runtime_s: float | None = None
    max_limit_wait_s: float | None = 6 * 3600.0


@dataclass(frozen=True)
class Verdict:
    """The run must end: which flag tripped, the one-line message, the exit code."""

    flag: str
    message: str
    exit_code: int

    def error(self) -> RalphError:
        cls = BudgetExhausted if self.exit_code == EXIT_BUDGET else NoProgress
        return cls(self.message)


@dataclass(frozen=True)
class Hold:
    """A task that failed --max-attempts times: the loop runs `task _hold <id> --reason`."""

    task_id: str
    attempts: int
    reason: str


@dataclass
class Guards:
    limits: Limits
    started_at: float = field(default_factory=time.time)     # wall clock, epoch seconds
    sessions: int = 0
    total_cost_usd: float = 0.0
    consecutive_failures: int = 0
    idle_sessions: int = 0
    limit_wait_s: float = 0.0          # waited for usage limits since the last normal session
    last_fingerprint: str | None = None
    last_head: str | None = None
    last_failure: str = ""
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)

    def baseline(self, backlog_fingerprint: str, head: str | None) -> None:
        """The backlog and HEAD before the first session (or after a resume)."""
        self.last_fingerprint, self.last_head = backlog_fingerprint, head

    def landed_elsewhere(self) -> None:
        """The session's commits went where HEAD does not show them (--pr: its pull request's
        branch): the next after_session counts it as a change, not an idle session."""
        self.last_head = None

    def before_session(self, now: float | None = None) -> Verdict | None:
        """--max-runtime, checked before starting a session (a limit wait may have used it)."""
        return self._runtime(time.time() if now is None else now)

    def after_session(self, outcome: Any, cost: float | None, backlog_fingerprint: str | None,
                      head: str | None, now: float | None = None) -> Verdict | None:
        """Count the finished session; the Verdict that ends the run, if any. Budgets are
        checked first (they end the run cleanly whatever else happened), then failures, then
        idle sessions. A usage-limit session changes no breaker counter. backlog_fingerprint
        None: no idle session is counted (a `--parallel` run starts each task once)."""
        now = time.time() if now is None else now
        self.sessions += 1
        self.total_cost_usd += float(cost or 0.0)
        kind = getattr(outcome, "kind", None)
        changed = (backlog_fingerprint is None or self.last_fingerprint is None
                   or backlog_fingerprint != self.last_fingerprint or head != self.last_head)
        self.last_fingerprint, self.last_head = backlog_fingerprint, head
        if kind != "usage_limit":
            self.limit_wait_s = 0.0
            if getattr(outcome, "counts_as_failure", False):
                self.consecutive_failures += 1
                self.last_failure = getattr(outcome, "detail", "") or str(kind)
            else:
                self.consecutive_failures = 0
            self.idle_sessions = 0 if changed else self.idle_sessions + 1
        elif changed:
            self.idle_sessions = 0
        return self._budgets(now) or self._breaker()

    def after_task_failure(self, task_id: str, reason: str,
                           prior_failures: int | None = None) -> Hold | None:
        """Record that the loop failed task_id (crash safety, timeout, ...) with reason. On
        the task's first failure in this run, prior_failures (its retry_count before this
        run's session) carries failures of earlier runs over. A Hold once the attempts reach
        --max-attempts. Not for usage-limit sessions: waits are not failures."""
        entry = self.tasks.setdefault(task_id, {"prior": int(prior_failures or 0),
                                                "failures": 0, "reasons": []})
        entry["failures"] += 1
        entry["reasons"] = (entry["reasons"] + [reason])[-_REASONS_KEPT:]
        attempts = entry["prior"] + entry["failures"]
        limit = self.limits.max_attempts
        if not limit or attempts < limit:
            return None
        text = f"failed {attempts} times (--max-attempts {limit}): " + " | ".join(entry["reasons"])
        return Hold(task_id, attempts, text[:_HOLD_REASON_MAX])

    def limit_wait_cap(self, now: float | None = None) -> tuple[float | None, str]:
        """(seconds a usage-limit wait may still take, the flag that caps it): what is left of
        --max-limit-wait (consecutive waits add up) or of --max-runtime, the smaller."""
        now = time.time() if now is None else now
        caps = []
        if self.limits.max_limit_wait_s:
            caps.append((max(0.0, self.limits.max_limit_wait_s - self.limit_wait_s),
                         "--max-limit-wait"))
        if self.limits.max_runtime_s:
            caps.append((max(0.0, self.started_at + self.limits.max_runtime_s - now),
                         "--max-runtime"))
        return min(caps) if caps else (None, "--max-limit-wait")

    def note_limit_wait(self, seconds: float) -> None:
        self.limit_wait_s += max(0.0, seconds)

    def _runtime(self, now: float) -> Verdict | None:
        limit = self.limits.max_runtime_s
        if limit and now - self.started_at >= limit:
            return Verdict("--max-runtime",
                           f"budget --max-runtime {format_duration(limit)} reached: the run has "
                           f"been going for {format_duration(now - self.started_at)}",
                           EXIT_BUDGET)
        return None

    def _budgets(self, now: float) -> Verdict | None:
        limit = self.limits.max_cost_usd
        if limit and self.total_cost_usd >= limit:
            return Verdict("--max-cost",
                           f"budget --max-cost {limit:.2f} USD reached: {self.sessions} "
                           f"session(s) cost {self.total_cost_usd:.4f} USD in total",
                           EXIT_BUDGET)
        return self._runtime(now)

    def _breaker(self) -> Verdict | None:
        limit = self.limits.max_consecutive_failures
        if limit and self.consecutive_failures >= limit:
            return Verdict("--max-consecutive-failures",
                           f"no progress: {self.consecutive_failures} sessions in a row failed "
                           f"(--max-consecutive-failures {limit}); last: {self.last_failure}",
                           EXIT_NO_PROGRESS)
        limit = self.limits.max_idle_sessions
        if limit and self.idle_sessions >= limit:
            return Verdict("--max-idle-sessions",
                           f"no progress: {self.idle_sessions} sessions in a row changed neither "
                           f"the backlog nor git HEAD (--max-idle-sessions {limit})",
                           EXIT_NO_PROGRESS)
        return None

    def to_dict(self) -> dict[str, Any]:
        """State for the run state file (limits are not included: flags may change on resume)."""
        state = {key: getattr(self, key) for key in _STATE_KEYS}
        state["tasks"] = json.loads(json.dumps(self.tasks))     # a copy, JSON-safe
        return state

    @classmethod
    def from_dict(cls, limits: Limits, data: dict[str, Any]) -> "Guards":
        """Guards resumed from to_dict() output; unknown keys are ignored, missing ones default."""
        known = {k: data[k] for k in _STATE_KEYS if k in data}
        return cls(limits, **known)


__all__ = ["Guards", "Limits", "Verdict", "Hold", "backlog_fingerprint", "stable_row",
           "reported_cost"]
