"""Black-box: the failure modes of unattended runs through ralph.py, each with a stub agent,
the real task CLI and a real git repo. Each test ends with the documented record (events.jsonl,
progress.md), the task's state and the exit code. Durations are sub-second via the flags."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from conftest import RALPH, ROOT, STUBS, ignore_ralph_dir, install_stub, wait_for
from loophelp import Running, alive

sys.path.insert(0, str(ROOT / "lib"))
from ralphpy.unattended import reset_time  # noqa: E402

# The agent claims a task (so crash safety has something to put back), then becomes $STUB.
CLAIMING = """\
#!/bin/sh
"$RALPH_TASK_SCRIPT" claim > /dev/null
exec "$STUB" "$@"
"""
SPEC_REASON = "session exited without completing task"


def sync(run_task, *slugs: str) -> None:
    lines = "".join(json.dumps({"id": s, "t": f"Task {s}"}) + "\n" for s in slugs)
    assert run_task("plan-sync", input=lines).returncode == 0


def tasks_of(run_task) -> dict[str, dict]:
    out = run_task("_export-json").stdout
    return {row["id"]: row for row in map(json.loads, filter(str.strip, out.splitlines()))}


def the_run(repo: Path) -> Path:
    runs = sorted((repo / ".ralph" / "runs").iterdir(), key=lambda p: p.stat().st_mtime)
    return runs[-1]


def events(repo: Path, name: str | None = None) -> list[dict]:
    lines = (the_run(repo) / "events.jsonl").read_text().splitlines()
    found = [json.loads(line) for line in lines]
    return [e for e in found if name is None or e["event"] == name]


def classes(repo: Path) -> list[str]:
    return [e.get("class") for e in events(repo, "session_end")]


def progress_md(repo: Path) -> str:
    return (repo / ".ralph" / "progress.md").read_text()


def state(repo: Path) -> dict:
    return json.loads((the_run(repo) / "state.json").read_text())


@pytest.fixture
def agent(bin_dir: Path, tmp_path: Path):
    """agent(stub) -> env: `claude` on PATH claims a task, then runs tests/stubs/<stub>."""
    def make(stub: str = "claude", claim: bool = True) -> dict[str, str]:
        if not claim:
            install_stub(bin_dir, "claude", stub)
            return {}
        script = bin_dir / "claude"
        script.write_text(CLAIMING)
        script.chmod(0o755)
        return {"STUB": str(STUBS / stub)}
    return make


# ------------------------------------------------------------------ session ends badly

def test_a_hanging_agent_is_ended_by_the_session_timeout_and_its_task_goes_back_open(
        git_repo, run_ralph, run_task, agent, tmp_path):
    sync(run_task, "t1")
    pidfile = tmp_path / "pids"
    env = {**agent("claude-hang"), "STUB_IGNORE_TERM": "1", "STUB_HANG_CHILD": "1",
           "STUB_PIDFILE": str(pidfile)}
    started = time.monotonic()
    proc = run_ralph("build", "-n", "1", "--session-timeout", "3", "--kill-grace", "0.2",
                     env=env)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 10
    assert "Reached max iterations: 1\nderegistered " in proc.stdout
    assert all(not alive(int(p)) for p in pidfile.read_text().split())   # TERM ignored: KILL
    task = tasks_of(run_task)["t1"]
    assert (task["status"], task["retry_count"]) == ("open", 1)
    assert task["fail_reason"] == "session timeout of 3s reached; agent terminated"
    assert proc.stderr == "session timeout of 3s reached; agent terminated\n"   # not only kept
    end = events(git_repo, "session_end")[0]
    assert (end["class"], end["counts_as_failure"], end["exit_code"]) == ("timeout", True, -9)
    assert end["reason"] == task["fail_reason"]
    assert "| 1 | timeout | session timeout of 3s reached; agent terminated |" in progress_md(git_repo)


def test_a_silent_agent_is_ended_by_the_idle_timeout(git_repo, run_ralph, run_task, agent):
    sync(run_task, "t1")
    proc = run_ralph("build", "-n", "1", "--idle-timeout", "3", "--kill-grace", "0.2",
                     env=agent("claude-silent"))
    assert proc.returncode == 0, proc.stderr
    task = tasks_of(run_task)["t1"]
    assert task["status"] == "open" and task["fail_reason"] == "no agent output for 3s; agent terminated"
    assert proc.stderr == "no agent output for 3s; agent terminated\n"
    assert [e["message"] for e in events(git_repo, "log") if e.get("kind") == "timeout"] == [
        "no agent output for 3s; agent terminated"]
    end = events(git_repo, "session_end")[0]
    assert (end["class"], end["exit_code"]) == ("idle", -15)
    assert "| 1 | idle | no agent output for 3s; agent terminated |" in progress_md(git_repo)


@pytest.mark.parametrize("env,kind,detail", [
    ({"STUB_EXIT": "1"}, "agent_error", "agent exited with status 1"),
    ({"STUB_ACTION": "kill -KILL $PPID"}, "killed_by_signal", "agent killed by SIGKILL (out of memory?)"),
], ids=["exit-1", "sigkill"])
def test_an_agent_that_fails_or_dies_is_classified_and_its_task_failed_with_the_spec_reason(
        git_repo, run_ralph, run_task, agent, env, kind, detail):
    sync(run_task, "t1")
    proc = run_ralph("build", "-n", "1", env={**agent("claude"), **env})
    assert proc.returncode == 0, proc.stderr
    assert "failed t1\n" in proc.stdout
    task = tasks_of(run_task)["t1"]
    assert (task["status"], task["fail_reason"], task["retry_count"]) == ("open", SPEC_REASON, 1)
    end = events(git_repo, "session_end")[0]
    assert (end["class"], end["detail"], end["task"]) == (kind, detail, "t1")
    assert f"| 1 | {kind} | {detail} |" in progress_md(git_repo)


# ------------------------------------------------------------------ usage limits

LIMIT_ENV = ("--limit-wait-margin", "0", "--limit-default-wait", "0.5")


def resumes(stdout: str) -> int:
    """The usage-limit waits a run resumed from: "wait over" after a wait, or "already passed"
    when a loaded machine reached the wait after the sub-second reset time."""
    return len(re.findall(r"^Usage limit: (wait over|reset time already passed), resuming$",
                          stdout, re.M))


# The structural event's resetsAt, RESET_IN seconds after the stub starts (a machine under
# load may take seconds to start it).
RESETTING = """\
#!/bin/sh
export STUB_LIMIT_RESETS_AT=$(( $(date +%s) + ${RESET_IN:-2} ))
exec "$STUB" "$@"
"""


def limit_agent(agent, tmp_path: Path, **env: str) -> dict[str, str]:
    done = '"$RALPH_TASK_SCRIPT" claim >/dev/null; "$RALPH_TASK_SCRIPT" done t1 >/dev/null'
    script = tmp_path / "bin" / "claude"
    script.write_text(RESETTING)
    script.chmod(0o755)
    return {"STUB": str(STUBS / "claude-limit"), "STUB_LIMIT_TIMES": "1",
            "STUB_LIMIT_STATE": str(tmp_path / "limit-calls"), "STUB_ACTION": done, **env}


@pytest.mark.parametrize("wording", [
    "You've hit your session limit",
    "You've hit your individual spend limit",
], ids=["session-limit", "spend-limit"])
def test_a_limit_message_without_reset_time_waits_the_default_and_resumes(
        git_repo, run_ralph, run_task, agent, tmp_path, wording):
    sync(run_task, "t1")
    proc = run_ralph("build", *LIMIT_ENV,
                     env=limit_agent(agent, tmp_path, STUB_LIMIT_MESSAGE=wording))
    assert proc.returncode == 0, proc.stderr
    assert resumes(proc.stdout) == 1
    assert "All tasks complete. Exiting loop.\nderegistered " in proc.stdout
    assert "\r" not in proc.stdout
    assert classes(git_repo) == ["usage_limit", "agent_error"]   # the stub's 2nd run: no result
    assert wording in events(git_repo, "session_end")[0]["detail"]
    waits = [e for e in events(git_repo, "log") if e.get("kind") == "usage_limit_wait"]
    assert len(waits) == 1 and waits[0]["message"] == wording
    assert tasks_of(run_task)["t1"]["status"] == "done"
    assert state(git_repo)["resumeAt"] is None                    # cleared after the wait
    assert "| 1 | usage_limit |" in progress_md(git_repo)



def test_assigned_sessions_that_hit_a_usage_limit_are_not_counted_by_the_respawn_guard(
        git_repo, run_ralph, run_task, agent, tmp_path):
    """--assign: a usage-limit session is waited out, never held against its task (the
    respawn guard takes its spawn back), so three limits in a row do not hold t1."""
    sync(run_task, "t1")
    proc = run_ralph("build", "--assign", *LIMIT_ENV,
                     env=limit_agent(agent, tmp_path, STUB_LIMIT_TIMES="3",
                                     STUB_LIMIT_MESSAGE="You've hit your session limit"))
    assert proc.returncode == 0, proc.stderr
    assert resumes(proc.stdout) == 3
    assert len([e for e in events(git_repo, "log") if e.get("kind") == "usage_limit_wait"]) == 3
    assert "held" not in proc.stderr and "All tasks complete. Exiting loop." in proc.stdout
    assert ("task t1: still open after a session that hit a usage limit (not counted: 0 of 3 "
            "spawns without progress)") in proc.stderr
    assert classes(git_repo) == ["usage_limit"] * 3 + ["agent_error"]
    assert tasks_of(run_task)["t1"]["status"] == "done"

LIMITED_REASON = "usage limit: You've hit your session limit (resume at "


def test_usage_limited_sessions_give_their_task_back_uncounted_so_max_attempts_holds_real_failures(
        git_repo, run_ralph, run_task, agent):
    """Two nights end on a usage limit with t1 claimed: it goes back open with its
    retry_count as it was (`_release`), so the third night holds it after its second real
    failure, not after its first (--max-attempts counts earlier runs through retry_count)."""
    sync(run_task, "t1")
    limited = {**agent("claude-limit"), "STUB_LIMIT_MESSAGE": "You've hit your session limit"}
    for _night in (1, 2):
        proc = run_ralph("build", "-n", "1", "--max-attempts", "2", *LIMIT_ENV, env=limited)
        assert proc.returncode == 0, proc.stderr
        assert "released t1\n" in proc.stdout and "failed t1" not in proc.stdout
        task = tasks_of(run_task)["t1"]
        assert (task["status"], task["assignee"], task["retry_count"], task["held"]) == (
            "open", None, 0, None)
        assert task["fail_reason"].startswith(LIMITED_REASON)
        end = events(git_repo, "session_end")[0]
        assert (end["class"], end["detail"]) == ("usage_limit", task["fail_reason"])
    proc = run_ralph("build", "--max-attempts", "2", *LIMIT_ENV,
                     env={**agent("claude"), "STUB_EXIT": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("failed t1\n") == 2
    reason = f"failed 2 times (--max-attempts 2): {SPEC_REASON} | {SPEC_REASON}"
    assert f"Held task t1: {reason}\n" in proc.stdout
    assert tasks_of(run_task)["t1"]["retry_count"] == 2


def test_an_assigned_session_that_hits_a_usage_limit_releases_its_task_uncounted(
        git_repo, run_ralph, run_task, agent, tmp_path):
    """--assign: ralph's completion check gives the task back (`released t1`), its
    retry_count kept, so the next run's first real failure is its first attempt."""
    sync(run_task, "t1")
    env = limit_agent(agent, tmp_path, STUB_LIMIT_MESSAGE="You've hit your session limit")
    proc = run_ralph("build", "--assign", "-n", "1", *LIMIT_ENV, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "released t1\n" in proc.stdout and "failed t1" not in proc.stdout
    task = tasks_of(run_task)["t1"]
    assert (task["status"], task["assignee"], task["retry_count"]) == ("open", None, 0)
    assert task["fail_reason"].startswith(LIMITED_REASON)
    assert f"task t1: not done after the session: {task['fail_reason']}" in proc.stderr
    proc = run_ralph("build", "--assign", "-n", "1", "--max-attempts", "2", *LIMIT_ENV,
                     env={**env, "STUB_ACTION": "exit 1"})       # the stub's 2nd call: no limit
    assert proc.returncode == 0, proc.stderr
    assert "failed t1\n" in proc.stdout and "Held task" not in proc.stdout
    task = tasks_of(run_task)["t1"]
    assert (task["status"], task["retry_count"], task["held"]) == ("open", 1, None)


def clock_ahead(now: datetime, hours: int, zone: str | None = None) -> str:
    """The hour `hours` after now as a message names it ("3pm"), in `zone` (None: local time,
    as ralph.py reads a reset without a zone): the reset is hours-1 to hours ahead whatever
    the time of day (an hour less across a daylight-saving change)."""
    then = (now + timedelta(hours=hours)).astimezone(ZoneInfo(zone) if zone else None)
    return f"{then.hour % 12 or 12}{'am' if then.hour < 12 else 'pm'}"


@pytest.mark.parametrize("template, zone", [
    ("5-hour limit reached ∙ resets {clock}", None),
    ("You've hit your limit · resets {clock} (Asia/Seoul)", "Asia/Seoul"),
    ("You're out of extra usage · resets {clock}", None),
], ids=["5-hour", "asia-seoul", "extra-usage"])
def test_a_limit_message_with_a_far_reset_persists_the_resume_time_and_exits_5_over_the_cap(
        git_repo, run_ralph, run_task, agent, tmp_path, template, zone):
    now = datetime.now(timezone.utc)
    wording = template.format(clock=clock_ahead(now, 3, zone))
    reset = reset_time.parse_reset(wording, now)
    assert reset is not None and (reset - now).total_seconds() > 3600
    sync(run_task, "t1")
    proc = run_ralph("build", *LIMIT_ENV, "--max-limit-wait", "1",
                     env=limit_agent(agent, tmp_path, STUB_LIMIT_MESSAGE=wording))
    assert proc.returncode == 5, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("Error: usage limit resets at ") and "longer than --max-limit-wait 1s" in line
    assert classes(git_repo) == ["usage_limit"]
    saved = state(git_repo)
    assert abs(datetime.fromisoformat(saved["resumeAt"]) - reset).total_seconds() < 1
    assert saved["exitCode"] == 5
    assert tasks_of(run_task)["t1"]["status"] == "open"


def test_the_structural_event_is_waited_out_until_its_reset_then_the_run_resumes(
        git_repo, run_ralph, run_task, agent, tmp_path):
    sync(run_task, "t1")
    proc = run_ralph("build", *LIMIT_ENV, env=limit_agent(agent, tmp_path,
                                                          STUB_LIMIT_KIND="event-only"))
    assert proc.returncode == 0, proc.stderr
    end = events(git_repo, "session_end")[0]
    assert end["class"] == "usage_limit" and end["counts_as_failure"] is False
    assert end["detail"].startswith("usage limit: rate_limit_event: status rejected (five_hour)")
    assert time.time() >= datetime.fromisoformat(end["resume_at"]).timestamp()
    assert resumes(proc.stdout) == 1
    assert tasks_of(run_task)["t1"]["status"] == "done"


def test_a_restarted_run_honours_the_resume_time_persisted_by_the_run_before(
        git_repo, run_ralph, run_task, agent, tmp_path):
    sync(run_task, "t1")
    env = limit_agent(agent, tmp_path, STUB_LIMIT_KIND="event", RESET_IN="600")
    first = run_ralph("build", *LIMIT_ENV, "--max-limit-wait", "1", env=env)
    assert first.returncode == 5, first.stderr
    resume_at = state(git_repo)["resumeAt"]
    # The next run waits for the persisted time before any session: capped here, so exit 5.
    second = run_ralph("build", *LIMIT_ENV, "--max-limit-wait", "1", env=env)
    assert second.returncode == 5, second.stderr
    assert "Usage limit from an earlier run: resume time " in second.stdout
    assert "longer than --max-limit-wait 1s" in second.stderr
    assert (tmp_path / "limit-calls").read_text() == "1"            # no second session
    assert events(git_repo, "session_end") == []
    assert state(git_repo)["resumeAt"] == resume_at                  # still there for the next try


def test_admin_disabled_usage_stops_the_run_with_exit_7(git_repo, run_ralph, run_task, agent,
                                                        tmp_path):
    sync(run_task, "t1")
    proc = run_ralph("build", env={**agent("claude-limit", claim=False),
                                   "STUB_LIMIT_KIND": "disabled"})
    assert proc.returncode == 7
    assert proc.stderr.strip().splitlines()[-1] == (
        "Error: usage disabled: Your usage allocation has been disabled by your admin")
    assert classes(git_repo) == ["usage_disabled"]
    assert events(git_repo, "run_end")[-1]["exit_code"] == 7
    assert "(exit 7)" in progress_md(git_repo)


def test_admin_disabled_usage_stops_a_parallel_run_with_exit_7(git_repo, base_env, run_ralph,
                                                              run_task, agent):
    ignore_ralph_dir(git_repo, base_env)
    sync(run_task, "t1", "t2", "t3", "t4")
    proc = run_ralph("build", "--parallel", "2", "-n", "8",
                     env={**agent("claude-limit", claim=False), "STUB_LIMIT_KIND": "disabled"})
    assert proc.returncode == 7, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "Error: usage disabled: Your usage allocation has been disabled by your admin")
    assert set(classes(git_repo)) == {"usage_disabled"} and len(classes(git_repo)) <= 2


