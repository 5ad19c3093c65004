"""The night shift's choice of agent and model (unattended.shift)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from ralphpy.unattended import shift, usage_limits

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=timezone.utc)


def hit(reset: datetime | None, kind: str = usage_limits.LIMIT) -> usage_limits.LimitHit:
    return usage_limits.LimitHit(kind, reset, "You've hit your limit", "event")


def test_the_run_agent_comes_first_and_a_limited_one_hands_over_until_its_reset():
    extra: dict = {}
    plan = shift.Shift(shift.config("claude", None, ("codex", "claude", "gemini"), ()), extra)
    assert plan.cfg.agents == ("claude", "codex", "gemini")
    assert plan.choose(NOW).agent == "claude"
    assert plan.take_over("claude", hit(NOW + timedelta(hours=1)), NOW) == "codex"
    assert plan.choose(NOW).agent == "codex"
    assert plan.back(NOW + timedelta(minutes=30)) == []
    again = shift.Shift(plan.cfg, extra)                          # a resumed run knows
    assert again.choose(NOW).agent == "codex"
    assert again.back(NOW + timedelta(hours=1)) == ["claude"]
    assert again.choose(NOW + timedelta(hours=1)).agent == "claude"


def test_disabled_usage_is_out_for_the_run_and_with_every_agent_limited_the_soonest_waits():
    plan = shift.Shift(shift.config("claude", None, ("codex",), ()), {})
    assert plan.take_over("claude", hit(None, usage_limits.DISABLED), NOW) == "codex"
    assert plan.take_over("codex", hit(NOW + timedelta(hours=2)), NOW) is None
    choice = plan.choose(NOW)
    assert (choice.agent, choice.until) == ("codex", NOW + timedelta(hours=2))
    assert plan.back(NOW + timedelta(days=30)) == ["codex"]        # claude stays out


def test_one_agent_alone_never_hands_over():
    plan = shift.Shift(shift.config("claude", "80%", (), ()), {})
    assert plan.cfg.pace == 0.8
    assert plan.take_over("claude", hit(NOW + timedelta(hours=1)), NOW) is None


def test_escalation_follows_the_task_failures_and_stays_on_the_last_model():
    plan = shift.Shift(shift.config("claude", None, ("codex",), ("haiku", "sonnet", "opus")), {})
    assert [plan.model("claude", n) for n in range(5)] == [
        "haiku", "sonnet", "opus", "opus", "opus"]
    assert plan.model("codex", 2) is None                        # a list: the run agent's


def test_escalation_per_agent_uses_the_list_of_the_agent_taking_the_session():
    lists = {"claude": ("haiku", "opus"), "codex": ["gpt-5-mini", "gpt-5"]}  # resumed: lists
    plan = shift.Shift(shift.config("claude", None, ("codex", "gemini"), lists), {})
    assert plan.cfg.escalate == {"claude": ("haiku", "opus"), "codex": ("gpt-5-mini", "gpt-5")}
    assert [plan.model("codex", n) for n in range(3)] == ["gpt-5-mini", "gpt-5", "gpt-5"]
    assert plan.model("claude", 1) == "opus"
    assert plan.model("gemini", 1) is None                       # no list: its default model
    only_codex = shift.config("claude", None, ("codex",), {"codex": ("gpt-5",)})
    assert only_codex.on and shift.Shift(only_codex, {}).model("claude", 0) is None


def test_a_window_ahead_of_its_pace_hands_the_session_over_or_waits_when_none_may_start():
    from ralphpy.unattended.windows import Window
    extra: dict = {}
    plan = shift.Shift(shift.config("claude", "80%", ("codex",), ()), extra)
    ahead = Window("seven_day", 0.5, NOW + timedelta(days=6))     # 1 of 7 days gone
    plan.windows["claude"] = {"seven_day": ahead}
    choice = plan.choose(NOW)
    assert (choice.agent, choice.until) == ("codex", None)
    assert "claude's seven_day 50% used, 14% of it gone (pace 80%" in choice.why
    plan.take_over("codex", hit(NOW + timedelta(days=9)), NOW)
    waits = plan.choose(NOW)                       # 50% / 80% = 62.5% of the week gone
    assert waits.agent == "claude"
    assert waits.until == NOW + timedelta(days=6) - timedelta(days=7) * 0.375
    plan.save()
    assert shift.Shift(plan.cfg, extra).choose(NOW).until == waits.until   # kept in the state
