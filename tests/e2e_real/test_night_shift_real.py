"""Black-box, the night shift (docs/night-shift.md) with the real `claude` and `codex` through
their stand-in APIs: the usage windows Claude Code reports from the API's
`anthropic-ratelimit-unified-5h-*` / `-7d-*` headers (its `rate_limit_event`s), pacing that
waits (time simulated: the test clock, RALPH_TEST_CLOCK_FILE), a spent window handed to codex
and claude back after its reset, and a task's model escalated after each failure."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from realcli import claude_env, events, needs_clis, ralph_install, tasks_of
from standin import Fail, StandIn, Text, bash, tool_results
from standin_responses import ResponsesStandIn
from test_claude_real import builder, sync
from test_other_clis_real import codex_worker, configure_codex

pytestmark = [needs_clis, pytest.mark.timeout(240)]
HOUR = 3600


def windows(start: int, five_hour: float, five_reset: int, seven_day: float,
            seven_reset: int) -> dict[str, str]:
    """The headers the API sends a subscription account, as the pinned CLI reads them."""
    return {"anthropic-ratelimit-unified-status": "allowed",
            "anthropic-ratelimit-unified-reset": str(start + five_reset),
            "anthropic-ratelimit-unified-5h-utilization": str(five_hour),
            "anthropic-ratelimit-unified-5h-reset": str(start + five_reset),
            "anthropic-ratelimit-unified-5h-status": "allowed",
            "anthropic-ratelimit-unified-7d-utilization": str(seven_day),
            "anthropic-ratelimit-unified-7d-reset": str(start + seven_reset),
            "anthropic-ratelimit-unified-7d-status": "allowed"}


@pytest.fixture
def two_tasks(run_task, git_repo: Path):
    sync(run_task, {"id": "a", "t": "Task a", "p": 1}, {"id": "b", "t": "Task b", "p": 2})
    return git_repo


@pytest.fixture
def clock_file(tmp_path: Path) -> tuple[Path, int]:
    """The test clock at the real now (the CLI reads the wall clock itself)."""
    start = int(time.time())
    path = tmp_path / "clock"
    path.write_text(f"{start}\n")
    return path, start


def now_of(path: Path) -> float:
    return float(path.read_text())


def test_pace_reads_the_windows_of_the_real_cli_and_waits_until_the_window_allows_a_session(
        two_tasks, run_ralph, run_task, base_env, home, clock_file):
    clock, start = clock_file
    # five_hour: 60% used with 1h of 5h gone; pace 80% allows 60% once 75% of it is gone,
    # i.e. 3h45m into the window: 2h45m from now. seven_day: 10%, far from its pace.
    headers = windows(start, 0.6, 4 * HOUR, 0.1, 6 * 24 * HOUR)
    ralph_install(two_tasks, base_env)
    with StandIn(builder, headers=lambda body: headers) as api:
        env = claude_env(base_env, home, api.url, oauth=True,
                         RALPH_TEST_CLOCK_FILE=str(clock))
        proc = run_ralph("build", "--danger", "--pace", "80%", env=env, timeout=200)
    assert proc.returncode == 0, proc.stderr
    assert {t["id"]: t["status"] for t in tasks_of(run_task).values()} == {
        "a": "done", "b": "done"}
    waits = [line for line in proc.stderr.splitlines() if line.startswith("Pace: waiting")]
    assert len(waits) == 1, proc.stderr                       # before the second session only
    assert "claude's five_hour 60% used, 20% of it gone (pace 80%" in waits[0]
    moved = now_of(clock) - start
    assert 2.75 * HOUR - 60 <= moved <= 2.75 * HOUR + 60      # simulated, not slept
    ends = events(two_tasks, "session_end")
    assert ends[0]["windows"]["five_hour"]["utilization"] == 0.6
    assert ends[0]["windows"]["seven_day"]["utilization"] == 0.1
    assert [e["cli"] for e in ends] == ["claude", "claude"]
    logged = [e for e in events(two_tasks, "log") if e.get("kind") == "pace_wait"]
    assert len(logged) == 1 and logged[0]["resume_at"]
    state = json.loads(next((two_tasks / ".ralph" / "runs").glob("*/state.json")).read_text())
    assert state["extra"]["night_shift"]["windows"]["claude"]["five_hour"]["utilization"] == 0.6
    status = run_ralph("status", env=env).stdout
    assert "Windows:    claude: five_hour 60% (resets " in status, status
    assert "seven_day 10% (resets " in status
    report = run_ralph("report", env=env).stdout
    assert "Windows:    five_hour 60% -> 60%, seven_day 10% -> 10%\n" in report, report
    assert "Models:     claude default $" in report
    html = next((two_tasks / ".ralph" / "runs").glob("*/report.html")).read_text()
    assert "<dt>Windows</dt><dd>five_hour 60% -&gt; 60%, seven_day 10% -&gt; 10%</dd>" in html


def test_a_spent_window_hands_the_session_to_codex_and_claude_comes_back_after_its_reset(
        two_tasks, run_ralph, run_task, base_env, home, clock_file):
    clock, start = clock_file

    def claude(body, n):
        if n == 0:                          # the five-hour window is spent, for one hour
            return Fail(429, "rate_limit_error", "limit", {
                "anthropic-ratelimit-unified-status": "rejected",
                "anthropic-ratelimit-unified-reset": str(start + HOUR),
                "anthropic-ratelimit-unified-representative-claim": "five_hour"})
        return builder(body, n)

    def codex(body, n):                     # two hours pass while codex works
        if n == 0:
            clock.write_text(f"{start + 2 * HOUR}\n")
        return codex_worker(body, n)

    ralph_install(two_tasks, base_env)
    with StandIn(claude) as api, ResponsesStandIn(codex) as openai:
        env = {**claude_env(base_env, home, api.url, oauth=True,
                            RALPH_TEST_CLOCK_FILE=str(clock)),
               **configure_codex(home, openai.url)}
        proc = run_ralph("build", "--danger", "--fallback-agent", "codex", env=env,
                         timeout=200)
    assert proc.returncode == 0, proc.stderr
    assert {t["id"]: t["status"] for t in tasks_of(run_task).values()} == {
        "a": "done", "b": "done"}
    assert [e["agent"] for e in events(two_tasks, "session_start")] == [
        "claude", "codex", "claude"]
    ends = events(two_tasks, "session_end")
    assert [(e["cli"], e["class"]) for e in ends] == [
        ("claude", "usage_limit"), ("codex", "success"), ("claude", "success")]
    lines = proc.stderr.splitlines()
    handed = [line for line in lines if line.startswith("Fallback: claude is limited until")]
    assert len(handed) == 1 and handed[0].endswith("; codex takes over"), proc.stderr
    assert "Fallback: claude is back: its usage limit has reset" in lines
    assert [line for line in lines if line.startswith("Session ")] == [
        "Session 1: agent claude, model default", "Session 2: agent codex, model default",
        "Session 3: agent claude, model default"]
    assert "Usage limit: waiting" not in proc.stdout          # nobody waited
    assert len(openai.agent_turns()) >= 1
    state = json.loads(next((two_tasks / ".ralph" / "runs").glob("*/state.json")).read_text())
    costs = state["extra"]["night_shift"]["costs"]
    assert set(costs) == {"claude", "codex"}
    assert "Agents:     claude $" in run_ralph("status", env=env).stdout
    report = run_ralph("report", env=env).stdout
    models = "Models:     claude default $0.00 (2 sessions, 1 done), codex default $"
    assert models in report, report


GIVE_UP = """set -e
id=$("$RALPH_TASK_SCRIPT" claim | sed -n 's/^id: //p' | head -n 1)
test -n "$id"
"$RALPH_TASK_SCRIPT" fail "$id" --reason "the tests still fail"
"""


def test_a_task_that_fails_three_times_escalates_haiku_sonnet_opus(
        git_repo, run_ralph, run_task, base_env, home):
    sync(run_task, {"id": "a", "t": "Task a", "p": 1})
    sessions = []

    def brain(body, n):
        if tool_results(body):
            return Text("Done for now.")
        sessions.append(body["model"])
        if len(sessions) <= 3:
            return bash(GIVE_UP, "This does not work yet.")
        return builder(body, n)

    ralph_install(git_repo, base_env)
    (git_repo / "ralph.yml").write_text("escalate: [haiku, sonnet, opus]\n")
    with StandIn(brain) as api:
        proc = run_ralph("build", "--danger", "--max-attempts", "5", "--max-idle-sessions", "0",
                         env=claude_env(base_env, home, api.url), timeout=200)
    assert proc.returncode == 0, proc.stderr
    assert tasks_of(run_task)["a"]["status"] == "done"
    # the model the CLI was started with (--model), as the API saw it
    assert [m.split("-")[1] for m in sessions] == ["haiku", "sonnet", "opus", "opus"], sessions
    starts = events(git_repo, "session_start")
    assert [e["model"] for e in starts] == ["haiku", "sonnet", "opus", "opus"]
    ends = events(git_repo, "session_end")
    assert [e["model"] for e in ends] == ["haiku", "sonnet", "opus", "opus"]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("Session ")]
    assert lines == ["Session 1: agent claude, model haiku",
                     "Session 2: agent claude, model sonnet (escalated: its task failed 1 time)",
                     "Session 3: agent claude, model opus (escalated: its task failed 2 times)",
                     "Session 4: agent claude, model opus (escalated: its task failed 3 times)"]
    state = json.loads(next((git_repo / ".ralph" / "runs").glob("*/state.json")).read_text())
    models = state["extra"]["night_shift"]["models"]
    assert {k: v["finished"] for k, v in models.items()} == {
        "claude:haiku": 0, "claude:sonnet": 0, "claude:opus": 1}
    report = run_ralph("report", env=claude_env(base_env, home, "http://127.0.0.1:9")).stdout
    line = next(x for x in report.splitlines() if x.startswith("Models:"))
    assert "claude haiku $" in line and "(1 session, 0 done)" in line
    assert "claude opus $" in line and "(2 sessions, 1 done)" in line


def test_with_an_api_key_pace_says_once_that_the_cost_budget_is_the_only_pacing(
        two_tasks, run_ralph, run_task, base_env, home):
    ralph_install(two_tasks, base_env)
    with StandIn(builder) as api:                         # no windows: API-key auth
        proc = run_ralph("build", "--danger", "--pace", "80%",
                         env=claude_env(base_env, home, api.url), timeout=200)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("Pace: claude reported no usage windows (API-key auth has none); "
                             "the run's cost budget (--max-cost) is its only pacing\n") == 1
    assert "Pace: waiting" not in proc.stderr
    assert [e["cli"] for e in events(two_tasks, "session_end")] == ["claude", "claude"]
    assert all("windows" not in e for e in events(two_tasks, "session_end"))
