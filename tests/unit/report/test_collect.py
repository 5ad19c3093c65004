"""The report model from a run's records: damaged, empty and unfinished runs give a clear
report in every format (never a traceback); per-task figures; untrusted text stays text."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ralphpy.report import collect, events, files, render_html, render_md, render_text
from ralphpy.runs import lock as run_lock
from ralphpy.runs import progress
from ralphpy.runs import state as run_state
from synthetic import XSS, make_run

RUN = "20261122T220000Z-aaaaaa"
NO_BACKLOG = {"RALPH_TASK_CMD": "elsewhere"}     # the records alone, no task store read


@pytest.fixture
def ralph_dir(tmp_path: Path) -> Path:
    return tmp_path / ".ralph"


def report_of(ralph_dir: Path, *runs: str):
    report = collect.collect(ralph_dir, list(runs or [RUN]), environ=NO_BACKLOG)
    for render in (render_text.render, render_md.render, render_html.render):
        assert render(report)                     # every format renders, none raises
    json.dumps(report.to_json(), default=str)
    return report


def test_figures_of_a_finished_run(ralph_dir):
    make_run(ralph_dir, RUN, 14)
    r = report_of(ralph_dir)
    assert (r.status, r.mode, len(r.sessions), r.billing) == ("ended", "build", 14, "subscription")
    assert r.outcomes() == {"success": 12, "failure": 2}
    assert r.done == 12 and len(r.tasks) == 12
    retried = r.tasks["t2"]                        # session 3 failed, session 4 retried it
    assert (retried.attempts, retried.outcome, retried.fail_reasons) == (2, "done", [XSS])
    assert r.cost_usd == pytest.approx(sum(0.05 + n % 5 / 10 for n in range(1, 15)))
    assert r.cost_per_done == pytest.approx(r.cost_usd / 12)
    assert r.longest(1)[0].duration_s == max(s.duration_s for s in r.sessions)


@pytest.mark.parametrize("damage", ["torn", "garbage", "both"])
def test_a_damaged_events_file_is_read_as_far_as_it_goes(ralph_dir, damage):
    make_run(ralph_dir, RUN, 10)
    path = progress.events_path(ralph_dir, RUN)
    lines = path.read_bytes().split(b"\n")
    if damage in ("garbage", "both"):
        lines.insert(3, b"\x00\xff not json {{{")
        lines.insert(5, b'["a list, not an event"]')
    data = b"\n".join(lines)
    if damage in ("torn", "both"):
        data = data.rstrip(b"\n")[:-17]            # the run_end line cut mid-write
    path.write_bytes(data)
    r = report_of(ralph_dir)
    assert len(r.sessions) == 10
    if damage != "garbage":
        assert any("cut short" in p for p in r.problems)
    if damage != "torn":
        assert any("2 line(s) of events.jsonl are not events" in p for p in r.problems)
    assert "Could not read everything" in render_text.render(r)


def test_a_run_without_sessions_says_so(ralph_dir):
    make_run(ralph_dir, RUN, 0)
    r = report_of(ralph_dir)
    assert (len(r.sessions), r.done, r.cost_per_done, r.tasks_per_hour) == (0, 0, None, None)
    assert "Tasks: none recorded." in render_text.render(r)
    assert "no session ended yet" in render_html.render(r)
    assert "No task was worked on." in render_md.render(r)


def test_a_run_with_no_files_at_all_is_a_report_of_what_is_missing(ralph_dir):
    (ralph_dir / "runs" / RUN).mkdir(parents=True)
    r = report_of(ralph_dir)
    assert r.status == "unknown" and len(r.problems) == 2
    assert "events.jsonl does not exist yet" in r.problems[0]


def test_a_run_in_progress_shows_its_running_session(ralph_dir):
    make_run(ralph_dir, RUN, 5, ended=False)
    progress.append_event(ralph_dir, RUN, "session_start", n=6, task="t9")
    lock = run_lock.acquire(ralph_dir / "run.lock", RUN)
    try:
        r = report_of(ralph_dir)
    finally:
        run_lock.release(lock)
    assert r.status == "running" and r.sessions[-1].outcome == "running"
    assert r.tasks["t9"].outcome == "running"
    assert "still running" in render_text.render(r)
    after = report_of(ralph_dir)                   # lock gone, never ended: interrupted
    assert after.status == "interrupted" and after.sessions[-1].outcome == "interrupted"


@pytest.mark.parametrize("ended", [False, True], ids=["live", "at-its-end"])
def test_a_session_that_died_with_its_ralph_is_interrupted_in_the_resumed_runs_report(
        ralph_dir, ended):
    """Session 6 never ended: ralph.py was killed and the run resumed. While the resumed run
    works (its lock held, session 7 running) and in the report written at its end (the lock
    still held), session 6 is interrupted, never running, and its task is not running."""
    make_run(ralph_dir, RUN, 5, ended=False)
    add = lambda event, **f: progress.append_event(ralph_dir, RUN, event, **f)  # noqa: E731
    add("session_start", n=6, task="t8")
    add("run_start", mode="build", options={}, resumed=True)
    add("session_start", n=7, task="t9")
    if ended:
        add("session_end", n=7, task="t9", outcome="completed", exit_code=0)
        add("run_end", exit_code=0, reason="All tasks complete. Exiting loop.")
    lock = run_lock.acquire(ralph_dir / "run.lock", RUN)
    try:
        r = report_of(ralph_dir)
    finally:
        run_lock.release(lock)
    by_n = {s.n: s.outcome for s in r.sessions}
    assert by_n[6] == "interrupted"
    assert by_n[7] == ("completed" if ended else "running")
    assert r.tasks["t8"].outcome == "not finished" and r.tasks["t8"].attempts == 1
    assert r.outcomes().get("running", 0) == (0 if ended else 1)


def test_a_run_lasts_as_long_as_its_events_say_not_its_states_whole_seconds(ralph_dir):
    """state.json keeps whole seconds; events.jsonl milliseconds. A run from 10:00:00.700 to
    10:00:01.200 lasted 0.5 s, not the 1 s (or 0 s) its state's times would make of it."""
    state = run_state.RunState(run_id=RUN, mode="build", max_iterations=0)
    state.started_at = "2026-11-22T10:00:00Z"
    state.finish(0, "done")
    state.ended_at = "2026-11-22T10:00:01Z"
    run_state.save(ralph_dir, state)
    path = progress.events_path(ralph_dir, RUN)
    path.write_text(json.dumps({"ts": "2026-11-22T10:00:00.700Z", "event": "run_start",
                                "mode": "build"}) + "\n" +
                    json.dumps({"ts": "2026-11-22T10:00:01.200Z", "event": "run_end",
                                "exit_code": 0, "reason": "done"}) + "\n")
    assert report_of(ralph_dir).elapsed_s == pytest.approx(0.5)


