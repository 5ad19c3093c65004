"""amp's own words (agents/amp.py): which of the lines the real amp CLI prints are a refusal
that waiting cannot fix (a key it cannot use: auth; no credit), read from the tail of its
stderr and from its error result, and its renderer's additions to Claude Code's stream-json.
The lines are amp's exact ones (its bundle's messages, as the real binary printed them against
tests/e2e_real/standin_amp.py)."""
from __future__ import annotations

import io
import json

import pytest

from ralphpy.agents import adapters
from ralphpy.agents.amp import NO_KEY_DETAIL, AmpRenderer, refusal
from ralphpy.agents.claude_render import SessionSummary
from ralphpy.agents.refusal import AUTH, NO_CREDIT

AUTH_LINES = [
    "Invalid or missing API key. Run 'amp login' to authenticate.",
    "Not logged in. Run 'amp login' to authenticate.",
    "Access token expired. Run 'amp login' to refresh.",
    "Session expired and could not be refreshed. Run 'amp login' to authenticate.",
    "AMP_API_KEY holds an OAuth session token, which is short-lived. Set it to an access token "
    "from https://ampcode.com/settings/security#access-token, or unset it and run 'amp login'.",
]
CREDIT_LINES = [
    "Insufficient credit balance (stand-in)",
    "Out of credits",
    "You are out of credits.",
    "You need at least $5 in available credits to start this request.",
    "Your Amp credit balance is low.",
    "Payment Required",
]
NOT_REFUSALS = [                       # amp's other fatal errors: waiting or retrying may help
    "Cannot reach Amp servers. Are you offline?",
    "Network timeout. Check your connection or proxy settings and retry.",
    "Amp server returned an error. Try again in a moment.",
    "Unexpected error inside Amp CLI.",
    "Couldn\u2019t connect to Amp servers \u2014 run amp: reconnect to retry",
    "You've reached your free usage limit",           # the free tier refills by the hour
    "Authenticated, but your account is not authorized to perform this action.",
]


def error_result(error: str) -> SessionSummary:
    return SessionSummary(result_subtype="error_during_execution", is_error=True,
                          result_text=error)


@pytest.mark.parametrize("line", AUTH_LINES, ids=range(len(AUTH_LINES)))
def test_every_login_amp_cannot_get_past_is_an_auth_refusal(line):
    found = refusal(f"Error: {line}\n", None)
    assert found.kind == AUTH
    assert found.detail == f"authentication failed: {line.removesuffix('.')}"


@pytest.mark.parametrize("line", CREDIT_LINES, ids=range(len(CREDIT_LINES)))
def test_a_thread_refused_for_credit_is_a_no_credit_refusal_naming_amps_message(line):
    found = refusal(f"Error: {line}\n", None)
    assert (found.kind, found.detail) == (NO_CREDIT, (
        f"amp refused the session for lack of credit: {line.removesuffix('.')}; add credits "
        "to the Amp account (waiting cannot help), then start the run again"))


@pytest.mark.parametrize("line", NOT_REFUSALS, ids=range(len(NOT_REFUSALS)))
def test_amps_other_errors_are_no_refusal(line):
    assert refusal(f"Error: {line}\n", None) is None


def test_only_the_error_amp_exited_on_counts():
    """amp's error printer writes its fatal `Error:` line last (a suggestion may follow)."""
    tail = ("Error: Out of credits\nWarning: something\n"
            "Error: Cannot reach Amp servers. Are you offline?\nCheck your connection.\n")
    assert refusal(tail, None) is None
    tail = "Warning: Out of credits soon\nError: Invalid or missing API key. Run 'amp login'\n"
    assert refusal(tail, None).kind == AUTH


def test_words_outside_amps_error_label_are_no_refusal():
    assert refusal("Out of credits\n  Error: Out of credits\nrun 'amp login'\n", None) is None
    assert refusal("", None) is None and refusal("", SessionSummary()) is None