# gemini 0.61's whole output when the API answers 429 for a quota whose limit is 0, exactly
# (exit 173): the run stops, exit 7, in the single loop as in --parallel.
GEMINI_ZERO_QUOTA = "Quota exceeded for metric: {}, limit: 0, model: gemini-2.5-flash".format(
    "generativelanguage.googleapis.com/generate_content_free_tier_requests")
GEMINI_ZERO_QUOTA_STREAM = "".join(json.dumps(e) + "\n" for e in (
    {"type": "init", "session_id": "2871eb44", "model": "auto"},
    {"type": "message", "role": "user", "content": "/ralph-build"},
    {"type": "result", "status": "error", "error": {"type": "unknown", "message": (
        "[API Error: You exceeded your current quota, please check your plan and billing "
        "details. For more information on this error, head to: https://ai.google.dev/gemini-"
        "api/docs/rate-limits. To monitor your current usage, head to: https://ai.dev/rate-"
        f"limit. \n* {GEMINI_ZERO_QUOTA}\nPlease retry in 25.465784708s.]\nPlease wait and try "
        "again later. To increase your limits, request a quota increase through AI Studio, or "
        "switch to another /auth method")},
     "stats": {"total_tokens": 0, "input_tokens": 0, "output_tokens": 0, "tool_calls": 0}}))


