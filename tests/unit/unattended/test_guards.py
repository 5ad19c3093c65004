"""Run-level limits: per-task attempts and holds, the no-progress breaker (idle
sessions, consecutive failures), budgets (cost, runtime, limit-wait cap), state round trip."""
from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from conftest import STUBS
from ralphpy.errors import EXIT_BUDGET, EXIT_NO_PROGRESS, BudgetExhausted, NoProgress
from ralphpy.unattended.guards import Guards, Limits, backlog_fingerprint, reported_cost
from ralphpy.unattended.outcome import Outcome

OK = Outcome("success", "result success", False)
FAIL = Outcome("agent_error", "agent exited with status 1", True)
LIMITED = Outcome("usage_limit", "usage limit: You've hit your limit", False)
T0 = 1_000_000.0


def guards(**limits) -> Guards:
    g = Guards(Limits(**limits), started_at=T0)
    g.baseline("fp0", "head0")
    return g


def task_row(slug="t1", status="open", **extra) -> str:
    row = {"id": slug, "title": "Title", "status": status, "assignee": None,
           "lease_expires_at": None, "retry_count": 0, "fail_reason": None,
           "updated_at": "2026-11-22T00:00:00Z", "held": None, "steps": None, "deps": []}
    row.update(extra)
    return json.dumps(row)


# --- backlog fingerprint -----------------------------------------------------------------

def test_a_claim_then_the_loops_own_fail_leaves_the_fingerprint_unchanged():
    before = task_row()
    after = task_row(status="open", retry_count=1, fail_reason="session exited",
                     updated_at="2026-11-22T01:00:00Z", assignee="agent-1",
                     lease_expires_at="2026-11-22T02:00:00Z")
    assert backlog_fingerprint(before) == backlog_fingerprint(after)
    assert backlog_fingerprint(before) == backlog_fingerprint(task_row(status="active"))


@pytest.mark.parametrize("change", [
    dict(status="done"), dict(title="Other"), dict(steps=["a"]), dict(deps=["t2"]),
    dict(held="failed 3 times"),
], ids=["status-done", "title", "steps", "deps", "held"])
def test_real_backlog_changes_change_the_fingerprint(change):
    assert backlog_fingerprint(task_row()) != backlog_fingerprint(task_row(**change))


def test_a_new_task_changes_the_fingerprint_and_order_does_not():
    one, two = task_row("t1"), task_row("t2")
    assert backlog_fingerprint(one) != backlog_fingerprint(f"{one}\n{two}")
    assert backlog_fingerprint(f"{one}\n{two}\n") == backlog_fingerprint(f"{two}\n{one}")


# --- no-progress breaker -----------------------------------------------------------------

def test_three_sessions_that_change_nothing_trip_the_idle_breaker():
    g = guards()
    assert g.after_session(OK, 0.1, "fp0", "head0") is None
    assert g.after_session(OK, 0.1, "fp0", "head0") is None
    verdict = g.after_session(OK, 0.1, "fp0", "head0")
    assert verdict.flag == "--max-idle-sessions" and verdict.exit_code == EXIT_NO_PROGRESS
    assert verdict.message == ("no progress: 3 sessions in a row changed neither the backlog "
                               "nor git HEAD (--max-idle-sessions 3)")
    assert isinstance(verdict.error(), NoProgress)


@pytest.mark.parametrize("fp,head", [("fp1", "head0"), ("fp0", "head1")],
                         ids=["backlog-changed", "head-moved"])
def test_a_session_that_changes_the_backlog_or_head_resets_the_idle_count(fp, head):
    g = guards()
    g.after_session(OK, 0, "fp0", "head0")
    g.after_session(OK, 0, "fp0", "head0")
    assert g.after_session(OK, 0, fp, head) is None
    assert g.idle_sessions == 0


def test_commits_that_landed_elsewhere_count_as_a_change():
    """--pr: the session's commits went to its pull request's branch, HEAD is back on the
    base: not an idle session."""
    g = guards()
    g.after_session(OK, 0, "fp0", "head0")
    g.after_session(OK, 0, "fp0", "head0")
    g.landed_elsewhere()
    assert g.after_session(OK, 0, "fp0", "head0") is None
    assert g.idle_sessions == 0


