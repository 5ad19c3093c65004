"""Owns the night shift's choices (docs/night-shift.md): which agent takes the next session
(`agents:`: the first that is not limited and, under `pace:`, whose windows allow it; the
first comes back after its reset), when no agent may start yet and until when, and which
model a task's next attempt gets (`escalate:`, by its failures so far). Keeps what these
choices read in the run state (`night_shift`: the windows each agent last reported, the use
its sessions made of each window, the agents limited and until when, the cost of each agent
and model), so a resumed run paces and falls back too. Knows nothing of starting agents, of
the settings' sources or of waiting (the loop's Unattended feature waits, through
unattended.clock)."""
from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any, Callable, Mapping, Sequence

from ralphpy.config.kinds import fraction_of_percent
from ralphpy.unattended import usage_limits, windows
from ralphpy.unattended.guards import reported_cost

KEY = "night_shift"                  # the run state's extra field
_USES_KEPT = 20                      # sessions' uses per window the median reads
_SAME_WINDOW_S = 120                 # a reset this close to the last one: the same window


@dataclasses.dataclass(frozen=True)
class ShiftConfig:
    pace: float | None               # 0.8 for `pace: 80%`; None: off
    agents: tuple[str, ...]          # in order, the run's agent (--agent) first
    escalate: dict[str, tuple[str, ...]]   # per agent, the model aliases of its attempts

    @property
    def on(self) -> bool:
        return self.pace is not None or len(self.agents) > 1 or bool(self.escalate)


def config(agent: str, pace: str | None, agents: tuple[str, ...],
           escalate: Sequence[str] | Mapping[str, Sequence[str]]) -> ShiftConfig:
    """The run's agent comes first whatever `agents:` lists (docs/decisions/0042); a list in
    `escalate:` is the run's agent's, a mapping names each agent's (a resumed run's are lists)."""
    order = tuple(dict.fromkeys((agent, *agents)))
    lists = dict(escalate) if isinstance(escalate, Mapping) else \
        ({agent: escalate} if escalate else {})
    return ShiftConfig(fraction_of_percent(pace) if pace else None, order,
                       {a: tuple(names) for a, names in lists.items() if names})


@dataclasses.dataclass(frozen=True)
class Choice:
    agent: str
    until: datetime | None           # None: it may start now
    why: str                         # why not the first agent, or why it waits ("" if neither)