@pytest.mark.parametrize("parallel", [(), ("--parallel", "2")], ids=["single", "parallel"])
def test_a_gemini_quota_of_0_stops_the_run_with_exit_7_and_leaves_the_tasks_open(
        git_repo, base_env, run_ralph, run_task, bin_dir, tmp_path, parallel):
    ignore_ralph_dir(git_repo, base_env)
    sync(run_task, "t1", "t2", "t3")
    install_stub(bin_dir, "gemini", "agent_cli")
    (tmp_path / "stream").write_text(GEMINI_ZERO_QUOTA_STREAM)
    proc = run_ralph("build", "--agent", "gemini", *parallel, "-n", "6", "--max-limit-wait", "1",
                     env={"STUB_STREAM": str(tmp_path / "stream"), "STUB_ACTION": "exit 173"})
    assert proc.returncode == 7, proc.stdout + proc.stderr     # waiting the 25 s: exit 5
    assert proc.stderr.strip().splitlines()[-1] == (
        f'Error: usage disabled: the API\'s quota is 0 ("{GEMINI_ZERO_QUOTA}"), so waiting cannot '
        "help; use an API key whose project has that quota, or another model (--model), then "
        "start the run again")
    assert "Usage limit" not in proc.stdout + proc.stderr
    assert set(classes(git_repo)) == {"usage_disabled"} and len(classes(git_repo)) <= 2
    assert {row["status"] for row in tasks_of(run_task).values()} == {"open"}
    assert state(git_repo).get("resumeAt") is None


# A --parallel session: its task's first session runs into a usage limit whose reset is
# RESET_IN seconds away; every other session commits a file and marks its task done.
LIMITED_ONCE = """\
#!/bin/sh
tid=$(cat "$RALPH_FROZEN_IDS_FILE")
if [ "$tid" = "$LIMITED" ] && mkdir "$LIMITED_MARK" 2>/dev/null; then
  export STUB_LIMIT_KIND=event-only STUB_LIMIT_RESETS_AT=$(( $(date +%s) + ${RESET_IN:-2} ))
  exec "$LIMIT_STUB" "$@"
fi
exec "$WORK_STUB" "$@"
"""
WORK = ('tid=$(cat "$RALPH_FROZEN_IDS_FILE"); echo "$tid" > "out-$tid.txt"; '
        'git add -A >/dev/null && git commit -qm "work on $tid" >/dev/null; '
        '"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null')


def parallel_limit_agent(bin_dir: Path, tmp_path: Path, limited: str, **env: str) -> dict:
    script = bin_dir / "claude"
    script.write_text(LIMITED_ONCE)
    script.chmod(0o755)
    return {"LIMITED": limited, "LIMITED_MARK": str(tmp_path / "limited"),
            "LIMIT_STUB": str(STUBS / "claude-limit"), "WORK_STUB": str(STUBS / "claude"),
            "STUB_ACTION": WORK, **env}