def test_five_failures_in_a_row_trip_the_failure_breaker_with_the_last_reason():
    g = guards(max_idle_sessions=0)
    for i in range(4):
        assert g.after_session(FAIL, 0, f"fp{i + 1}", "h") is None
    verdict = g.after_session(FAIL, 0, "fp9", "h")
    assert verdict.flag == "--max-consecutive-failures" and verdict.exit_code == EXIT_NO_PROGRESS
    assert verdict.message == ("no progress: 5 sessions in a row failed "
                               "(--max-consecutive-failures 5); last: agent exited with status 1")


def test_a_success_between_failures_resets_the_failure_count():
    g = guards(max_idle_sessions=0)
    for _ in range(4):
        g.after_session(FAIL, 0, "fp0", "h")
    g.after_session(OK, 0, "fp0", "h")
    assert g.consecutive_failures == 0


def test_usage_limit_sessions_count_neither_as_failures_nor_as_idle():
    g = guards()
    g.after_session(FAIL, 0, "fp0", "head0")
    for _ in range(10):
        assert g.after_session(LIMITED, 0, "fp0", "head0") is None
    assert (g.consecutive_failures, g.idle_sessions) == (1, 1)


def test_without_a_fingerprint_no_session_is_idle_but_failures_still_count():
    # a --parallel run passes none: it starts each task once per run
    g = guards(max_idle_sessions=1, max_consecutive_failures=3)
    assert all(g.after_session(OK, 0, None, None) is None for _ in range(5))
    assert g.idle_sessions == 0
    assert g.after_session(FAIL, 0, None, None) is None
    assert g.after_session(FAIL, 0, None, None) is None
    assert g.after_session(FAIL, 0, None, None).flag == "--max-consecutive-failures"


@pytest.mark.parametrize("reported, cost", [(1.5, 1.5), (2, 2), (None, None), (True, None),
                                            ("0.5", None)])
def test_a_sessions_cost_is_what_its_summary_reports_as_a_number(reported, cost):
    assert reported_cost(SimpleNamespace(total_cost_usd=reported)) == cost
    assert reported_cost(None) is None


@pytest.mark.parametrize("outcome", [OK, FAIL], ids=["idle-successes", "idle-failures"])
def test_breakers_set_to_zero_never_trip(outcome):
    g = guards(max_idle_sessions=0, max_consecutive_failures=0)
    assert all(g.after_session(outcome, 0, "fp0", "head0") is None for _ in range(20))


# --- budgets -------------------------------------------------------------------------------

def test_the_cost_budget_trips_when_the_summed_costs_reach_it():
    g = guards(max_cost_usd=1.0)
    assert g.after_session(OK, 0.4, "fp1", "h") is None
    assert g.after_session(OK, None, "fp2", "h") is None         # a session without a cost
    verdict = g.after_session(OK, 0.6, "fp3", "h")
    assert verdict.flag == "--max-cost" and verdict.exit_code == EXIT_BUDGET
    assert verdict.message == ("budget --max-cost 1.00 USD reached: 3 session(s) cost "
                               "1.0000 USD in total")
    assert isinstance(verdict.error(), BudgetExhausted)


def test_a_budget_wins_over_the_breaker_in_the_same_session():
    g = guards(max_cost_usd=0.5, max_consecutive_failures=1)
    assert g.after_session(FAIL, 0.5, "fp1", "h").flag == "--max-cost"


def test_the_runtime_budget_trips_after_a_session_and_before_the_next():
    g = guards(max_runtime_s=3600)
    assert g.before_session(now=T0 + 3599) is None
    assert g.after_session(OK, 0, "fp1", "h", now=T0 + 3599) is None
    verdict = g.before_session(now=T0 + 3700)
    assert verdict.flag == "--max-runtime" and verdict.exit_code == EXIT_BUDGET
    assert verdict.message == ("budget --max-runtime 1h 00m reached: the run has been going "
                               "for 1h 01m")
    assert g.after_session(OK, 0, "fp2", "h", now=T0 + 3700).flag == "--max-runtime"