def test_a_usage_limit_session_is_no_attempt_at_its_task(ralph_dir):
    make_run(ralph_dir, RUN, 0, ended=False)
    add = lambda event, **f: progress.append_event(ralph_dir, RUN, event, **f)  # noqa: E731
    add("session_start", n=1, task="t1")
    add("session_end", n=1, task="t1", outcome="failed", exit_code=1, **{"class": "usage_limit"},
        reason="session exited without completing task")
    add("session_start", n=2, task="t1")
    add("session_end", n=2, task="t1", outcome="completed", exit_code=0, **{"class": "success"})
    r = report_of(ralph_dir)
    assert (r.tasks["t1"].attempts, r.tasks["t1"].outcome) == (1, "done")


def test_holds_drift_scope_limit_waits_and_verification_land_on_their_task(ralph_dir):
    make_run(ralph_dir, RUN, 0, ended=False)
    add = lambda event, **f: progress.append_event(ralph_dir, RUN, event, **f)  # noqa: E731
    add("session_start", n=1, task="t1")
    add("session_end", n=1, task="t1", outcome="failed", reason="tests fail", cost_usd=1.5,
        duration_s=60, tokens_in=100, tokens_out=20, **{"class": "failure"})
    add("log", kind="usage_limit_wait", message="5-hour limit", resume_at="x")
    add("log", kind="task_held", task="t1", attempts=3, message="failed 3 times")
    add("log", kind="drift", message="task t2: 2 commit(s) touch files outside its scope")
    add("log", kind="strays", task="t1", message="killed 1 process the agent left ...: 7 x")
    add("log", kind="strays", message="killed 1 process the agent left ...: 8 y")
    add("scope_changed", changes=["task t3 added"], added=["t3"], removed=[])
    add("verify", task="t2", ok=False, exit_code=1)
    add("run_end", exit_code=6, reason="No progress: 3 failures in a row")
    r = report_of(ralph_dir)
    t1 = r.tasks["t1"]
    assert (t1.outcome, t1.hold_reason, t1.limit_waits, t1.tokens) == (
        "held", "failed 3 times", 1, 120)
    assert r.tasks["t2"].notices == ["drift: task t2: 2 commit(s) touch files outside its scope"]
    assert t1.notices == ["strays: killed 1 process the agent left ...: 7 x"]   # --parallel's
    assert r.notices == ["strays: killed 1 process the agent left ...: 8 y"]    # the run's
    assert r.tasks["t2"].verify == "failed (exit 1)"
    assert r.tasks["t3"].notices == ["scope: added"]
    assert r.stops == ["breaker: No progress: 3 failures in a row"]
    assert r.limit_waits[0].seconds is not None and r.scope_changes == ["task t3 added"]