def test_a_parallel_run_waits_out_a_usage_limit_then_runs_the_limited_task_again(
        git_repo, base_env, bin_dir, run_ralph, run_task, tmp_path):
    ignore_ralph_dir(git_repo, base_env)
    sync(run_task, "t1", "t2", "t3", "t4")
    # One failure would end the run: the limited session is not one.
    proc = run_ralph("build", "--parallel", "2", "--max-consecutive-failures", "1", *LIMIT_ENV,
                     env=parallel_limit_agent(bin_dir, tmp_path, "t1"))
    assert proc.returncode == 0, proc.stderr
    assert resumes(proc.stdout) == 1       # its other sessions may outlast the 2 s reset
    assert "All tasks complete. Exiting loop." in proc.stdout
    ends = events(git_repo, "session_end")
    limited = [e for e in ends if e["class"] == "usage_limit"]
    assert [(e["task"], e["counts_as_failure"]) for e in limited] == [("t1", False)]
    assert limited[0]["detail"].startswith("usage limit: rate_limit_event: status rejected")
    assert limited[0]["resume_at"]
    assert sorted(e["task"] for e in ends) == ["t1", "t1", "t2", "t3", "t4"]
    waits = [e for e in events(git_repo, "log") if e.get("kind") == "usage_limit_wait"]
    assert len(waits) == 1
    assert {tid: t["status"] for tid, t in tasks_of(run_task).items()} == dict.fromkeys(
        ("t1", "t2", "t3", "t4"), "done")
    assert sorted(p.name for p in git_repo.glob("out-*.txt")) == [
        "out-t1.txt", "out-t2.txt", "out-t3.txt", "out-t4.txt"]          # every branch merged
    assert state(git_repo)["resumeAt"] is None



def test_a_parallel_sessions_usage_limit_releases_its_task_uncounted(
        git_repo, base_env, bin_dir, run_ralph, run_task, tmp_path):
    """The limited session's task goes back open with its retry_count kept: the next run's
    real failure is its first attempt, which --max-attempts 2 does not hold."""
    ignore_ralph_dir(git_repo, base_env)
    sync(run_task, "t1")
    env = parallel_limit_agent(bin_dir, tmp_path, "t1", RESET_IN="1")
    proc = run_ralph("build", "--parallel", "2", "-n", "1", "--max-attempts", "2", *LIMIT_ENV,
                     env=env)
    assert proc.returncode == 0, proc.stderr
    assert "released t1\n" in proc.stdout and "failed t1" not in proc.stdout
    task = tasks_of(run_task)["t1"]
    assert (task["status"], task["assignee"], task["retry_count"]) == ("open", None, 0)
    assert task["fail_reason"].startswith("usage limit: rate_limit_event: status rejected")
    assert f"[t1] failed: {task['fail_reason']}" in proc.stdout
    proc = run_ralph("build", "--parallel", "2", "--max-attempts", "2", *LIMIT_ENV,
                     env={**env, "STUB_ACTION": "exit 1"})
    assert proc.returncode == 0, proc.stderr
    assert "failed t1\n" in proc.stdout and "Held task" not in proc.stdout
    task = tasks_of(run_task)["t1"]
    assert (task["status"], task["retry_count"], task["held"]) == ("open", 1, None)