def test_a_coloured_error_line_is_read_as_a_plain_one():
    tail = "\x1b[31m\x1b[1mError: \x1b[22m\x1b[39mOut of credits\r\n"
    assert refusal(tail, None).kind == NO_CREDIT


@pytest.mark.parametrize("error,kind", [
    ("Out of Credits Add credits to keep using Amp.", NO_CREDIT),
    ("No Usage Available Your included Megawatt usage is at its monthly limit, and no paid "
     "credits are available. Add paid credits to continue now.", NO_CREDIT),
    ("Unauthorized Invalid API key", AUTH),
    ("Model Provider Overloaded Try again in a few seconds.", None),
    ("Out of Credits You've reached your free usage limit. It refills over the next hour.", None),
], ids=["out-of-credits", "no-usage", "unauthorized", "overloaded", "free-tier-refills"])
def test_an_error_result_is_a_refusal_by_amps_title_of_it(error, kind):
    found = refusal("", error_result(error))
    assert (found and found.kind) == kind


def test_a_successful_result_saying_out_of_credits_is_no_refusal():
    done = SessionSummary(result_subtype="success", is_error=False,
                          result_text="Out of Credits is the page title I fixed.")
    assert refusal("", done) is None


def test_the_amp_adapter_reads_stderr_for_its_refusals_and_the_others_do_not():
    assert adapters.get_adapter("amp").reads_stderr
    assert adapters.get_adapter("amp", "npx -y @ampcode/cli").reads_stderr
    assert not any(adapters.get_adapter(name).reads_stderr
                   for name in ("claude", "codex", "gemini", "opencode", "pi"))
    line = "Error: Invalid or missing API key. Run 'amp login' to authenticate.\n"
    assert adapters.refusal("amp", line, None).kind == AUTH
    assert adapters.refusal("claude", line, None) is None
    assert adapters.login_hint("amp") == "(`amp login`) or fix the API key (AMP_API_KEY)"


def render(lines: list[bytes]) -> tuple[AmpRenderer, str]:
    out = io.BytesIO()
    renderer = AmpRenderer(out)
    for line in lines:
        renderer.feed(line)
    return renderer, out.getvalue().decode()


def test_amps_no_key_line_stops_the_session_at_once_and_is_shown():
    renderer, shown = render([b"No API key found. Starting login flow...\n",
                              b"If your browser does not open automatically, visit:\n\n",
                              b"When prompted, paste your code here: "])
    assert renderer.abort == NO_KEY_DETAIL
    assert shown == "\n\u26a0 No API key found. Starting login flow...\n"
    renderer.close()
    assert renderer.summary.auth_error == NO_KEY_DETAIL


def test_the_error_of_amps_error_result_is_shown_and_kept_as_the_result_text():
    event = {"type": "result", "subtype": "error_during_execution", "duration_ms": 10,
             "is_error": True, "num_turns": 2, "error": "Out of Credits Add credits to keep "
             "using Amp.", "session_id": "T-1"}
    renderer, shown = render([json.dumps(event).encode() + b"\n"])
    assert shown == ("\n\u26a0 Out of Credits Add credits to keep using Amp.\n"
                     "\n\u2501\u2501 Done (error_during_execution) | cost: $null | turns: 2 "
                     "\u2501\u2501\n")
    summary = renderer.summary
    assert (summary.result_text, summary.is_error) == (event["error"], True)
    assert renderer.abort is None


def test_a_successful_result_renders_as_claude_codes():
    event = {"type": "result", "subtype": "success", "duration_ms": 10, "is_error": False,
             "num_turns": 1, "result": "All done.", "session_id": "T-1"}
    renderer, shown = render([json.dumps(event).encode() + b"\n"])
    assert shown == "\n\u2501\u2501 Done (success) | cost: $null | turns: 1 \u2501\u2501\n"
    assert renderer.summary.result_text == "All done."
