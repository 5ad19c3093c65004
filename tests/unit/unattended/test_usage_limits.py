"""Usage-limit detection: every wording, the structural rate_limit_event, tool output
ignored, reset times with and without zones (clock frozen by passing `now`), admin-disabled."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from conftest import STUBS
from ralphpy.agents import claude_render
from ralphpy.unattended import usage_limits
from ralphpy.unattended.reset_time import parse_reset, retry_after
from ralphpy.unattended.usage_limits import DISABLED, LIMIT, LimitHit, detect

UTC = timezone.utc
# 10:00 UTC on a Sunday; Seoul is 19:00, Berlin 11:00.
NOW = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


def summary(result_text=None, assistant=None, events=(), tail=()):
    return {"result_text": result_text, "last_assistant_text": assistant,
            "rate_limit_events": list(events), "assistant_texts_tail": list(tail)}


def rejected_event(resets_at=1795428000, nested=True, **info):
    body = {"status": "rejected", "resetsAt": resets_at, "rateLimitType": "five_hour", **info}
    if nested:
        return {"type": "rate_limit_event", "rate_limit_info": body, "uuid": "u", "session_id": "s"}
    return {"type": "rate_limit_event", **body}


WORDINGS = [
    ("5-hour limit reached ∙ resets 12pm", datetime(2026, 11, 22, 12, 0, tzinfo=UTC)),
    ("5-hour limit reached · resets 12pm", datetime(2026, 11, 22, 12, 0, tzinfo=UTC)),
    ("You've hit your limit · resets 1pm (Asia/Seoul)",
     datetime(2026, 11, 23, 13, 0, tzinfo=ZoneInfo("Asia/Seoul"))),
    ("You’ve hit your limit ∙ resets 1pm (Asia/Seoul)",
     datetime(2026, 11, 23, 13, 0, tzinfo=ZoneInfo("Asia/Seoul"))),
    ("You've hit your session limit", None),
    ("You’ve hit your session limit", None),
    ("You've hit your individual spend limit", None),
    ("You’ve hit your individual spend limit", None),
    ("You're out of extra usage · resets 9pm", datetime(2026, 11, 22, 21, 0, tzinfo=UTC)),
    ("You’re out of extra usage ∙ resets 9pm", datetime(2026, 11, 22, 21, 0, tzinfo=UTC)),
    ("You've hit your weekly limit · resets Nov 25 at 4pm (America/Recife)",
     datetime(2026, 11, 25, 16, 0, tzinfo=ZoneInfo("America/Recife"))),
    ("Claude usage limit reached. Your limit will reset at 5pm (Europe/Warsaw).",
     datetime(2026, 11, 22, 17, 0, tzinfo=ZoneInfo("Europe/Warsaw"))),
    ("Claude AI usage limit reached|1795428000", datetime.fromtimestamp(1795428000, UTC)),
    ("Weekly limit reached ∙ resets 9pm", datetime(2026, 11, 22, 21, 0, tzinfo=UTC)),
    # codex 0.169 (a ChatGPT plan's limit): the reset in local time, the date when not today
    ("You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit "
     "https://chatgpt.com/codex/settings/usage to purchase more credits or try again at "
     "9:40 PM.", datetime(2026, 11, 22, 21, 40, tzinfo=UTC)),
    ("You’ve hit your usage limit. Try again at Nov 28th, 2026 3:05 PM.",
     datetime(2026, 11, 28, 15, 5, tzinfo=UTC)),
    ("You’ve hit your usage limit. Try again later.", None),
]


@pytest.mark.parametrize("text,reset", WORDINGS, ids=[w for w, _ in WORDINGS])
def test_each_limit_wording_in_the_result_text_is_a_limit_hit(text, reset):
    hit = detect(summary(result_text=text), "", NOW, local_tz=UTC)
    assert hit is not None and hit.kind == LIMIT and hit.source == "text"
    assert hit.message == text
    if reset is None:
        assert hit.reset_known is False and hit.reset_at == NOW + timedelta(minutes=30)
    else:
        assert hit.reset_known is True and hit.reset_at == reset


@pytest.mark.parametrize("field", ["last_assistant_text", "assistant_texts_tail"],
                         ids=["last-assistant-text", "earlier-assistant-text"])
def test_a_limit_message_in_assistant_text_is_a_limit_hit(field):
    text = "You've hit your limit · resets 1pm (Asia/Seoul)"
    data = summary()
    data[field] = [text] if field == "assistant_texts_tail" else text
    assert detect(data, "", NOW).kind == LIMIT


def test_a_limit_message_on_stderr_is_a_limit_hit_from_stderr():
    hit = detect(summary(), "some noise\nError: 5-hour limit reached ∙ resets 12pm\n", NOW,
                 local_tz=UTC)
    assert (hit.kind, hit.source, hit.reset_at) == (LIMIT, "stderr",
                                                    datetime(2026, 11, 22, 12, tzinfo=UTC))


@pytest.mark.parametrize("text", [
    "I added a test that checks the message \"You've hit your limit · resets 1pm\".",
    "Done. Note: the 5-hour limit reached ∙ resets 12pm wording is parsed now.",
    "Renamed `session_limit` handling; no limits were hit.",
    "Limit reached for retries in the HTTP client; I raised it to 5.",
], ids=["quoted-mid-sentence", "mentioned-mid-line", "unrelated", "other-limit-at-line-start"])
def test_an_agent_talking_about_limits_is_not_a_limit_hit(text):
    assert detect(summary(result_text=text, assistant=text), "", NOW) is None


GEMINI_ADVICE = ("Please wait and try again later. To increase your limits, request a quota "
                 "increase through {}, or switch to another /auth method")


@pytest.mark.parametrize("text,reset", [
    ("[API Error: You exceeded your current quota, please check your plan and billing details."
     "\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_"
     "tier_requests, limit: 10, model: gemini-2.5-flash\nPlease retry in 37.5s.\nSuggested "
     "retry after 37s.]\n" + GEMINI_ADVICE.format("AI Studio"), NOW + timedelta(seconds=37.5)),
    ("[API Error: You have exhausted your daily quota on this model.]\n"
     + GEMINI_ADVICE.format("AI Studio"), None),
    ("[API Error: Resource exhausted. Please try again later.]\n"
     + GEMINI_ADVICE.format("Vertex"), None),
], ids=["per-minute-with-its-wait", "per-day", "vertex"])
def test_gemini_ending_a_session_on_a_429_is_a_limit_its_first_line_the_message(text, reset):
    hit = detect(summary(result_text=text), "", NOW)
    assert (hit.kind, hit.source, hit.message) == (LIMIT, "text", text.splitlines()[0])
    assert hit.reset_at == (reset or NOW + timedelta(minutes=30))
    assert hit.reset_known is (reset is not None)


@pytest.mark.parametrize("text", [
    '[API Error: {"error":{"code":400,"message":"API key not valid. Please pass a valid API '
    'key.","status":"INVALID_ARGUMENT"}}]',
    "gemini said:\n" + GEMINI_ADVICE.format("AI Studio"),
], ids=["gemini-error-that-is-no-429", "the-advice-quoted-by-an-agent"])
def test_no_gemini_429_no_limit(text):
    assert detect(summary(result_text=text, assistant=text), "", NOW) is None


# gemini 0.61's error, exactly, when the API answers 429 for a quota whose limit is 0 (a
# project without that free tier): Google's message, in which gemini reads the zero itself
# and gives up at once; quota_line(metric) is Google's line naming one such quota.
GEMINI_ZERO_PREFIX = (
    "[API Error: You exceeded your current quota, please check your plan and billing details. "
    "For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-"
    "limits. To monitor your current usage, head to: https://ai.dev/rate-limit. ")
METRIC = "generativelanguage.googleapis.com/generate_content_free_tier_{}"


def quota_line(metric="requests", limit="0", model="gemini-2.5-flash"):
    return f"Quota exceeded for metric: {METRIC.format(metric)}, limit: {limit}, model: {model}"


def disabled_message(*quotas):
    shown = "; ".join(f'"{q}"' for q in quotas)
    return (f"the API's quota is 0 ({shown}), so waiting cannot help; use an API key whose "
            "project has that quota, or another model (--model), then start the run again")


@pytest.mark.parametrize("text,quotas", [
    (GEMINI_ZERO_PREFIX + f"\n* {quota_line()}\nPlease retry in 25.465784708s.]\n"
     + GEMINI_ADVICE.format("AI Studio"), [quota_line()]),
    (GEMINI_ZERO_PREFIX + f"\n* {quota_line()}]\n" + GEMINI_ADVICE.format("AI Studio"),
     [quota_line()]),
    (GEMINI_ZERO_PREFIX + "".join(f"\n* {quota_line(m, model='gemini-3.1-pro')}" for m in (
        "input_token_count", "requests", "requests", "input_token_count"))
     + "\nPlease retry in 5.2s.]\n" + GEMINI_ADVICE.format("AI Studio"),
     [quota_line("input_token_count", model="gemini-3.1-pro"),
      quota_line("requests", model="gemini-3.1-pro")]),
    (GEMINI_ZERO_PREFIX + f"\n* {quota_line()}\n* {quota_line('input_token_count', '250000')}"
     "\nPlease retry in 5s.]\n" + GEMINI_ADVICE.format("Vertex"), [quota_line()]),
], ids=["with-the-wait-google-names", "no-wait-named", "google-s-repeated-lines", "vertex"])
def test_a_gemini_429_on_a_quota_of_0_is_disabled_usage_quoting_the_quota(text, quotas):
    """No wait can help: not the one the API names, nor the default one."""
    hit = detect(summary(result_text=text), "", NOW)
    assert (hit.kind, hit.reset_at, hit.source) == (DISABLED, None, "text")
    assert hit.message == disabled_message(*quotas)


def test_more_than_three_quotas_of_0_are_quoted_three_and_counted():
    lines = [quota_line(model=f"gemini-{n}") for n in range(5)]
    text = (GEMINI_ZERO_PREFIX + "".join(f"\n* {line}" for line in lines) + "]\n"
            + GEMINI_ADVICE.format("AI Studio"))
    message = detect(summary(result_text=text), "", NOW).message
    assert message == disabled_message(*lines[:3]).replace('"),', '"; 2 more),')


def test_a_zero_limit_in_other_words_is_quoted_by_its_line():
    text = "[API Error: Quota limit: 0 for this model in project 42]\n" + GEMINI_ADVICE.format(
        "AI Studio")
    hit = detect(summary(result_text=text), "", NOW)
    assert (hit.kind, hit.message) == (DISABLED, disabled_message(
        "API Error: Quota limit: 0 for this model in project 42"))


@pytest.mark.parametrize("limit", ["10", "100", "250000", "0.5"])
def test_a_gemini_429_on_a_quota_above_0_is_still_a_limit_waited_out(limit):
    text = (GEMINI_ZERO_PREFIX + f"\n* {quota_line(limit=limit)}\nPlease retry in 37.5s.\n"
            "Suggested retry after 37s.]\n" + GEMINI_ADVICE.format("AI Studio"))
    hit = detect(summary(result_text=text), "", NOW)
    assert (hit.kind, hit.message) == (LIMIT, text.splitlines()[0].strip())
    assert (hit.reset_at, hit.reset_known) == (NOW + timedelta(seconds=37.5), True)


@pytest.mark.parametrize("text", [
    f"Google said:\n* {quota_line()}\n" + GEMINI_ADVICE.format("AI Studio"),
    f"[API Error: {quota_line()}]",
    f"I looked it up: {quota_line()}.",
], ids=["quoted-by-an-agent", "a-gemini-error-that-is-no-429", "agent-text"])
def test_a_zero_limit_outside_a_gemini_429_is_nothing(text):
    assert detect(summary(result_text=text, assistant=text), "", NOW) is None


def test_a_limit_inside_an_api_error_line_counts_even_mid_line():
    text = 'API Error: 429 {"error":{"message":"You\'ve hit your limit · resets 9pm"}}'
    assert detect(summary(result_text=text), "", NOW, local_tz=UTC).reset_at == \
        datetime(2026, 11, 22, 21, tzinfo=UTC)


@pytest.mark.parametrize("nested", [True, False],
                         ids=["nested-rate-limit-info", "top-level-status"])
def test_a_rejected_rate_limit_event_is_a_limit_hit_with_its_epoch_reset(nested):
    hit = detect(summary(events=[rejected_event(nested=nested)]), "", NOW)
    assert hit.kind == LIMIT and hit.source == "event" and hit.reset_known
    assert hit.reset_at == datetime.fromtimestamp(1795428000, UTC)
    assert hit.limit_type == "five_hour"


def test_a_renderer_that_keeps_only_the_rate_limit_info_dicts_still_works():
    info = rejected_event()["rate_limit_info"]
    hit = detect(summary(events=[{"status": "allowed"}, info]), "", NOW)
    assert hit.kind == LIMIT and hit.reset_at == datetime.fromtimestamp(1795428000, UTC)


def test_the_structural_reset_wins_over_the_reset_parsed_from_text():
    hit = detect(summary(result_text="You've hit your limit · resets 1pm (Asia/Seoul)",
                         events=[rejected_event(resets_at=1795500000)]), "", NOW)
    assert hit.reset_at == datetime.fromtimestamp(1795500000, UTC)
    assert hit.message == "You've hit your limit · resets 1pm (Asia/Seoul)"


def test_a_rejected_event_with_reset_in_milliseconds_is_read_as_seconds():
    hit = detect(summary(events=[rejected_event(resets_at=1795428000000)]), "", NOW)
    assert hit.reset_at == datetime.fromtimestamp(1795428000, UTC)


@pytest.mark.parametrize("info", [
    {"status": "allowed"},
    {"status": "allowed_warning"},
    {"status": "allowed", "overageStatus": "rejected", "isUsingOverage": False,
     "overageDisabledReason": "out_of_credits"},
], ids=["allowed", "allowed-warning", "overage-rejected-but-not-in-use"])
def test_rate_limit_events_that_are_not_rejections_are_ignored(info):
    event = {"type": "rate_limit_event", "rate_limit_info": {"resetsAt": 1795428000, **info}}
    assert detect(summary(events=[event]), "", NOW) is None


def test_extra_usage_running_out_while_in_use_is_a_hit_at_the_overage_reset():
    event = {"type": "rate_limit_event", "rate_limit_info": {
        "status": "allowed", "isUsingOverage": True, "overageStatus": "rejected",
        "resetsAt": 1795428000, "overageResetsAt": 1795431600}}
    assert detect(summary(events=[event]), "", NOW).reset_at == \
        datetime.fromtimestamp(1795431600, UTC)


def test_a_limit_without_reset_time_waits_the_configured_default():
    hit = detect(summary(result_text="You've hit your session limit"), "", NOW,
                 default_wait=timedelta(minutes=7))
    assert hit.reset_at == NOW + timedelta(minutes=7) and not hit.reset_known


@pytest.mark.parametrize("where", ["result", "stderr", "api-error"], ids=str)
def test_admin_disabled_usage_is_its_own_fatal_kind(where):
    text = "Your usage allocation has been disabled by your admin"
    if where == "result":
        hit = detect(summary(result_text=text), "", NOW)
    elif where == "stderr":
        hit = detect(summary(), f"Error: {text}\n", NOW)
    else:
        hit = detect(summary(result_text=f'API Error: 403 {{"message":"{text}"}}'), "", NOW)
    assert hit.kind == DISABLED and hit.reset_at is None


def test_admin_disabled_beats_a_limit_in_the_same_session():
    hit = detect(summary(result_text="Your usage allocation has been disabled by your admin",
                         events=[rejected_event()]), "", NOW)
    assert hit.kind == DISABLED


def test_a_session_without_any_limit_sign_is_none():
    assert detect(summary(result_text="All done.", assistant="All done."), "", NOW) is None
    assert detect(None, "", NOW) is None


class _SummaryObject:
    result_text = "You've hit your limit · resets 1pm (Asia/Seoul)"
    last_assistant_text = None
    rate_limit_events = []
    assistant_texts_tail = []


def test_detect_reads_a_summary_object_with_attributes_like_the_renderers():
    assert detect(_SummaryObject(), "", NOW).kind == LIMIT


def test_a_limit_hit_round_trips_through_its_run_state_dict():
    hit = detect(summary(result_text="You've hit your limit · resets 1pm (Asia/Seoul)"), "", NOW)
    again = LimitHit.from_dict(json.loads(json.dumps(hit.to_dict())))
    assert again == hit


# --- raw stream (a session log): only what the agent said counts --------------------------

def _stream(*events) -> list[str]:
    return [json.dumps(e) for e in events]


def summary_from_stream(lines) -> claude_render.SessionSummary:
    """What the loop hands detect(): the summary of the session's renderer, fed the raw stream."""
    renderer = claude_render.StreamRenderer(io.BytesIO())
    renderer.feed(b"".join((line.encode() if isinstance(line, str) else line) + b"\n"
                           for line in lines))
    renderer.close()
    return renderer.summary