@pytest.mark.parametrize("loop", [[], ["--parallel", "2"]], ids=["single", "parallel"])
def test_a_usage_limit_in_the_last_allowed_session_is_not_waited_out(
        git_repo, base_env, bin_dir, run_ralph, run_task, agent, tmp_path, loop):
    """-n 1: no session is left after the limited one, so the run ends at once (exit 0, the
    iteration limit's line) instead of waiting ten minutes to start nothing."""
    ignore_ralph_dir(git_repo, base_env)
    sync(run_task, "t1")
    env = (parallel_limit_agent(bin_dir, tmp_path, "t1", RESET_IN="600") if loop else
           limit_agent(agent, tmp_path, STUB_LIMIT_KIND="event", RESET_IN="600"))
    proc = run_ralph("build", "-n", "1", *loop, *LIMIT_ENV, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Usage limit: waiting" not in proc.stdout
    line = next(x for x in proc.stdout.splitlines() if x.startswith("Usage limit: "))
    assert line.startswith("Usage limit: not waited out: no session is left to run (")
    assert "Reached max iterations: 1" in proc.stdout
    assert [e["class"] for e in events(git_repo, "session_end")] == ["usage_limit"]
    assert [e["message"] for e in events(git_repo, "log")
            if e.get("kind") == "usage_limit_not_waited"] == [line]
    assert tasks_of(run_task)["t1"]["status"] == "open"
    assert state(git_repo)["resumeAt"]                 # the next run waits for the reset first
    assert (f"Limit:      resets {state(git_repo)['resumeAt']}; the next run waits until then\n"
            in run_ralph("status").stdout)

def test_a_parallel_run_whose_usage_limit_resets_past_the_cap_ends_its_sessions_then_exits_5(
        git_repo, base_env, bin_dir, run_ralph, run_task, tmp_path):
    ignore_ralph_dir(git_repo, base_env)
    together(run_task, "t1", "t2", "t3")
    # t2 works on until t1's session has ended on its limit (for 20 s at most)
    work = (f'n=0; until grep -qs usage_limit "{git_repo}"/.ralph/runs/*/events.jsonl || '
            f'[ $n -ge 400 ]; do n=$((n+1)); sleep 0.05; done; {WORK}')
    proc = run_ralph("build", "--parallel", "2", "--max-limit-wait", "1", *LIMIT_ENV,
                     env=parallel_limit_agent(bin_dir, tmp_path, "t1", RESET_IN="600",
                                              STUB_ACTION=work))
    assert proc.returncode == 5, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("Error: usage limit resets at ") and "longer than --max-limit-wait 1s" in line
    tasks = tasks_of(run_task)
    assert tasks["t1"]["status"] == "open"
    assert tasks["t2"]["status"] == "done" and (git_repo / "out-t2.txt").exists()   # merged
    assert tasks["t3"]["status"] == "open"                  # no session after the limit
    assert sorted(e["task"] for e in events(git_repo, "session_end")) == ["t1", "t2"]
    assert state(git_repo)["resumeAt"]                      # for the next run to honour
    assert not list((git_repo / ".ralph").glob("worktrees/*"))


@pytest.mark.parametrize("how, code, line", [
    ("SIGINT", 130, None),
    ("SIGHUP", 0, "Stopped: SIGHUP received while waiting for the usage limit"),
    ("ctl stop", 0, "Stopped: `ralph ctl stop` requested while waiting for the usage limit"),
], ids=["sigint", "sighup", "ctl-stop"])
def test_a_parallel_runs_usage_limit_wait_ends_on_a_signal_or_a_stop_request(
        git_repo, base_env, bin_dir, run_task, tmp_path, how, code, line):
    ignore_ralph_dir(git_repo, base_env)
    sync(run_task, "t1", "t2")
    env = {**base_env, **parallel_limit_agent(bin_dir, tmp_path, "t1", RESET_IN="600")}
    run = Running(["build", "--parallel", "2", *LIMIT_ENV], cwd=git_repo, env=env)
    try:
        wait_for(lambda: "Usage limit: waiting until " in run.stdout, timeout=30)
        if how == "ctl stop":
            subprocess.run([sys.executable, str(RALPH), "ctl", "stop"], cwd=git_repo, env=env,
                           check=True, capture_output=True)
        else:
            os.kill(run.proc.pid, getattr(signal, how))
        assert run.wait() == code, run.stderr
        if line is not None:
            assert f"{line}\n" in run.stdout
        assert [e["task"] for e in events(git_repo, "session_end")] == ["t1"]
        assert tasks_of(run_task)["t1"]["status"] == "open"
        assert events(git_repo, "run_end")[-1]["exit_code"] == code
    finally:
        run.kill()


# ------------------------------------------------------------------ --parallel: stop, pause, budgets

# A --parallel session marks its start, waits for the test's release, then does its work.
PARALLEL_WAITING = ('tid=$(cat "$RALPH_FROZEN_IDS_FILE"); touch "$MARKS/started-$tid"; '
                    'while [ ! -f "$MARKS/release" ]; do sleep 0.02; done; ' + WORK)


def together(run_task, *tids: str) -> None:
    """Tasks of components of their own, so --parallel runs them together (untagged tasks
    run alone)."""
    for tid in tids:
        assert run_task("create", tid, f"Task {tid}", "-c", f"component:{tid}").returncode == 0


def parallel_agent(bin_dir: Path, tmp_path: Path, stub: str = "claude", **env: str) -> dict:
    install_stub(bin_dir, "claude", stub)
    marks = tmp_path / "marks"
    marks.mkdir()
    return {"STUB_ACTION": PARALLEL_WAITING, "MARKS": str(marks), **env}


def started(tmp_path: Path) -> list[str]:
    return sorted(p.name.removeprefix("started-") for p in (tmp_path / "marks").glob("started-*"))


@pytest.mark.parametrize("how, line", [
    ("ctl stop", "Stopped: `ralph ctl stop` requested; the last session finished"),
    ("SIGHUP", "Stopped: SIGHUP received; the last session finished"),
], ids=["ctl-stop", "sighup"])
def test_a_stop_request_lets_a_parallel_runs_sessions_finish_and_starts_no_more(
        git_repo, base_env, bin_dir, run_task, tmp_path, how, line):
    ignore_ralph_dir(git_repo, base_env)
    together(run_task, "t1", "t2", "t3", "t4")
    env = {**base_env, **parallel_agent(bin_dir, tmp_path)}
    run = Running(["build", "--parallel", "2"], cwd=git_repo, env=env)
    try:
        wait_for(lambda: len(started(tmp_path)) == 2, timeout=30)
        if how == "ctl stop":
            subprocess.run([sys.executable, str(RALPH), "ctl", "stop"], cwd=git_repo, env=env,
                           check=True, capture_output=True)
        else:
            os.kill(run.proc.pid, signal.SIGHUP)
        (tmp_path / "marks" / "release").write_text("")       # the sessions end after it
        assert run.wait(timeout=60) == 0, run.stderr
        assert f"{line}\n" in run.stdout
        ran = started(tmp_path)
        assert len(ran) == 2                                   # no session after the request
        ends = events(git_repo, "session_end")
        assert sorted((e["task"], e["outcome"]) for e in ends) == [(t, "completed") for t in ran]
        tasks = tasks_of(run_task)
        assert {t: tasks[t]["status"] for t in tasks} == {
            t: "done" if t in ran else "open" for t in ("t1", "t2", "t3", "t4")}
        assert sorted(p.name for p in git_repo.glob("out-*.txt")) == [f"out-{t}.txt" for t in ran]
        assert [e["message"] for e in events(git_repo, "log") if e.get("kind") == "stop"] == [line]
        assert events(git_repo, "run_end")[-1]["exit_code"] == 0
        assert not (git_repo / ".ralph" / "STOP").exists()
    finally:
        run.kill()


def test_ctl_pause_holds_a_parallel_runs_next_sessions_until_resume(git_repo, base_env, bin_dir,
                                                                    run_task, tmp_path):
    ignore_ralph_dir(git_repo, base_env)
    together(run_task, "t1", "t2", "t3", "t4")
    env = {**base_env, **parallel_agent(bin_dir, tmp_path)}
    ctl = [sys.executable, str(RALPH), "ctl"]
    run = Running(["build", "--parallel", "2"], cwd=git_repo, env=env)
    try:
        wait_for(lambda: len(started(tmp_path)) == 2, timeout=30)
        subprocess.run(ctl + ["pause"], cwd=git_repo, env=env, check=True, capture_output=True)
        (tmp_path / "marks" / "release").write_text("")
        wait_for(lambda: "Paused: " in run.stdout, timeout=30)   # once both sessions ended
        assert len(events(git_repo, "session_end")) == 2
        assert len(started(tmp_path)) == 2                       # none started while paused
        subprocess.run(ctl + ["resume"], cwd=git_repo, env=env, check=True, capture_output=True)
        assert run.wait(timeout=60) == 0, run.stderr
        assert "Resumed\n" in run.stdout and "All tasks complete. Exiting loop." in run.stdout
        assert started(tmp_path) == ["t1", "t2", "t3", "t4"]
        assert {t["status"] for t in tasks_of(run_task).values()} == {"done"}
    finally:
        run.kill()


@pytest.mark.parametrize("how, code", [("SIGINT", 130), ("ctl stop", 0)],
                         ids=["sigint", "ctl-stop"])
def test_a_paused_parallel_run_ends_on_ctrl_c_or_a_stop_request(git_repo, base_env, bin_dir,
                                                                 run_task, tmp_path, how, code):
    ignore_ralph_dir(git_repo, base_env)
    together(run_task, "t1", "t2")
    env = {**base_env, **parallel_agent(bin_dir, tmp_path)}
    ctl = [sys.executable, str(RALPH), "ctl"]
    subprocess.run(ctl + ["pause"], cwd=git_repo, env=env, check=True, capture_output=True)
    run = Running(["build", "--parallel", "2"], cwd=git_repo, env=env)
    try:
        wait_for(lambda: "Paused: " in run.stdout, timeout=30)
        if how == "ctl stop":
            subprocess.run(ctl + ["stop"], cwd=git_repo, env=env, check=True, capture_output=True)
        else:
            os.kill(run.proc.pid, signal.SIGINT)
        assert run.wait(timeout=30) == code, run.stderr
        assert started(tmp_path) == []
        assert events(git_repo, "run_end")[-1]["exit_code"] == code
        if how == "ctl stop":
            assert "Stopped: `ralph ctl stop` requested; the last session finished\n" in run.stdout
    finally:
        run.kill()


def test_a_parallel_run_ends_once_its_sessions_cost_reaches_max_cost(
        git_repo, base_env, bin_dir, run_ralph, run_task, tmp_path):
    ignore_ralph_dir(git_repo, base_env)
    sync(run_task, "t1", "t2", "t3")                 # untagged: one session at a time
    env = parallel_agent(bin_dir, tmp_path, "claude-cost", STUB_COSTS="0.5,1,2",
                         STUB_COST_STATE=str(tmp_path / "cost-calls"), STUB_ACTION=WORK)
    proc = run_ralph("build", "--parallel", "2", "--max-cost", "1.2", env=env)
    assert proc.returncode == 5, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "Error: budget --max-cost 1.20 USD reached: 2 session(s) cost 1.5000 USD in total")
    ends = events(git_repo, "session_end")
    assert [(e["task"], e["cost_usd"], e["outcome"]) for e in ends] == [
        ("t1", 0.5, "completed"), ("t2", 1, "completed")]
    assert tasks_of(run_task)["t3"]["status"] == "open"
    assert state(git_repo)["extra"]["guards"]["total_cost_usd"] == 1.5   # a resume keeps it
    assert events(git_repo, "run_end")[-1]["exit_code"] == 5


