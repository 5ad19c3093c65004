"""Classification of a finished session: each kind, its detail, whether it counts as
a failure, and the documented precedence when several apply."""
from __future__ import annotations

import signal
from datetime import datetime, timezone

import pytest

from ralphpy.agents.claude_render import SessionSummary
from ralphpy.session.pool import SessionResult
from ralphpy.unattended.outcome import PRECEDENCE, Outcome, classify, root_refusal
from ralphpy.unattended.outcome import classify_session, stop_error
from ralphpy.unattended.usage_limits import DISABLED, LIMIT, LimitHit

RESET = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
LIMIT_HIT = LimitHit(LIMIT, RESET, "You've hit your limit · resets 12pm", "text")
DISABLED_HIT = LimitHit(DISABLED, None, "Your usage allocation has been disabled by your admin",
                        "text", reset_known=False)


def summary(subtype="success", is_error=False, result="Done.", denials=()):
    return {"result_subtype": subtype, "is_error": is_error, "result_text": result,
            "last_assistant_text": result, "permission_denials": list(denials),
            "total_cost_usd": 0.01, "num_turns": 3}


DENIAL = {"tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": "rm -rf /"}}

CASES = [
    ("success", dict(returncode=0, summary=summary()), "success", False, "result success"),
    ("exit-1", dict(returncode=1, summary=summary()), "agent_error", True,
     "agent exited with status 1"),
    ("result-error-subtype", dict(returncode=0, summary=summary("error_max_turns", True)),
     "agent_error", True, "agent reported an error (result error_max_turns)"),
    ("no-result-event", dict(returncode=0, summary=summary(subtype=None, result=None)),
     "agent_error", True, "agent exited without a result event"),
    ("command-agent-exit-0", dict(returncode=0, summary=summary(subtype=None, result=None),
                                  reports_result=False), "success", False, "exit 0"),
    ("command-agent-exit-3", dict(returncode=3, summary=summary(subtype=None, result=None),
                                  reports_result=False), "agent_error", True,
     "agent exited with status 3"),
    ("timeout", dict(returncode=-15, summary=None, timed_out=True, session_timeout_s=3600),
     "timeout", True, "session timeout of 3600s reached; agent terminated"),
    ("idle", dict(returncode=-9, summary=None, idle_out=True, idle_timeout_s=900),
     "idle", True, "no agent output for 900s; agent terminated"),
    ("sigkill", dict(returncode=-signal.SIGKILL, summary=summary(subtype=None)),
     "killed_by_signal", True, "agent killed by SIGKILL (out of memory?)"),
    ("exit-137-from-a-wrapper", dict(returncode=137, summary=None), "killed_by_signal", True,
     "agent killed by SIGKILL (out of memory?)"),
    ("sigsegv", dict(returncode=-signal.SIGSEGV, summary=None), "killed_by_signal", True,
     "agent killed by SIGSEGV"),
    ("usage-limit", dict(returncode=1, summary=summary(is_error=True), limit_hit=LIMIT_HIT),
     "usage_limit", False, None),
    ("usage-disabled", dict(returncode=1, summary=None, limit_hit=DISABLED_HIT),
     "usage_disabled", False, None),
    ("invalid-api-key", dict(returncode=1, summary=summary(
        is_error=True, result="Invalid API key · Please run /login")),
     "auth_failure", True, "authentication failed: Invalid API key · Please run /login"),
    ("oauth-expired", dict(returncode=1, summary=summary(is_error=True, result=(
        'Failed to authenticate. API Error: 401 {"type":"error","error":{"type":'
        '"authentication_error","message":"OAuth token has expired."}}'))),
     "auth_failure", True, None),
    ("codex-401", dict(returncode=1, summary=summary(is_error=True, result=(
        "unexpected status 401 Unauthorized: Incorrect API key provided, url: "
        "http://127.0.0.1:1/v1/responses"))),
     "auth_failure", True, "authentication failed: unexpected status 401 Unauthorized: "
     "Incorrect API key provided, url: http://127.0.0.1:1/v1/responses"),
    ("auth-on-stderr", dict(returncode=1, summary=None,
                            stderr_tail="warming up\nMissing API key · Run /login\n"),
     "auth_failure", True, "authentication failed: Missing API key · Run /login"),
    ("permission-denials", dict(returncode=0, summary=summary(denials=[DENIAL, DENIAL])),
     "permission_denials", True, "2 permission denial(s) for Bash"),
]