def test_limit_wording_only_in_tool_input_and_tool_output_is_ignored():
    wording = "You've hit your limit · resets 1pm (Asia/Seoul)"
    lines = _stream(
        {"type": "assistant", "message": {"content": [
            {"type": "tool_use", "name": "Bash", "input": {"command": f"echo '{wording}'"}}]}},
        {"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": wording}]}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "Done."}]}},
        {"type": "result", "subtype": "success", "result": "Done.", "is_error": False})
    assert detect(summary_from_stream(lines), "", NOW) is None


def test_a_stream_with_a_rejected_event_and_the_message_is_a_hit():
    lines = _stream(rejected_event(), {"type": "assistant", "message": {"content": [
        {"type": "text", "text": "You've hit your limit · resets 1pm (Asia/Seoul)"}]}})
    lines.insert(1, "not json at all")
    hit = detect(summary_from_stream(lines), "", NOW)
    assert hit.source == "event" and hit.message.startswith("You've hit your limit")


@pytest.mark.parametrize("kind", ["text", "event", "disabled"], ids=str)
def test_the_limit_stub_output_is_detected(kind, tmp_path):
    env = {"PATH": "/usr/bin:/bin", "STUB_LIMIT_KIND": kind,
           "STUB_LIMIT_RESETS_AT": "1795428000"}
    run = subprocess.run([sys.executable, str(STUBS / "claude-limit")], env=env,
                         capture_output=True, timeout=30)
    hit = detect(summary_from_stream(run.stdout.splitlines()), run.stderr.decode(), NOW)
    assert run.returncode == 1
    assert hit.kind == (DISABLED if kind == "disabled" else LIMIT)
    if kind == "event":
        assert hit.source == "event"