def test_the_limit_wait_cap_is_what_is_left_of_the_smaller_budget():
    g = guards(max_limit_wait_s=3600, max_runtime_s=None)
    assert g.limit_wait_cap(now=T0) == (3600, "--max-limit-wait")
    g.note_limit_wait(1000)
    g.after_session(LIMITED, 0, "fp0", "head0")                  # still in a row of limits
    assert g.limit_wait_cap(now=T0) == (2600, "--max-limit-wait")
    g.after_session(OK, 0, "fp1", "head0")                       # a normal session resets it
    assert g.limit_wait_cap(now=T0) == (3600, "--max-limit-wait")
    g2 = guards(max_limit_wait_s=3600, max_runtime_s=1800)
    assert g2.limit_wait_cap(now=T0 + 600) == (1200, "--max-runtime")
    assert guards(max_limit_wait_s=None).limit_wait_cap(now=T0) == (None, "--max-limit-wait")


# --- per-task attempts ---------------------------------------------------------------------

def test_a_task_is_held_on_its_third_failure_with_the_last_reasons():
    g = guards()
    assert g.after_task_failure("t1", "timeout") is None
    assert g.after_task_failure("t1", "idle") is None
    hold = g.after_task_failure("t1", "agent exited with status 1")
    assert (hold.task_id, hold.attempts) == ("t1", 3)
    assert hold.reason == ("failed 3 times (--max-attempts 3): timeout | idle | "
                           "agent exited with status 1")


def test_failures_of_earlier_runs_count_through_the_retry_count():
    g = guards()
    assert g.after_task_failure("t1", "timeout", prior_failures=1) is None
    assert g.after_task_failure("t1", "idle", prior_failures=5).attempts == 3   # first one wins


def test_attempts_are_counted_per_task():
    g = guards(max_attempts=2)
    assert g.after_task_failure("t1", "a") is None
    assert g.after_task_failure("t2", "b") is None
    assert g.after_task_failure("t1", "c").task_id == "t1"


def test_only_the_last_three_reasons_are_kept_and_the_reason_is_bounded():
    g = guards(max_attempts=5)
    for i in range(4):
        g.after_task_failure("t1", f"reason {i} " + "x" * 300)
    hold = g.after_task_failure("t1", "last")
    assert "reason 0" not in hold.reason and "reason 1" not in hold.reason
    assert hold.reason.startswith("failed 5 times (--max-attempts 5): reason 2")
    assert len(hold.reason) <= 500


def test_max_attempts_zero_never_holds():
    g = guards(max_attempts=0)
    assert all(g.after_task_failure("t1", "x") is None for _ in range(10))


# --- state ---------------------------------------------------------------------------------

def test_the_state_round_trips_through_json_and_resumes_the_counts():
    g = guards(max_cost_usd=1.0)
    g.after_session(FAIL, 0.7, "fp0", "head0")
    g.after_task_failure("t1", "timeout", prior_failures=1)
    g.note_limit_wait(30)
    data = json.loads(json.dumps(g.to_dict()))
    again = Guards.from_dict(Limits(max_cost_usd=1.0), data)
    assert again.to_dict() == g.to_dict()
    assert again.after_session(OK, 0.3, "fp1", "head0").flag == "--max-cost"
    assert again.after_task_failure("t1", "idle").attempts == 3


def test_a_state_dict_with_unknown_or_missing_keys_still_loads():
    g = Guards.from_dict(Limits(), {"sessions": 4, "future_key": 1})
    assert g.sessions == 4 and g.total_cost_usd == 0.0


# --- with the cost stub: real result events ------------------------------------------------

def _run_cost_stub(tmp_path, costs: str) -> float:
    env = {"PATH": "/usr/bin:/bin", "STUB_COSTS": costs,
           "STUB_COST_STATE": str(tmp_path / "calls")}
    run = subprocess.run([sys.executable, str(STUBS / "claude-cost")], env=env,
                         capture_output=True, text=True, timeout=30, check=True)
    results = [json.loads(line) for line in run.stdout.splitlines()
               if json.loads(line).get("type") == "result"]
    return results[-1]["total_cost_usd"]


def test_the_cost_budget_trips_on_the_costs_a_stub_agent_reports(tmp_path):
    g = guards(max_cost_usd=2.0, max_idle_sessions=0)
    verdicts = [g.after_session(OK, _run_cost_stub(tmp_path, "0.5,1.25,2"), f"fp{i}", "h")
                for i in range(3)]
    assert verdicts[:2] == [None, None]
    assert verdicts[2].flag == "--max-cost"
    assert g.total_cost_usd == pytest.approx(3.75)
