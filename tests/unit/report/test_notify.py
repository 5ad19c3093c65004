"""Notifications: a loopback HTTP receiver (127.0.0.1 only), and failing, hanging and slow
command notifiers. Timing is asserted by order (a marker the notifier writes, or never gets to
write), not by wall-clock thresholds."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import wait_for
from loopback import Receiver
from ralphpy.notify import channels, dispatch, events, settings
from ralphpy.report import collect
from ralphpy.report import events as report_events
from ralphpy.runs import progress

RUN = "20261123T010000Z-abcdef"


@pytest.fixture
def receiver():
    made = []

    def make(statuses=None):
        made.append(Receiver(statuses))
        return made[-1]
    yield make
    for r in made:
        r.close()


@pytest.fixture
def ralph_dir(tmp_path: Path) -> Path:
    path = tmp_path / "repo" / ".ralph"
    (path / "runs" / RUN).mkdir(parents=True)
    return path


def notify_events(ralph_dir: Path) -> list[dict]:
    return [e for e in progress.read_events(ralph_dir, RUN) if e.get("kind") == "notify_failed"]


def run_end(ralph_dir: Path, code: int = 0, reason: str = "All tasks complete. Exiting loop."):
    progress.append_event(ralph_dir, RUN, "run_end", exit_code=code, reason=reason)


def test_the_setting_is_one_channel_per_line_with_a_default_timeout():
    cfg = settings.config({"notify": "./hook.sh\n\n  https://example.test/x \ndesktop\n"})
    assert cfg == settings.Config(("./hook.sh", "https://example.test/x", "desktop"), 10.0)
    assert settings.config({"notify": "a", "notify_timeout": 2.5}).timeout_s == 2.5
    assert settings.config({}) is None and settings.config({"notify": "  \n"}) is None


@pytest.mark.parametrize("spec,kind", [("desktop", "desktop"), ("https://h.test/a", "webhook"),
                                       ("command: cat > x", "command"), ("./n.sh --x", "command")],
                         ids=["desktop", "webhook", "prefixed-command", "command"])
def test_a_channel_is_told_by_its_spec(spec, kind):
    assert channels.parse(spec).kind == kind


def test_a_webhook_label_hides_the_path_that_may_hold_a_token():
    assert channels.parse("https://h.test/hook/s3cret").label == "webhook https://h.test/..."


def test_a_run_end_reaches_the_webhook_with_its_category_and_exit_reason(ralph_dir, receiver):
    hook = receiver()
    dispatch.attach(ralph_dir, RUN, {"notify": hook.url})
    run_end(ralph_dir, 5, "Budget exhausted: --max-cost $1.00 reached")
    assert dispatch.detach(ralph_dir, RUN) is True
    [body] = hook.bodies
    assert (body["event"], body["category"], body["exitCode"], body["runId"]) == (
        "run_end", "budget", 5, RUN)
    assert body["title"].startswith("ralph: run stopped (budget): Budget exhausted")
    assert body["project"] == str(ralph_dir.parent)


def test_a_webhook_that_fails_once_is_retried_and_nothing_is_logged(ralph_dir, receiver):
    hook = receiver([500])
    dispatch.attach(ralph_dir, RUN, {"notify": hook.url})
    run_end(ralph_dir)
    assert dispatch.detach(ralph_dir, RUN) is True
    assert len(hook.bodies) == 2 and notify_events(ralph_dir) == []


def test_each_failing_channel_is_logged_once_and_the_others_still_deliver(ralph_dir, receiver,
                                                                         tmp_path):
    hook = receiver([500] * 10)
    out = tmp_path / "got.jsonl"
    dispatch.attach(ralph_dir, RUN, {"notify": f"exit 3\n{hook.url}\ncat >> {out}",
                                     "notify_timeout": 5})
    for slug in ("t1", "t2", "t3"):
        progress.append_event(ralph_dir, RUN, "log", kind="task_held", task=slug,
                              message="failed 3 times")
    run_end(ralph_dir)
    dispatch.detach(ralph_dir, RUN)
    failed = notify_events(ralph_dir)
    assert sorted(e["message"].split(" failed: ")[0] for e in failed) == [
        "notification by command 'exit 3'",
        f"notification by webhook http://{hook.url.split('/')[2]}/..."]
    assert "exit 3" in failed[0]["message"] + failed[1]["message"]
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [g["event"] for g in got] == ["task_held"] * 3 + ["run_end"]
    assert [g["task"] for g in got[:3]] == ["t1", "t2", "t3"]


def test_a_hanging_notifier_never_holds_up_the_run(ralph_dir, tmp_path):
    """The events are appended while the notifier hangs; at the end the run waits for it only
    up to the timeout, then kills its process group: it never gets to write `finished`."""
    started, finished = tmp_path / "started", tmp_path / "finished"
    hang = f"echo $$ > {started}; sleep 300; touch {finished}"
    dispatch.attach(ralph_dir, RUN, {"notify": hang, "notify_timeout": 0.5})
    progress.append_event(ralph_dir, RUN, "log", kind="usage_limit_wait", message="limit",
                          resume_at="2026-11-23T05:00:00+00:00")
    pid = int(wait_for(lambda: started.exists() and started.read_text().strip()))
    for n in range(1, 21):                   # the notifier hangs: the run goes on regardless
        progress.append_event(ralph_dir, RUN, "session_start", n=n, task=f"t{n}")
        progress.append_event(ralph_dir, RUN, "session_end", n=n, task=f"t{n}",
                              outcome="completed")
    assert not finished.exists()
    wait_for(lambda: notify_events(ralph_dir))                # its timeout came, logged once
    run_end(ralph_dir)
    assert dispatch.detach(ralph_dir, RUN) is False          # not everything went out
    assert not finished.exists()
    wait_for(lambda: not _alive(pid))                         # killed with its group
    [failure] = notify_events(ralph_dir)
    assert "timed out after 0.5s and was killed" in failure["message"]
    assert [e["event"] for e in progress.read_events(ralph_dir, RUN)][:3] == [
        "log", "session_start", "session_end"]


def test_a_channel_failing_at_the_run_end_is_logged_once(ralph_dir, tmp_path):
    """A channel that hangs on the last notifications (the run_end): its worker and detach()
    (which logs what the run leaves undelivered, tests/e2e/test_report_cli.py) both see the
    failure at the notify timeout; it is logged once, whichever comes first."""
    dispatch.attach(ralph_dir, RUN, {"notify": "sleep 300", "notify_timeout": 0.5})
    progress.append_event(ralph_dir, RUN, "log", kind="task_held", task="t1", message="x")
    run_end(ralph_dir)
    assert dispatch.detach(ralph_dir, RUN) is False
    [failure] = notify_events(ralph_dir)        # whichever of the two came first, once,
    assert failure["message"].startswith("notification by command 'sleep 300' failed: ")
    assert "exit -9" not in failure["message"]  # never the run's own kill of the command


def test_a_slow_notifier_within_its_timeout_delivers_everything(ralph_dir, tmp_path):
    out = tmp_path / "slow.jsonl"
    dispatch.attach(ralph_dir, RUN, {"notify": f"sleep 0.3; cat >> {out}", "notify_timeout": 20})
    progress.append_event(ralph_dir, RUN, "log", kind="task_held", task="t1", message="x")
    run_end(ralph_dir)
    assert dispatch.detach(ralph_dir, RUN) is True
    assert [json.loads(line)["event"] for line in out.read_text().splitlines()] == [
        "task_held", "run_end"]
    assert notify_events(ralph_dir) == []


def test_a_failed_notification_during_a_limit_wait_does_not_end_the_wait(ralph_dir, tmp_path):
    """A channel that fails logs `notify_failed` into the run's events while the run waits:
    the dispatcher reads that event too, and it is not the run going on."""
    out = tmp_path / "got.jsonl"
    dispatch.attach(ralph_dir, RUN, {"notify": f"exit 3\ncat >> {out}", "notify_timeout": 5})
    progress.append_event(ralph_dir, RUN, "log", kind="usage_limit_wait", message="limit",
                          resume_at="2026-11-23T05:00:00+00:00")
    wait_for(lambda: notify_events(ralph_dir))                 # the failing channel's notice
    progress.append_event(ralph_dir, RUN, "session_start", n=2, task="t2")
    run_end(ralph_dir)
    dispatch.detach(ralph_dir, RUN)
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(g["event"], g.get("next")) for g in got] == [
        ("usage_limit_wait", None), ("usage_limit_wait_end", "session_start"), ("run_end", None)]
    report = collect.collect(ralph_dir, [RUN], environ={"RALPH_TASK_CMD": "elsewhere"})
    [waited] = report.limit_waits
    session = next(e for e in progress.read_events(ralph_dir, RUN)
                   if e["event"] == "session_start")
    assert waited.end == report_events.epoch(session["ts"])   # not the notify_failed's time


def test_a_limit_wait_end_is_told_when_the_run_goes_on():
    tracker = events.Tracker(Path("/tmp/p/.ralph"), RUN)
    wait = {"ts": "t", "event": "log", "kind": "usage_limit_wait", "message": "5-hour limit",
            "resume_at": "2026-11-23T05:00:00+00:00"}
    [start] = tracker.notifications(wait)
    assert start["event"] == "usage_limit_wait" and "until 2026-11-23T05:00" in start["title"]
    assert tracker.notifications({"event": "log", "kind": "resume", "ts": "t"})[0]["event"] == \
        "usage_limit_wait_end"
    assert tracker.notifications({"event": "session_start", "n": 2, "ts": "t"}) == []


def test_other_runs_and_other_events_are_not_notified(ralph_dir, tmp_path):
    out = tmp_path / "got.jsonl"
    dispatch.attach(ralph_dir, RUN, {"notify": f"cat >> {out}"})
    (ralph_dir / "runs" / "other").mkdir()
    progress.append_event(ralph_dir, "other", "run_end", exit_code=0, reason="x")
    progress.append_event(ralph_dir, RUN, "session_end", n=1, outcome="completed")
    progress.append_event(ralph_dir, RUN, "scope_changed", changes=["task t9 added"])
    dispatch.detach(ralph_dir, RUN)
    [got] = [json.loads(line) for line in out.read_text().splitlines()]
    assert got["event"] == "scope_changed" and got["title"].endswith("task t9 added")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_desktop_channel_uses_notify_send_and_says_once_when_it_is_missing(
        ralph_dir, tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    dispatch.attach(ralph_dir, RUN, {"notify": "desktop"})
    run_end(ralph_dir)
    run_end(ralph_dir)
    dispatch.detach(ralph_dir, RUN)
    [missing] = notify_events(ralph_dir)
    assert missing["message"] == ("notification by desktop (notify-send) failed: notify-send is "
                                  "not installed (later failures of this channel are not logged)")
    said = tmp_path / "said"
    fake = bin_dir / "notify-send"
    fake.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {said}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    dispatch.attach(ralph_dir, RUN, {"notify": "desktop"})
    run_end(ralph_dir, 6, "No progress: 3 sessions in a row failed")
    assert dispatch.detach(ralph_dir, RUN) is True
    assert said.read_text().splitlines() == [
        "--app-name=ralph",
        "ralph: run stopped (breaker): No progress: 3 sessions in a row failed (exit 6)",
        "No progress: 3 sessions in a row failed"]


def test_a_question_and_its_default_reach_the_webhook_with_the_command_that_answers(
        ralph_dir, receiver):
    hook = receiver()
    dispatch.attach(ralph_dir, RUN, {"notify": hook.url})
    progress.append_event(ralph_dir, RUN, "log", kind="question", task="t1",
                          message='question on t1: Which DB? (answer: ralph answer t1 "...")',
                          question="Which DB?", answer_with='ralph answer t1 "<answer>"')
    progress.append_event(ralph_dir, RUN, "log", kind="question_default", task="t1",
                          message="question on t1 timed out: took its default answer: SQLite",
                          question="Which DB?", answer="SQLite", by="default")
    assert dispatch.detach(ralph_dir, RUN) is True
    asked, defaulted = hook.bodies
    assert (asked["event"], asked["task"], asked["question"], asked["answerWith"]) == (
        "question", "t1", "Which DB?", 'ralph answer t1 "<answer>"')
    assert asked["title"].startswith("ralph: question on t1: Which DB?")
    assert (defaulted["event"], defaulted["answer"]) == ("question_default", "SQLite")