# --- reset phrase parsing --------------------------------------------------------------------

RESETS = [
    ("resets 12pm", NOW, datetime(2026, 11, 22, 12, 0, tzinfo=UTC)),
    ("resets 12am", NOW, datetime(2026, 11, 23, 0, 0, tzinfo=UTC)),
    ("resets 9:30pm", NOW, datetime(2026, 11, 22, 21, 30, tzinfo=UTC)),
    ("resets 9am", NOW, datetime(2026, 11, 23, 9, 0, tzinfo=UTC)),
    ("resets 3am (Europe/Berlin)", NOW,
     datetime(2026, 11, 23, 3, 0, tzinfo=ZoneInfo("Europe/Berlin"))),
    ("resets 1pm (Asia/Seoul)", NOW, datetime(2026, 11, 23, 13, 0, tzinfo=ZoneInfo("Asia/Seoul"))),
    ("resets 8pm (Asia/Seoul)", NOW, datetime(2026, 11, 22, 20, 0, tzinfo=ZoneInfo("Asia/Seoul"))),
    ("resets 14:30", NOW, datetime(2026, 11, 22, 14, 30, tzinfo=UTC)),
    ("resets Jan 21, 5am (Etc/GMT-9)", NOW,
     datetime(2027, 1, 21, 5, 0, tzinfo=ZoneInfo("Etc/GMT-9"))),
    ("resets Nov 23 at 4pm (America/Recife)", NOW,
     datetime(2026, 11, 23, 16, 0, tzinfo=ZoneInfo("America/Recife"))),
    ("resets 3pm (Not/AZone)", NOW, datetime(2026, 11, 22, 15, 0, tzinfo=UTC)),
    ("resets 10am", NOW + timedelta(minutes=4), datetime(2026, 11, 22, 10, 0, tzinfo=UTC)),
    ("resets 11:55pm", datetime(2026, 11, 23, 0, 2, tzinfo=UTC),
     datetime(2026, 11, 22, 23, 55, tzinfo=UTC)),
    ("or try again at 6:40 PM.", NOW, datetime(2026, 11, 22, 18, 40, tzinfo=UTC)),
    ("Try again at Jan 2nd, 2027 3:05 AM.", NOW, datetime(2027, 1, 2, 3, 5, tzinfo=UTC)),
    ("Try again at Nov 2nd, 2027 3:05 AM.", NOW, datetime(2027, 11, 2, 3, 5, tzinfo=UTC)),
]