def test_a_task_the_gate_reopened_after_its_session_is_not_done_and_scope_lines_count_once(
        ralph_dir):
    """The verify event's own verdict (a re-check reopens a task done sessions ago); each
    scope_changed event's `new` lines (its `changes` is the running list)."""
    make_run(ralph_dir, RUN, 0, ended=False)
    add = lambda event, **f: progress.append_event(ralph_dir, RUN, event, **f)  # noqa: E731
    add("session_end", n=1, task="t1", outcome="completed")
    add("session_end", n=2, task="t2", outcome="completed")
    add("verify", task="t1", verdict="failed", exit_code=1,
        reason="verify failed on re-check (the tree moved since it passed): `x` exited 1\ntail")
    add("verify", task="t2", verdict="warned", exit_code=0, findings=["test deleted"])
    add("scope_changed", changes=["a added"], new=["a added"])
    add("scope_changed", changes=["a added", "b added"], new=["b added"])
    r = report_of(ralph_dir)
    assert (r.tasks["t1"].outcome, r.tasks["t1"].verify) == ("failed", "failed (exit 1)")
    assert r.tasks["t1"].fail_reasons == [
        "verify failed on re-check (the tree moved since it passed): `x` exited 1"]
    assert (r.tasks["t2"].outcome, r.tasks["t2"].verify) == ("done", "warned (exit 0)")
    assert r.scope_changes == ["a added", "b added"]