@pytest.mark.parametrize("args,kind,failure,detail", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_each_session_ending_gets_its_kind_and_detail(args, kind, failure, detail):
    returncode = args.pop("returncode")
    got = classify(returncode, args.pop("summary"), **args)
    assert (got.kind, got.counts_as_failure) == (kind, failure)
    if detail is not None:
        assert got.detail == detail


def test_an_agent_that_only_talks_about_api_keys_is_not_an_auth_failure():
    text = "I fixed the check that prints 'Invalid API key' when the key is empty."
    assert classify(0, summary(result=text)).kind == "success"


def test_without_a_summary_an_exit_0_is_success():
    assert classify(0, None) == Outcome("success", "exit 0", False)


PRECEDENCE_CASES = [
    ("disabled-beats-limit-and-timeout",
     dict(limit_hit=DISABLED_HIT, timed_out=True), "usage_disabled"),
    ("limit-beats-timeout", dict(limit_hit=LIMIT_HIT, timed_out=True, idle_out=True),
     "usage_limit"),
    ("timeout-beats-idle", dict(timed_out=True, idle_out=True), "timeout"),
    ("idle-beats-killed", dict(idle_out=True), "idle"),
    ("killed-beats-auth", dict(stderr_tail="Invalid API key"), "killed_by_signal"),
]


@pytest.mark.parametrize("extra,kind", [c[1:] for c in PRECEDENCE_CASES],
                         ids=[c[0] for c in PRECEDENCE_CASES])
def test_the_higher_kind_wins_when_several_apply(extra, kind):
    assert classify(-9, summary(denials=[DENIAL]), **extra).kind == kind


def test_auth_beats_permission_denials_which_beat_agent_error():
    both = summary(is_error=True, result="Invalid API key · Please run /login", denials=[DENIAL])
    assert classify(1, both).kind == "auth_failure"
    assert classify(1, summary(denials=[DENIAL])).kind == "permission_denials"


def test_the_precedence_order_is_the_documented_one():
    assert PRECEDENCE == ("usage_disabled", "usage_limit", "root_refused", "timeout", "idle",
                          "killed_by_signal", "auth_failure", "permission_denials",
                          "agent_error", "success")


def test_an_outcome_serialises_for_events_jsonl():
    assert classify(1, None).to_dict() == {"outcome": "agent_error",
                                           "detail": "agent exited with status 1",
                                           "counts_as_failure": True}


# ------------------------------------------------------------------ refusals and retried logins

REFUSAL = dict(danger=True, agent="claude", env={}, euid=0)


def silent() -> dict:
    return {"events_seen": {"lines": 0}}


def test_claude_refusing_danger_as_root_is_recognised_and_is_no_task_failure():
    detail = root_refusal(1, silent(), **REFUSAL)
    assert detail == ('claude refused to start as root: "--dangerously-skip-permissions cannot '
                      'be used with root/sudo privileges for security reasons"')
    out = classify(1, silent(), root_refused=detail)
    assert (out.kind, out.counts_as_failure) == ("root_refused", False)


@pytest.mark.parametrize("change", [
    dict(danger=False), dict(agent="codex"), dict(euid=1000), dict(env={"IS_SANDBOX": "1"})],
    ids=["no-danger", "other-agent", "not-root", "is-sandbox-1"])
def test_no_refusal_where_the_cli_would_not_refuse(change):
    assert root_refusal(1, silent(), **{**REFUSAL, **change}) is None


@pytest.mark.parametrize("returncode,seen", [(0, 0), (1, 3), (-15, 0)],
                         ids=["exit-0", "printed-a-stream", "killed"])
def test_no_refusal_when_the_cli_started_or_was_killed(returncode, seen):
    assert root_refusal(returncode, {"events_seen": {"lines": seen}}, **REFUSAL) is None


def test_is_sandbox_must_be_exactly_1_as_for_the_cli():
    assert root_refusal(1, silent(), **{**REFUSAL, "env": {"IS_SANDBOX": "yes"}}) is not None


def test_a_login_the_cli_was_retrying_beats_the_signal_that_stopped_it():
    line = "API retry 1/10: 401 authentication_failed; next attempt in 0.6s"
    out = classify(-15, {"auth_error": line, "events_seen": {"lines": 2}})
    assert (out.kind, out.detail) == ("auth_failure", f"authentication failed: {line}")


@pytest.mark.parametrize("agent,how", [
    ("claude", "log in again (`claude /login`) or fix the API key (ANTHROPIC_API_KEY)"),
    ("codex", "log in again (`codex login`) or fix the API key (OPENAI_API_KEY"),
    ("gemini", "log in again (`gemini`, then /auth) or fix the API key (GEMINI_API_KEY)"),
    ("amp", "log in again (`amp login`) or fix the API key (AMP_API_KEY)"),
    ("pi", "log in again or fix the agent's API key, then start the run again"),
], ids=["claude", "codex", "gemini", "amp", "other"])
def test_a_rejected_key_stops_the_run_telling_how_that_agent_logs_in(agent, how):
    error = stop_error(Outcome("auth_failure", "authentication failed: 401", True), agent)
    assert error.exit_code == 9 and how in str(error), str(error)


NO_CREDIT = ("usage_disabled", "amp refused the session for lack of credit: Out of credits; ...")
AUTH = ("auth_failure", "authentication failed: Not logged in. Run 'amp login' to authenticate")


@pytest.mark.parametrize("given,kind", [
    (dict(returncode=1, summary=None, agent_refusal=NO_CREDIT), "usage_disabled"),
    (dict(returncode=1, summary=None, limit_hit=LIMIT_HIT, agent_refusal=NO_CREDIT),
     "usage_disabled"),
    (dict(returncode=1, summary=None, agent_refusal=AUTH), "auth_failure"),
    (dict(returncode=-15, summary=None, timed_out=True, agent_refusal=AUTH), "auth_failure"),
    (dict(returncode=1, summary=None, limit_hit=LIMIT_HIT, agent_refusal=AUTH), "usage_limit"),
], ids=["no-credit", "no-credit-beats-a-limit", "auth", "auth-beats-a-timeout",
        "a-limit-beats-auth"])
def test_a_refusal_the_agents_adapter_read_ranks_as_its_kind(given, kind):
    out = classify(**given)
    assert out.kind == kind
    if kind != "usage_limit":
        assert out.detail == given["agent_refusal"][1]
    assert out.counts_as_failure is (kind == "auth_failure")


def amp_session(stderr: str, returncode: int = 1) -> SessionResult:
    """What the pool returns for amp that printed `stderr` and nothing on stdout."""
    return SessionResult(True, returncode=returncode, stderr_tail=stderr,
                         summary=SessionSummary(events_seen={"lines": 0}))


def judged(result: SessionResult, agent: str) -> Outcome:
    return classify_session(result, danger=False, agent=agent, env={}, session_s=None,
                            idle_s=None)[0]


def test_amps_refusal_for_lack_of_credit_stops_the_run_with_exit_7_naming_its_message():
    out = judged(amp_session("Error: Insufficient credit balance\n"), "amp")
    assert (out.kind, out.counts_as_failure) == ("usage_disabled", False)
    error = stop_error(out, "amp")
    assert error.exit_code == 7
    assert str(error) == ("amp refused the session for lack of credit: Insufficient credit "
                          "balance; add credits to the Amp account (waiting cannot help), then "
                          "start the run again")


def test_amps_refused_key_stops_the_run_with_exit_9_and_the_line_of_every_agent():
    out = judged(amp_session("Error: Invalid or missing API key. Run 'amp login' to "
                             "authenticate.\n"), "amp")
    error = stop_error(out, "amp")
    assert error.exit_code == 9
    assert str(error) == ("authentication failed: Invalid or missing API key. Run 'amp login' "
                          "to authenticate; log in again (`amp login`) or fix the API key "
                          "(AMP_API_KEY), then start the run again")


def test_another_agents_stderr_is_no_refusal_and_amps_other_errors_are_agent_errors():
    assert judged(amp_session("Error: Out of credits\n"), "claude").kind == "agent_error"
    out = judged(amp_session("Error: Cannot reach Amp servers. Are you offline?\n"), "amp")
    assert (out.kind, stop_error(out, "amp")) == ("agent_error", None)