@pytest.mark.parametrize("text,now,expected", RESETS, ids=[
    "noon-later-today", "midnight-rolls-to-tomorrow", "minutes", "morning-already-past-is-tomorrow",
    "zone-berlin-tomorrow", "zone-seoul-past-is-tomorrow", "zone-seoul-later-today", "24h-clock",
    "date-in-january-is-next-year", "date-with-at", "unknown-zone-falls-back-to-local",
    "just-passed-is-now-not-tomorrow", "just-passed-before-midnight", "codex-today",
    "codex-with-date-and-year", "codex-year-far-ahead"])
def test_reset_phrases_become_the_next_absolute_reset_time(text, now, expected):
    got = parse_reset(text, now, local_tz=UTC)
    assert got == expected and got.tzinfo is not None


@pytest.mark.parametrize("text,seconds", [
    ("Please retry in 37.753595579s.", 37.753595579), ("Suggested retry after 37s.", 37),
    ("Please retry in 37.5s.\nSuggested retry after 37s.]", 37.5),
    ("Please retry in 250ms.", 0.25), ("retry in 5 minutes", None), ("no wait here", None),
], ids=["google-message", "gemini-retry-info", "the-longer-of-both", "milliseconds",
        "not-google-s-form", "none"])
def test_a_wait_google_names_is_read_from_now(text, seconds):
    expected = None if seconds is None else NOW + timedelta(seconds=seconds)
    assert retry_after(text, NOW) == expected


