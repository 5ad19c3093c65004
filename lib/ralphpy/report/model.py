"""Owns the report's data model: one run (or several, merged) as sessions, tasks, limit waits,
stops and notices, with the figures every renderer shows computed once. Knows nothing of where
the records come from (collect) or how they are shown (render_*)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# What each exit code of a run_end means for the reader (errors.py's table).
RATE_MIN_S = 600.0      # a rate needs a run this long to mean anything: else none is shown
STOP_KINDS = {0: "finished", 1: "error", 3: "locked", 4: "scope change", 5: "budget",
              6: "breaker", 7: "usage disabled", 8: "environment", 130: "interrupted"}
# Billing of the figure the agent reports as cost (report.billing).
BILLING_TEXT = {"api": "API spend (billed per token)",
                "subscription": "subscription: what the sessions would have cost on the API, "
                                "not money spent",
                "unknown": "as reported by the agent (API spend or a subscription's: unknown)"}


@dataclass
class Session:
    key: str                            # run id and session number: unique across merged runs
    n: int | None
    tasks: list[str] = field(default_factory=list)
    start: float | None = None          # epoch seconds
    end: float | None = None
    duration_s: float | None = None
    cost_usd: float | None = None
    turns: int | None = None
    tokens: int | None = None
    outcome: str = "running"            # completed, failed, no task, interrupted, running
    klass: str | None = None            # how it ended (outcome.classify): success, timeout ...
    detail: str | None = None
    reason: str | None = None
    exit_code: int | None = None
    agent: str | None = None            # the agent CLI (session_start), e.g. claude
    agent_version: str | None = None    # the release of it that ran (session_end)
    model: str | None = None            # the model the night shift started it with
    finished: int = 0                   # tasks it finished
    windows: dict = field(default_factory=dict)   # usage windows it saw: name -> utilization

    @property
    def cli(self) -> str:
        """`claude 2.1.332`, `codex` when its release is not known, `-` when nothing is."""
        return " ".join(filter(None, (self.agent, self.agent_version))) or "-"


@dataclass
class Task:
    id: str
    title: str | None = None
    status: str | None = None           # in the backlog now: open, active, done ...
    outcome: str = "not finished"       # done, failed, held, deleted, running, not finished
    attempts: int = 0
    commits: list[str] = field(default_factory=list)
    cost_usd: float = 0.0
    tokens: int | None = None
    wall_s: float = 0.0
    limit_waits: int = 0
    limit_wait_s: float = 0.0
    fail_reasons: list[str] = field(default_factory=list)
    hold_reason: str | None = None
    notices: list[str] = field(default_factory=list)   # scope changes, drift, respawns
    verify: str | None = None
    pull: str | None = None             # --pr: "#3 merged, checks success <address>"
    issue: str | None = None            # its GitHub issue's address


@dataclass
class LimitWait:
    start: float
    end: float | None
    message: str
    task: str | None = None

    @property
    def seconds(self) -> float | None:
        return None if self.end is None else max(0.0, self.end - self.start)


@dataclass
class Report:
    title: str                          # "run <id>" or "3 runs since ..."
    run_ids: list[str]
    mode: str | None = None
    status: str = "unknown"             # running, ended, interrupted, unknown
    started: float | None = None
    ended: float | None = None
    last_event: float | None = None
    exit_code: int | None = None
    exit_reason: str | None = None
    billing: str = "unknown"
    sessions: list[Session] = field(default_factory=list)
    tasks: dict[str, Task] = field(default_factory=dict)
    limit_waits: list[LimitWait] = field(default_factory=list)
    stops: list[str] = field(default_factory=list)      # breaker, budget and other stops
    scope_changes: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)   # what could not be read, and why

    # ---------------------------------------------------------------- figures
    @property
    def elapsed_s(self) -> float:
        end = self.ended or self.last_event
        return max(0.0, end - self.started) if end and self.started else 0.0

    @property
    def cost_usd(self) -> float:
        return sum(s.cost_usd or 0.0 for s in self.sessions)

    def add_mode(self, mode: object) -> None:
        """A run's mode: runs merged (--since) show every mode among them, not the last one."""
        if isinstance(mode, str):
            self.mode = ", ".join(sorted({*(self.mode.split(", ") if self.mode else ()), mode}))

    @property
    def done(self) -> int:
        return sum(1 for t in self.tasks.values() if t.outcome == "done")

    @property
    def tasks_per_hour(self) -> float | None:
        """None for a run shorter than RATE_MIN_S: 3 tasks in a second are not 10,800/h."""
        if self.elapsed_s < RATE_MIN_S:
            return None
        return self.done / (self.elapsed_s / 3600)

    @property
    def cost_per_done(self) -> float | None:
        return self.cost_usd / self.done if self.done else None

    @property
    def limit_wait_s(self) -> float:
        return sum(w.seconds or 0.0 for w in self.limit_waits)

    def outcomes(self) -> Counter:
        """Sessions by how they ended: the class when known, else the loop's outcome."""
        return Counter(s.klass or s.outcome for s in self.sessions)

    def longest(self, count: int = 5) -> list[Session]:
        timed = [s for s in self.sessions if s.duration_s is not None]
        return sorted(timed, key=lambda s: -(s.duration_s or 0.0))[:count]

    def night_shift(self) -> list[tuple[str, str]]:
        """The night shift's summary rows (docs/night-shift.md), none for a run without it:
        what each agent and model cost and finished, and each usage window's use over the run
        (first seen, last seen)."""
        rows = []
        models: dict[str, list[float]] = {}
        for s in self.sessions:
            if s.model is not None:
                spent = models.setdefault(f"{s.agent or '-'} {s.model}", [0.0, 0, 0])
                spent[0] += s.cost_usd or 0.0
                spent[1] += 1
                spent[2] += s.finished
        if models:
            rows.append(("Models", ", ".join(
                f"{name} ${cost:.2f} ({int(n)} session{'s' if n != 1 else ''}, {int(done)} done)"
                for name, (cost, n, done) in models.items())))
        seen: dict[str, list[float]] = {}
        for s in self.sessions:
            for name, use in s.windows.items():
                seen.setdefault(name, [use, use])[1] = use
        if seen:
            rows.append(("Windows", ", ".join(f"{name} {first:.0%} -> {last:.0%}"
                                              for name, (first, last) in sorted(seen.items()))))
        return rows

    def agent_clis(self) -> Counter:
        """Sessions by the kind of agent that ran them (its adapter's name: claude, codex, ...,
        command) and its CLI's release where known; empty when no session names either (runs
        recorded before sessions named their agent)."""
        if not any(s.agent or s.agent_version for s in self.sessions):
            return Counter()
        return Counter(s.cli for s in self.sessions)

    def task_outcomes(self) -> Counter:
        return Counter(t.outcome for t in self.tasks.values())

    def to_json(self) -> dict[str, Any]:
        """For json.dumps right away: shallow copies (asdict's deep copy is 10x slower)."""
        data = dict(vars(self))
        data["sessions"] = [{**vars(s), "cli": s.cli} for s in self.sessions]
        data["tasks"] = [vars(t) for t in self.tasks.values()]
        data["limit_waits"] = [{**vars(w), "seconds": w.seconds} for w in self.limit_waits]
        data.update(elapsed_s=self.elapsed_s, cost_usd=self.cost_usd, done=self.done,
                    tasks_per_hour=self.tasks_per_hour, cost_per_done=self.cost_per_done,
                    limit_wait_s=self.limit_wait_s, outcomes=dict(self.outcomes()),
                    billing_text=BILLING_TEXT.get(self.billing, self.billing))
        return data


__all__ = ["Report", "Session", "Task", "LimitWait", "STOP_KINDS", "BILLING_TEXT"]