class Shift:
    def __init__(self, cfg: ShiftConfig, extra: dict[str, Any]):
        """extra: the run state's extra dict (a resumed run's holds what its sessions saw)."""
        self.cfg, self.extra = cfg, extra
        data = extra.get(KEY) if isinstance(extra.get(KEY), dict) else {}
        self.windows: dict[str, dict[str, windows.Window]] = {}
        for agent, seen in (data.get("windows") or {}).items():
            if isinstance(seen, dict):
                self.windows[agent] = {n: w for n, d in seen.items()
                                       if (w := windows.Window.from_dict(n, d)) is not None}
        self.uses: dict[str, list[float]] = {
            n: [float(u) for u in us if isinstance(u, (int, float))]
            for n, us in (data.get("uses") or {}).items() if isinstance(us, list)}
        self.limited: dict[str, str | None] = dict(data.get("limited") or {})
        self.costs: dict[str, float] = dict(data.get("costs") or {})
        self.models: dict[str, dict[str, float]] = dict(data.get("models") or {})
        self.no_windows_said = bool(data.get("no_windows_said"))

    # ------------------------------------------------------------------ choices
    def _limited_until(self, agent: str) -> datetime | None | str:
        """The reset of agent's limit, "disabled" when no reset can help, None when free."""
        if agent not in self.limited:
            return None
        until = self.limited[agent]
        return "disabled" if until is None else datetime.fromisoformat(until)

    def back(self, now: datetime) -> list[str]:
        """The agents whose limit has reset by `now`: free again (the first comes back)."""
        back = [a for a in list(self.limited) if (u := self._limited_until(a)) is not None
                and u != "disabled" and u <= now]
        for agent in back:
            del self.limited[agent]
        return back

    def _paced(self, agent: str, now: datetime) -> tuple[datetime, str] | None:
        """When agent's windows let it start under pace:, with why; None: they do now."""
        if self.cfg.pace is None:
            return None
        worst = None
        for window in self.windows.get(agent, {}).values():
            typical = windows.typical(self.uses.get(window.name, []))
            until = windows.held_until(window, now, self.cfg.pace, typical)
            if until is not None and (worst is None or until > worst[0]):
                why = (f"{agent}'s {windows.describe(window, now)} (pace {self.cfg.pace:.0%}, "
                       f"a session uses about {typical:.0%})")
                worst = (until, why)
        return worst

    def choose(self, now: datetime) -> Choice:
        """The agent of the next session: the first neither limited nor held by pace:; when
        every one is, the one free soonest and until when."""
        soonest: Choice | None = None
        reasons = []
        for agent in self.cfg.agents:
            limit = self._limited_until(agent)
            if limit == "disabled":
                reasons.append(f"{agent}'s usage is disabled")
                continue
            if limit is not None:
                held = (limit, f"{agent} is limited until {_when(limit)}")
            else:
                held = self._paced(agent, now)
                if held is None:
                    return Choice(agent, None, "; ".join(reasons))
            reasons.append(held[1])
            if soonest is None or held[0] < soonest.until:
                soonest = Choice(agent, held[0], held[1])
        return soonest or Choice(self.cfg.agents[0], None, "; ".join(reasons))

    def take_over(self, agent: str, hit: usage_limits.LimitHit | None,
                  now: datetime) -> str | None:
        """`agent`'s session hit a usage limit (or found its usage disabled): it is limited
        until the reset (for the rest of the run when disabled). Another agent that may start
        now, which then takes the next session, or None (the run waits, or stops, as without
        fallback agents)."""
        if len(self.cfg.agents) < 2:
            return None
        reset = hit.reset_at if hit is not None else None
        self.limited[agent] = reset.isoformat() if reset is not None else None
        if reset is not None:                         # its window is spent until then
            for name, window in self.windows.get(agent, {}).items():
                if window.resets_at <= reset + timedelta(seconds=_SAME_WINDOW_S):
                    self.windows[agent][name] = dataclasses.replace(window, utilization=1.0)
        self.save()
        choice = self.choose(now)
        return choice.agent if choice.until is None and choice.agent != agent else None

    def model(self, agent: str, failures: int) -> str | None:
        """escalate:'s model for a task that failed `failures` times, from the list of the
        agent taking the session; None: it has none (the run's agent runs on --model, a
        fallback agent on its default)."""
        names = self.cfg.escalate.get(agent)
        if not names:
            return None
        return names[min(max(failures, 0), len(names) - 1)]

    # ------------------------------------------------------------------ after a session
    def after_session(self, agent: str, model: str | None, summary: Any,
                      finished: int, say_once: Callable[[str], None]) -> dict[str, Any]:
        """What `agent`'s session (on `model`) reported: the windows (and each one's use by this
        session, for the typical use), its cost, the tasks it finished. The fields for its
        session_end event."""
        seen = windows.from_events(getattr(summary, "rate_limit_events", None) or [])
        known = self.windows.setdefault(agent, {})
        for name, window in seen.items():
            old = known.get(name)
            if old is not None and abs((old.resets_at - window.resets_at).total_seconds()) \
                    <= _SAME_WINDOW_S:
                self.uses[name] = (self.uses.get(name, []) +
                                   [max(0.0, window.utilization - old.utilization)])[-_USES_KEPT:]
            known[name] = window
        if self.cfg.pace is not None and not known and agent == "claude" \
                and not self.no_windows_said and summary is not None:
            self.no_windows_said = True
            say_once("Pace: claude reported no usage windows (API-key auth has none); "
                     "the run's cost budget (--max-cost) is its only pacing")
        cost = reported_cost(summary) or 0.0
        self.costs[agent] = round(self.costs.get(agent, 0.0) + cost, 6)
        shown = model or "default"
        spent = self.models.setdefault(f"{agent}:{shown}", {"cost": 0.0, "sessions": 0,
                                                            "finished": 0})
        spent["cost"] = round(spent["cost"] + cost, 6)
        spent["sessions"] += 1
        spent["finished"] += finished
        self.save()
        fields: dict[str, Any] = {"cli": agent, "model": shown}
        if seen:
            fields["windows"] = {n: w.to_dict() for n, w in seen.items()}
        return fields

    def save(self) -> None:
        """Into the run state's extra dict (saved with the session's record)."""
        self.extra[KEY] = {
            "windows": {a: {n: w.to_dict() for n, w in seen.items()}
                        for a, seen in self.windows.items()},
            "uses": self.uses, "limited": self.limited, "costs": self.costs,
            "models": self.models, "no_windows_said": self.no_windows_said}


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


__all__ = ["Shift", "ShiftConfig", "Choice", "config", "KEY"]