@pytest.mark.parametrize("text", ["no time here", "resets 13pm", "resets 5", "resets 25:00",
                                  "resets Feb 30 at 1pm"], ids=str)
def test_phrases_without_a_valid_time_give_no_reset(text):
    assert parse_reset(text, NOW, local_tz=UTC) is None


def test_without_a_zone_the_reset_is_in_the_local_zone_given():
    tokyo = ZoneInfo("Asia/Tokyo")      # 19:00 there
    assert parse_reset("resets 9pm", NOW, local_tz=tokyo) == \
        datetime(2026, 11, 22, 21, 0, tzinfo=tokyo)


def test_without_a_zone_or_local_zone_the_system_local_time_is_used():
    got = parse_reset("resets 9:30pm", NOW)
    local = got.astimezone()
    assert (local.hour, local.minute) == (21, 30) and got > NOW - timedelta(minutes=10)


def test_a_naive_now_is_refused():
    with pytest.raises(ValueError):
        parse_reset("resets 1pm", datetime(2026, 11, 22, 10, 0))


def test_usage_limits_exports_a_small_surface():
    assert set(usage_limits.__all__) == {"LimitHit", "LIMIT", "DISABLED", "detect"}


def test_the_limit_stub_hits_the_limit_only_the_first_n_times(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "STUB_LIMIT_TIMES": "1",
           "STUB_LIMIT_STATE": str(tmp_path / "calls"), "STUB_ACTION": "echo worked"}
    runs = [subprocess.run([sys.executable, str(STUBS / "claude-limit")], env=env,
                           capture_output=True, timeout=30) for _ in range(2)]
    first = detect(summary_from_stream(runs[0].stdout.splitlines()), "", NOW)
    second = detect(summary_from_stream(runs[1].stdout.splitlines()), "", NOW)
    assert (runs[0].returncode, first.kind) == (1, LIMIT)
    assert (runs[1].returncode, runs[1].stdout, second) == (0, b"worked\n", None)