def test_a_parallel_budget_stop_counts_the_sessions_that_ended_after_it_tripped(
        git_repo, base_env, bin_dir, run_ralph, run_task, tmp_path):
    """t1's session trips --max-cost while t2's runs on; t2's cost is in the final line."""
    ignore_ralph_dir(git_repo, base_env)
    together(run_task, "t1", "t2")
    wait = (f'[ "$(cat "$RALPH_FROZEN_IDS_FILE")" = t2 ] && until grep -qs session_end '
            f'"{git_repo}"/.ralph/runs/*/events.jsonl; do sleep 0.05; done; {WORK}')
    env = parallel_agent(bin_dir, tmp_path, "claude-cost", STUB_COSTS="2,2",
                         STUB_COST_STATE=str(tmp_path / "cost-calls"), STUB_ACTION=wait)
    proc = run_ralph("build", "--parallel", "2", "--max-cost", "1", env=env)
    assert proc.returncode == 5, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "Error: budget --max-cost 1.00 USD reached: 2 session(s) cost 4.0000 USD in total")
    assert [e["task"] for e in events(git_repo, "session_end")] == ["t1", "t2"]


def test_a_parallel_run_past_max_runtime_lets_its_sessions_finish_then_exits_5(
        git_repo, base_env, bin_dir, run_ralph, run_task, tmp_path):
    ignore_ralph_dir(git_repo, base_env)
    together(run_task, "t1", "t2", "t3", "t4")
    action = ('tid=$(cat "$RALPH_FROZEN_IDS_FILE"); touch "$MARKS/started-$tid"; sleep 1.2; '
              + WORK)                                  # each session outlasts the budget
    proc = run_ralph("build", "--parallel", "2", "--max-runtime", "1",
                     env=parallel_agent(bin_dir, tmp_path, STUB_ACTION=action))
    assert proc.returncode == 5, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "Error: budget --max-runtime 1s reached: the run has been going for ")
    ran = started(tmp_path)
    assert 1 <= len(ran) <= 2                          # those started within the first second
    assert sorted((e["task"], e["outcome"]) for e in events(git_repo, "session_end")) == [
        (t, "completed") for t in ran]                 # ran to their end and were merged
    tasks = tasks_of(run_task)
    assert {t: tasks[t]["status"] for t in tasks} == {
        t: "done" if t in ran else "open" for t in ("t1", "t2", "t3", "t4")}


# ------------------------------------------------------------------ breaker, attempts, budgets

def test_sessions_that_change_nothing_trip_the_breaker_with_exit_6(git_repo, run_ralph,
                                                                   run_task, agent):
    sync(run_task, "t1")
    proc = run_ralph("build", env=agent("claude", claim=False))
    assert proc.returncode == 6
    assert proc.stderr.strip().splitlines()[-1] == (
        "Error: no progress: 3 sessions in a row changed neither the backlog nor git HEAD "
        "(--max-idle-sessions 3)")
    assert len(events(git_repo, "session_end")) == 3
    assert "(exit 6)" in progress_md(git_repo)


def test_with_an_iteration_limit_the_breaker_is_off_unless_given(git_repo, run_ralph, run_task,
                                                                  agent):
    sync(run_task, "t1")
    env = agent("claude", claim=False)
    proc = run_ralph("build", "-n", "4", env=env)
    assert (proc.returncode, "Reached max iterations: 4\nderegistered" in proc.stdout) == (0, True)
    proc = run_ralph("build", "-n", "4", "--max-idle-sessions", "2", env=env)
    assert proc.returncode == 6


def test_consecutive_failures_trip_the_breaker_even_with_commits(git_repo, run_ralph, run_task,
                                                                 agent):
    sync(run_task, "t1")
    env = {**agent("claude", claim=False), "STUB_EXIT": "1",
           "STUB_ACTION": "git commit -q --allow-empty -m step"}
    proc = run_ralph("build", "--max-consecutive-failures", "2", env=env)
    assert proc.returncode == 6
    assert proc.stderr.strip().splitlines()[-1] == (
        "Error: no progress: 2 sessions in a row failed (--max-consecutive-failures 2); "
        "last: agent exited with status 1")



def test_sessions_that_finish_their_task_are_no_failures_whatever_the_agents_exit(
        git_repo, run_ralph, run_task, agent):
    """The breaker counts sessions that made no progress: a session that marked its task done
    and then exited 1 is progress, as a --parallel run counts it, so six such sessions do
    not stop the run at --max-consecutive-failures 5."""
    sync(run_task, *(f"t{n}" for n in range(1, 7)))
    done = ('id=$("$RALPH_TASK_SCRIPT" claim | sed -n "s/^id: //p"); '
            '"$RALPH_TASK_SCRIPT" done "$id"')
    proc = run_ralph("build", env={**agent("claude", claim=False), "STUB_EXIT": "1",
                                   "STUB_ACTION": done + " >/dev/null"})
    assert proc.returncode == 0, proc.stderr
    assert "All tasks complete. Exiting loop." in proc.stdout
    ends = events(git_repo, "session_end")
    assert [(e["class"], e["counts_as_failure"]) for e in ends] == [("agent_error", False)] * 6
    assert all(t["status"] == "done" for t in tasks_of(run_task).values())

def test_a_hold_reason_an_agent_wrote_is_printed_with_its_escapes_shown(
        git_repo, run_ralph, run_task, agent):
    """The reason of `task fail` comes from the agent: the `Held task` line ralph prints shows
    its escape sequences as text, as every line ralph prints does."""
    sync(run_task, "t1")
    hostile = 'bad \033[2J\033]0;pwned\007'
    fail = ('id=$("$RALPH_TASK_SCRIPT" list --status active --markdown | sed -n "s/^id: //p"); '
            f'"$RALPH_TASK_SCRIPT" fail "$id" --reason "$(printf \'{hostile}\')" >/dev/null')
    proc = run_ralph("build", "--max-attempts", "1",
                     env={**agent("claude"), "STUB_ACTION": fail, "STUB_EXIT": "1"})
    assert proc.returncode == 0, proc.stderr
    shown = "bad \\x1b[2J\\x1b]0;pwned\\x07"
    assert f"Held task t1: failed 1 times (--max-attempts 1): {shown}\n" in proc.stdout
    assert not any(c in proc.stdout + proc.stderr for c in "\x1b\x07")