def test_sync_conflicts_and_commits_not_on_the_shared_branch_are_notices(ralph_dir):
    """So are commits an interrupted run left unpushed, which its resumption found."""
    make_run(ralph_dir, RUN, 0, ended=False)
    add = lambda event, **f: progress.append_event(ralph_dir, RUN, event, **f)  # noqa: E731
    add("sync", action="start", message="sync: main follows origin/main")
    unpushed = ("sync: main holds 1 commit (task t0) that origin/main lacks, left unpushed when "
                "the run stopped; it goes with the next push")
    add("sync", action="unpushed", message=unpushed, tasks=["t0"], commits=1)
    add("sync", action="rebased", message="sync: main rebased onto origin/main: 2 commits")
    add("sync", action="pushed", message="sync: pushed main to origin/main: 1 commit (task t1)")
    conflict = ("sync: conflict: rebase of main onto origin/main conflicts in a.txt; the commits "
                "are kept on branch ralph/sync/h1-8f3e/t2; main was reset to origin/main; task "
                "t2 reopened")
    add("sync", action="conflict", message=conflict, tasks=["t2"],
        kept="ralph/sync/h1-8f3e/t2", files=["a.txt"])
    gave_up = ("sync: push of main to origin/main still rejected after 5 retries (origin kept "
               "moving); its commits stay here and go with the next push")
    add("sync", action="push_gave_up", message=gave_up, tasks=["t3"])
    add("run_end", exit_code=0, reason="No tasks available. Exiting loop.")
    r = report_of(ralph_dir)
    assert r.notices == [unpushed, conflict, gave_up]
    assert r.tasks["t2"].notices == [
        "sync conflict: reopened; its commits are on branch ralph/sync/h1-8f3e/t2"]
    assert "ralph/sync/h1-8f3e/t2" in render_md.render(r)


def test_untrusted_text_stays_text_in_markdown_and_on_the_terminal(ralph_dir):
    make_run(ralph_dir, RUN, 4, reason=XSS + "\x1b[2J\x1b]0;owned\x07|x")
    r = report_of(ralph_dir)
    md, text = render_md.render(r), render_text.render(r)
    assert "<img" not in md and "&lt;img src=x onerror=alert(1)&gt;" in md and "\\|x" in md
    assert "\x1b" not in text and "\x07" not in text


def test_several_runs_since_a_moment_are_merged(ralph_dir):
    make_run(ralph_dir, RUN, 7)
    make_run(ralph_dir, "20261123T220000Z-bbbbbb", 7)
    old = run_state.read(ralph_dir, RUN)
    old.started_at = "2026-10-01T00:00:00Z"
    run_state.save(ralph_dir, old)
    now = events.epoch("2026-11-24T00:00:00Z")
    assert files.since(ralph_dir, 7 * 86400, now=now) == ["20261123T220000Z-bbbbbb"]
    assert files.since(ralph_dir, 60 * 86400, now=now) == [RUN, "20261123T220000Z-bbbbbb"]
    r = report_of(ralph_dir, RUN, "20261123T220000Z-bbbbbb")
    assert len(r.sessions) == 14 and len({s.key for s in r.sessions}) == 14


def _with_versions(ralph_dir: Path, versions: dict[int, str]) -> None:
    """The run's session_end events naming the agent CLI release session n ran."""
    path = ralph_dir / "runs" / RUN / "events.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        if row["event"] == "session_end" and row["n"] in versions:
            row["agent_version"] = versions[row["n"]]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_the_agent_cli_release_of_each_session_is_shown_in_every_format_escaped(ralph_dir):
    make_run(ralph_dir, RUN, 3)
    _with_versions(ralph_dir, {1: "2.1.328", 2: "2.1.332", 3: XSS})
    r = report_of(ralph_dir)
    assert [s.cli for s in r.sessions] == ["claude 2.1.328", "claude 2.1.332", f"claude {XSS}"]
    text, md, html = render_text.render(r), render_md.render(r), render_html.render(r)
    assert (f"Agent CLI:  claude 2.1.328 (1 session), claude 2.1.332 (1 session), "
            f"claude {XSS} (1 session)\n") in text
    assert "| 2 | " in md and " | claude 2.1.332 | t1 | success | " in md
    assert "<img" not in md and "claude &lt;img src=x onerror=alert(1)&gt;" in md
    assert "<td>claude 2.1.332</td>" in html and "<img" not in html.split("<body", 1)[1]


def test_a_run_whose_sessions_name_no_release_still_names_their_kind_of_agent(ralph_dir):
    make_run(ralph_dir, RUN, 2)
    r = report_of(ralph_dir)
    assert [s.cli for s in r.sessions] == ["claude", "claude"]
    assert "\nAgent CLI:  claude (2 sessions)\n" in render_text.render(r)
    assert "| Agent CLI | claude (2) |" in render_md.render(r)