def test_a_task_failing_max_attempts_times_is_held_with_its_reasons_and_skipped(
        git_repo, run_ralph, run_task, agent):
    sync(run_task, "t1")
    proc = run_ralph("build", "--max-attempts", "2", env={**agent("claude"), "STUB_EXIT": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("failed t1\n") == 2
    # plan-status counts a held task as blocked: 0 open, 0 active
    # (docs/contract/ralph-cli.md s.15.6); the run says so instead of "All tasks complete", as
    # --assign does
    assert ("No tasks left to claim, 1 held: t1. Exiting loop.\n"
            "Release a held task with: ralph task _unhold <id>\nderegistered ") in proc.stdout
    reason = f"failed 2 times (--max-attempts 2): {SPEC_REASON} | {SPEC_REASON}"
    assert f"Held task t1: {reason}\n" in proc.stdout
    assert tasks_of(run_task)["t1"]["held"] == reason
    held = [e for e in events(git_repo, "log") if e.get("kind") == "task_held"]
    assert [(e["task"], e["attempts"]) for e in held] == [("t1", 2)]
    assert events(git_repo, "session_end")[-1]["held"] == ["t1"]


@pytest.mark.parametrize("mode", [[], ["--assign"]], ids=["agent-picks", "assign"])
def test_a_task_the_agent_fails_itself_counts_its_attempts_and_is_held(
        git_repo, run_ralph, run_task, agent, mode):
    """The build skill tells an agent that cannot finish to `task fail` its task: the session
    then leaves nothing active for crash safety, and the task was neither recorded nor
    counted, so --max-attempts never held it and the run spent every session on it."""
    sync(run_task, "t1", "t2")
    gives_up = ('id=$("$RALPH_TASK_SCRIPT" claim t1 | sed -n "s/^id: //p"); '
                '[ -n "$id" ] || id=$(sed -n \'s/.*"id": *"\\([^"]*\\)".*/\\1/p\' '
                '.ralph/current-task.json); '
                '"$RALPH_TASK_SCRIPT" fail "$id" --reason "blocked: no access" >/dev/null')
    proc = run_ralph("build", "-n", "5", "--max-attempts", "2", *mode,
                     env={**agent("claude", claim=False), "STUB_ACTION": gives_up})
    assert proc.returncode == 0, proc.stderr
    reason = "failed 2 times (--max-attempts 2): blocked: no access | blocked: no access"
    assert f"Held task t1: {reason}\n" in proc.stdout
    assert tasks_of(run_task)["t1"]["held"] == reason
    ends = events(git_repo, "session_end")
    assert [e["task"] for e in ends[:2]] == ["t1", "t1"]
    assert [e["outcome"] for e in ends[:2]] == ["failed", "failed"]
    state = json.loads(next(git_repo.glob(".ralph/runs/*/state.json")).read_text())
    assert [(f["task"], f["reason"]) for f in state["failed"][:2]] == [
        ("t1", "blocked: no access")] * 2


def test_a_parallel_task_the_agent_fails_itself_counts_an_attempt(
        git_repo, base_env, bin_dir, run_ralph, run_task, tmp_path):
    ignore_ralph_dir(git_repo, base_env)
    sync(run_task, "t1", "t2")
    action = ('tid=$(cat "$RALPH_FROZEN_IDS_FILE"); [ "$tid" = t1 ] || { ' + WORK + '; exit 0; }; '
              '"$RALPH_TASK_SCRIPT" fail t1 --reason "blocked: no access" >/dev/null')
    env = parallel_agent(bin_dir, tmp_path, STUB_ACTION=action)
    proc = run_ralph("build", "--parallel", "2", "--max-attempts", "1", env=env)
    assert proc.returncode == 0, proc.stderr
    reason = "failed 1 times (--max-attempts 1): blocked: no access"
    assert f"Held task t1: {reason}\n" in proc.stdout
    assert "[t1] failed: blocked: no access" in proc.stdout
    tasks = tasks_of(run_task)
    assert (tasks["t1"]["held"], tasks["t2"]["status"]) == (reason, "done")


def test_parallel_runs_hold_a_task_failed_max_attempts_times_counting_earlier_runs(
        git_repo, base_env, bin_dir, run_ralph, run_task, tmp_path):
    ignore_ralph_dir(git_repo, base_env)
    sync(run_task, "t1", "t2")
    # t1's sessions exit without finishing it (each run starts a task once); t2's finish it
    action = f'[ "$(cat "$RALPH_FROZEN_IDS_FILE")" = t1 ] && exit 1; {WORK}'
    env = parallel_agent(bin_dir, tmp_path, STUB_ACTION=action)
    first = run_ralph("build", "--parallel", "2", "--max-attempts", "2", env=env)
    assert first.returncode == 0, first.stderr
    assert "Held task" not in first.stdout
    assert tasks_of(run_task)["t1"]["status"] == "open" and not tasks_of(run_task)["t1"]["held"]
    second = run_ralph("build", "--parallel", "2", "--max-attempts", "2", env=env)
    assert second.returncode == 0, second.stderr
    # its second attempt, the first one of this run: the earlier run's counts (retry_count)
    reason = f"failed 2 times (--max-attempts 2): {SPEC_REASON}"
    assert f"Held task t1: {reason}\n" in second.stdout
    assert "No tasks left to claim, 1 held: t1. Exiting loop.\n" in second.stdout
    tasks = tasks_of(run_task)
    assert (tasks["t1"]["held"], tasks["t2"]["status"]) == (reason, "done")
    held = [e for e in events(git_repo, "log") if e.get("kind") == "task_held"]
    assert [(e["task"], e["attempts"]) for e in held] == [("t1", 2)]
    assert [e.get("held") for e in events(git_repo, "session_end")] == [["t1"]]
    third = run_ralph("build", "--parallel", "2", "--max-attempts", "2", env=env)
    assert third.returncode == 0 and events(git_repo, "session_end") == []   # not run again


def test_reported_costs_end_the_run_after_the_session_that_reaches_max_cost(
        git_repo, run_ralph, run_task, agent, tmp_path):
    sync(run_task, "t1", "t2", "t3")
    env = {**agent("claude-cost", claim=False), "STUB_COSTS": "0.5,1,2",
           "STUB_COST_STATE": str(tmp_path / "cost-calls"),
           "STUB_ACTION": "git commit -q --allow-empty -m step"}
    proc = run_ralph("build", "--max-cost", "1.2", env=env)
    assert proc.returncode == 5
    assert proc.stderr.strip().splitlines()[-1] == (
        "Error: budget --max-cost 1.20 USD reached: 2 session(s) cost 1.5000 USD in total")
    assert [e["cost_usd"] for e in events(git_repo, "session_end")] == [0.5, 1]
    assert classes(git_repo) == ["success", "success"]
    assert "(exit 5)" in progress_md(git_repo)


def test_max_runtime_ends_the_run_after_the_current_session(git_repo, run_ralph, run_task, agent):
    sync(run_task, "t1")
    env = {**agent("claude-cost", claim=False), "STUB_ACTION": "sleep 0.6; git commit -q --allow-empty -m s"}
    proc = run_ralph("build", "--max-runtime", "0.5", env=env)
    assert proc.returncode == 5
    assert proc.stderr.strip().splitlines()[-1].startswith("Error: budget --max-runtime 0s reached")
    assert len(events(git_repo, "session_end")) == 1


# ------------------------------------------------------------------ ctl, SIGHUP, logs

WAITING_AGENT = ('n=$(cat "$COUNT" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$COUNT"; '
                 'touch "$COUNT.started.$n"; while [ ! -f "$RELEASE" ]; do sleep 0.02; done')


def waiting_env(agent, tmp_path: Path) -> dict[str, str]:
    return {**agent("claude"), "STUB_ACTION": WAITING_AGENT, "COUNT": str(tmp_path / "n"),
            "RELEASE": str(tmp_path / "release")}


def test_ctl_stop_finishes_the_current_session_then_exits_0(git_repo, base_env, run_task,
                                                            agent, tmp_path):
    sync(run_task, "t1", "t2")
    env = {**base_env, **waiting_env(agent, tmp_path)}
    run = Running(["build"], cwd=git_repo, env=env)
    try:
        wait_for(lambda: (tmp_path / "n.started.1").exists())
        ctl = subprocess.run([sys.executable, str(RALPH), "ctl", "stop"], cwd=git_repo, env=env,
                             capture_output=True, text=True)
        assert ctl.returncode == 0
        assert run.proc.poll() is None                      # the session is not interrupted
        (tmp_path / "release").write_text("")
        assert run.wait() == 0
        assert "Stopped: `ralph ctl stop` requested; the last session finished\n" in run.stdout
        assert not (tmp_path / "n.started.2").exists()
        assert not (git_repo / ".ralph" / "STOP").exists()
        stops = [e for e in events(git_repo, "log") if e.get("kind") == "stop"]
        assert len(stops) == 1
        assert tasks_of(run_task)["t1"]["status"] == "open"
    finally:
        run.kill()


def test_ctl_pause_holds_the_next_session_until_resume(git_repo, base_env, run_task, agent,
                                                       tmp_path):
    sync(run_task, "t1")
    env = {**base_env, **waiting_env(agent, tmp_path)}
    ctl = [sys.executable, str(RALPH), "ctl"]
    subprocess.run(ctl + ["pause"], cwd=git_repo, env=env, check=True, capture_output=True)
    (tmp_path / "release").write_text("")
    run = Running(["build", "-n", "1"], cwd=git_repo, env=env)
    try:
        wait_for(lambda: "Paused: " in run.stdout)
        assert not (tmp_path / "n.started.1").exists()
        status = subprocess.run([sys.executable, str(RALPH), "status"], cwd=git_repo, env=env,
                                capture_output=True, text=True, timeout=30)
        line, = [x for x in status.stdout.splitlines() if x.startswith("Status:")]
        assert line.startswith("Status:     paused, held by pid ")
        assert line.endswith("; `ralph ctl resume` continues it")
        shown = json.loads(subprocess.run([sys.executable, str(RALPH), "status", "--json"],
                                          cwd=git_repo, env=env, capture_output=True,
                                          text=True, timeout=30).stdout)
        assert (shown["alive"], shown["paused"]) == (True, True)
        subprocess.run(ctl + ["resume"], cwd=git_repo, env=env, check=True, capture_output=True)
        assert run.wait() == 0
        assert "Resumed\n" in run.stdout and (tmp_path / "n.started.1").exists()
    finally:
        run.kill()


@pytest.mark.parametrize("page", ["README.md", "docs/unattended.md"])
def test_the_documented_overnight_command_leaves_nothing_untracked_for_git_add(
        git_repo, base_env, bin_dir, run_task, page):
    """The page's own `nohup ralph build ... > <file> 2>&1 &` line, run as written: its output
    file must not be an untracked file that an agent's `git add -A` would commit."""
    line, = [x for x in (ROOT / page).read_text().splitlines() if "nohup ralph build" in x]
    install_stub(bin_dir)
    (bin_dir / "ralph").symlink_to(RALPH)
    sync(run_task, "t1")
    run_task("delete", "t1")                            # an empty backlog: one short run
    subprocess.run(["sh", "-c", line], cwd=git_repo, env=base_env, check=True, timeout=30)
    out = wait_for(lambda: [p for p in git_repo.rglob("ralph.out")
                            if "No tasks available" in p.read_text()], timeout=30)
    wait_for(lambda: not (git_repo / ".ralph" / "run.lock").exists())
    assert out[0].parent == git_repo / ".ralph"
    untracked = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                               cwd=git_repo, env=base_env, capture_output=True, text=True)
    assert untracked.stdout == ""


def test_sighup_finishes_the_session_then_exits_0(git_repo, base_env, run_task, agent, tmp_path):
    sync(run_task, "t1", "t2")
    run = Running(["build"], cwd=git_repo, env={**base_env, **waiting_env(agent, tmp_path)})
    try:
        wait_for(lambda: (tmp_path / "n.started.1").exists())
        os.kill(run.proc.pid, signal.SIGHUP)
        time.sleep(0.3)        # a graceful stop must not end the session: nothing to await
        assert run.proc.poll() is None
        (tmp_path / "release").write_text("")
        assert run.wait() == 0
        assert "Stopped: SIGHUP received; the last session finished\n" in run.stdout
        assert run.stdout.endswith("deregistered " + run.stdout.split("Agent:  ")[1].split("\n")[0] + "\n")
        assert not (tmp_path / "n.started.2").exists()
        assert events(git_repo, "run_end")[-1]["exit_code"] == 0
    finally:
        run.kill()


def test_under_nohup_sighup_stays_ignored(git_repo, base_env, run_task, agent, tmp_path):
    sync(run_task, "t1")
    code = ("import os, signal, sys; signal.signal(signal.SIGHUP, signal.SIG_IGN); "
            "os.execv(sys.executable, [sys.executable] + sys.argv[1:])")
    proc = subprocess.Popen([sys.executable, "-c", code, str(RALPH), "build", "-n", "1"],
                            cwd=git_repo, env={**base_env, **waiting_env(agent, tmp_path)},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        wait_for(lambda: (tmp_path / "n.started.1").exists())
        os.kill(proc.pid, signal.SIGHUP)
        (tmp_path / "release").write_text("")
        out, _ = proc.communicate(timeout=20)
        assert proc.returncode == 0
        assert "Stopped" not in out and "Reached max iterations: 1\n" in out
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def old_logs(repo: Path, count: int) -> Path:
    """.ralph/logs holding `count` old logs, old-000.jsonl the oldest."""
    logs = repo / ".ralph" / "logs"
    logs.mkdir(parents=True)
    for i in range(count):
        path = logs / f"old-{i:03d}.jsonl"
        path.write_text("{}\n")
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    return logs


def test_old_session_logs_are_rotated_before_a_session(git_repo, run_ralph, run_task, agent):
    sync(run_task, "t1")
    logs = old_logs(git_repo, 105)
    proc = run_ralph("build", "-n", "1", env=agent("claude", claim=False))
    assert proc.returncode == 0
    names = sorted(p.name for p in logs.iterdir())
    assert len(names) == 101                 # 100 kept before the session, plus its own
    assert "old-000.jsonl" not in names and "old-104.jsonl" in names


def test_a_parallel_run_rotates_old_logs_before_each_session_and_keeps_the_running_ones(
        git_repo, base_env, bin_dir, run_ralph, run_task, tmp_path):
    ignore_ralph_dir(git_repo, base_env)
    together(run_task, "t1", "t2")
    logs = old_logs(git_repo, 105)
    proc = run_ralph("build", "--parallel", "2",            # claude-cost: a result event
                     env=parallel_agent(bin_dir, tmp_path, "claude-cost", STUB_ACTION=WORK))
    assert proc.returncode == 0, proc.stderr
    names = sorted(p.name for p in logs.iterdir())
    # 100 kept before the first session, then its log; 100 again before the second (the
    # oldest goes, the first session's log is kept), then the second's
    assert len(names) == 101
    assert "old-005.jsonl" not in names and "old-006.jsonl" in names
    sessions = [logs / Path(e["log"]).name for e in events(git_repo, "session_start")]
    assert len(sessions) == 2
    assert all('"type": "result"' in path.read_text() for path in sessions)   # whole


def test_plan_mode_classifies_its_sessions_and_honours_an_explicit_breaker(
        git_repo, run_ralph, agent):
    proc = run_ralph("plan", "-n", "3", "--max-idle-sessions", "2",
                     env={**agent("claude", claim=False), "STUB_EXIT": "1"})
    assert proc.returncode == 6
    assert proc.stderr.strip().splitlines()[-1] == (
        "Error: no progress: 2 sessions in a row changed neither the backlog nor git HEAD "
        "(--max-idle-sessions 2)")
    assert classes(git_repo) == ["agent_error", "agent_error"]
    assert "| 2 | agent_error | agent exited with status 1 |" in progress_md(git_repo)
