"""Black-box, with the real `claude` (the pinned @anthropic-ai/claude-code) driven by ralph.py
through a scripted stand-in for the Anthropic Messages API on 127.0.0.1 (standin.py). Each
test says what the model does; the CLI does the rest for real: it loads the skills and hooks
`ralph install` wrote, runs the Bash tool, streams stream-json to ralph, retries, and reports
limits and errors in its own words."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import RALPH, wait_for
from realcli import claude_env, events, installed_version, needs_clis, ralph_install, tasks_of
from standin import Fail, Stall, StandIn, Text, bash, first_user_text, tool_results

pytestmark = [needs_clis, pytest.mark.timeout(240)]

# One session of the build skill, as the model: claim through the task CLI (unless the
# prompt hands it a task already claimed for it: --parallel), commit, done.
WORK = """set -e
id="{given}"
[ -n "$id" ] || id=$("$RALPH_TASK_SCRIPT" claim | sed -n 's/^id: //p' | head -n 1)
test -n "$id"
echo "built $id" > "work-$id.txt"
git add "work-$id.txt"
git commit -q -m "Build $id"
"$RALPH_TASK_SCRIPT" done "$id" --result "{\\"commit\\":\\"$(git rev-parse --short HEAD)\\"}"
echo "FINISHED $id"
"""
ROOT_LINE = ("--dangerously-skip-permissions cannot be used with root/sudo privileges for "
             "security reasons")


def given_task(body: dict) -> str:
    """The id of the task the prompt says is already claimed for this agent, or ''."""
    found = re.search(r"^Task: (\S+) \(priority .*\n(?:.*\n)*?It is already claimed for you",
                      first_user_text(body), re.M)
    return found.group(1) if found else ""


def builder(body: dict, n: int):
    """Every session: run WORK, then say it is done."""
    if tool_results(body):
        return Text("Task finished.")
    return bash(WORK.replace("{given}", given_task(body)), "Working on the next task.")


def sync(run_task, *rows: dict) -> None:
    lines = "".join(json.dumps(r) + "\n" for r in rows)
    assert run_task("plan-sync", input=lines).returncode == 0


@pytest.fixture
def three_tasks(run_task, git_repo: Path):
    sync(run_task, {"id": "a", "t": "Task a", "p": 1},
         {"id": "b", "t": "Task b", "p": 0, "deps": ["a"]},
         {"id": "c", "t": "Task c", "p": 2})
    return git_repo


def test_a_build_loop_over_tasks_with_dependencies_claims_commits_and_finishes(
        three_tasks, run_ralph, run_task, base_env, home):
    ralph_install(three_tasks, base_env)
    with StandIn(builder) as api:
        proc = run_ralph("build", "--danger", env=claude_env(base_env, home, api.url),
                         timeout=200)
    assert proc.returncode == 0, proc.stderr
    assert "\nAll tasks complete. Exiting loop.\n" in proc.stdout
    assert {t["id"]: t["status"] for t in tasks_of(run_task).values()} == {
        "a": "done", "b": "done", "c": "done"}
    results = [r for req in api.agent_turns() for r in tool_results(req["body"])]
    assert [r.split("FINISHED ", 1)[1].split()[0] for r in results] == ["a", "b", "c"]
    log = subprocess.run(["git", "log", "--format=%s", "-3"], cwd=three_tasks, text=True,
                         capture_output=True, check=True).stdout
    assert log == "Build c\nBuild b\nBuild a\n"     # b (priority 0) waited for a
    # The skill `ralph install` wrote is what the CLI sent: its text reached the model.
    first = first_user_text(api.agent_turns()[0]["body"])
    assert "You are one session of a Ralph build loop" in first
    assert [e["class"] for e in events(three_tasks, "session_end")] == ["success"] * 3
    # the release named by the CLI's own system/init event
    assert [e["agent_version"] for e in events(three_tasks, "session_end")] == [
        installed_version("claude")] * 3


def test_danger_as_root_without_is_sandbox_stops_at_the_first_session_with_exit_10(
        three_tasks, run_ralph, base_env, home):
    if os.geteuid() != 0:
        pytest.skip("the CLI refuses --dangerously-skip-permissions only as root; "
                    "this test process is not root")
    with StandIn(builder) as api:
        env = claude_env(base_env, home, api.url, IS_SANDBOX="")
        proc = run_ralph("build", "--danger", "-n", "4", env=env)
    assert proc.returncode == 10, proc.stderr
    assert proc.stderr.count(ROOT_LINE) == 2                  # the CLI's own line, and ours
    assert "set IS_SANDBOX=1" in proc.stderr.strip().splitlines()[-1]
    assert len(events(three_tasks, "session_end")) == 1
    assert api.requests == []


def test_a_rejected_api_key_stops_the_run_at_the_first_retry_with_exit_9(
        three_tasks, run_ralph, base_env, home):
    with StandIn(lambda body, n: Fail(401, "authentication_error", "invalid x-api-key")) as api:
        proc = run_ralph("build", "--danger", "-n", "4",
                         env=claude_env(base_env, home, api.url))
    assert proc.returncode == 9, proc.stderr
    assert "\nAPI retry 1/10: 401 authentication_failed; next attempt in " in proc.stdout
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: authentication failed: ") and "log in again" in last
    ends = events(three_tasks, "session_end")
    assert [e["class"] for e in ends] == ["auth_failure"]
    assert len(api.agent_turns()) <= 3                         # not ten retries over minutes


@pytest.mark.parametrize("status,kind,shown", [
    (429, "rate_limit_error", "429 rate_limit"), (529, "overloaded_error", "529 overloaded")],
    ids=["429", "529"])
def test_api_retries_show_one_line_each_and_the_session_goes_on(
        three_tasks, run_ralph, base_env, home, status, kind, shown):
    def flaky(body, n):
        if n < 2:
            return Fail(status, kind, "try later", {"retry-after": "0"})
        return Text("Nothing to do.")
    with StandIn(flaky) as api:
        proc = run_ralph("build", "--danger", "-n", "1",
                         env=claude_env(base_env, home, api.url))
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("API retry ")]
    assert [line.split(":")[0] for line in lines] == ["API retry 1/10", "API retry 2/10"]
    assert all(f": {status} " in line for line in lines), lines
    assert events(three_tasks, "session_end")[0]["api_retries"] == 2


def test_a_subscription_usage_limit_is_waited_out_and_the_run_resumes(
        three_tasks, run_ralph, run_task, base_env, home):
    def limited(body, n):
        if n == 0:                                  # the reset a few seconds ahead
            return Fail(429, "rate_limit_error", "limit", {
                "anthropic-ratelimit-unified-status": "rejected",
                "anthropic-ratelimit-unified-reset": str(int(time.time()) + 6),
                "anthropic-ratelimit-unified-representative-claim": "five_hour"})
        return builder(body, n)
    with StandIn(limited) as api:
        env = claude_env(base_env, home, api.url, oauth=True)
        proc = run_ralph("build", "--danger", "-n", "2", "--limit-wait-margin", "0",
                         env=env, timeout=200)
    assert proc.returncode == 0, proc.stderr
    assert "Usage limit: waiting until " in proc.stdout, proc.stdout[-3000:]
    assert "Usage limit: wait over, resuming" in proc.stdout
    ends = events(three_tasks, "session_end")
    assert ends[0]["class"] == "usage_limit" and ends[1]["class"] == "success"
    assert [e for e in events(three_tasks, "log") if e.get("kind") == "usage_limit_wait"]


def test_a_stalled_stream_is_ended_by_the_idle_timeout_and_the_task_goes_back(
        three_tasks, run_ralph, run_task, base_env, home):
    def stalls(body, n):
        if tool_results(body):
            return Stall()
        return bash('"$RALPH_TASK_SCRIPT" claim c >/dev/null && echo claimed')
    with StandIn(stalls) as api:
        proc = run_ralph("build", "--danger", "-n", "1", "--idle-timeout", "8",
                         "--kill-grace", "1", env=claude_env(base_env, home, api.url))
    assert proc.returncode == 0, proc.stderr
    task = tasks_of(run_task)["c"]
    assert task["status"] == "open", proc.stdout
    assert task["fail_reason"] == "no agent output for 8s; agent terminated", proc.stdout
    assert events(three_tasks, "session_end")[0]["class"] == "idle"


def test_plan_mode_ends_on_the_completion_promise(three_tasks, run_ralph, base_env, home):
    ralph_install(three_tasks, base_env)

    def planner(body, n):
        return Text("The plan is complete.\n<promise>COMPLETE</promise>")
    with StandIn(planner) as api:
        proc = run_ralph("plan", "--danger", "-n", "3", env=claude_env(base_env, home, api.url))
    assert proc.returncode == 0, proc.stderr
    assert "Plan complete: completion promise received." in proc.stdout
    assert len(api.agent_turns()) == 1
    assert "ralph-plan" in json.dumps(api.agent_turns()[0]["body"])


def test_the_session_end_hook_ralph_install_registers_is_run_by_the_cli(
        three_tasks, run_ralph, run_task, base_env, home):
    ralph_install(three_tasks, base_env)
    assert "SessionEnd" in json.loads((three_tasks / ".claude" / "settings.json").read_text())[
        "hooks"]

    def walks_away(body, n):                    # claims c, then ends the session without done
        if tool_results(body):
            return Text("Stopping here.")
        return bash('"$RALPH_TASK_SCRIPT" claim c >/dev/null && echo claimed')
    with StandIn(walks_away) as api:
        proc = run_ralph("build", "--danger", "-n", "1", env=claude_env(base_env, home, api.url))
    assert proc.returncode == 0, proc.stderr
    task = tasks_of(run_task)["c"]
    assert (task["status"], task["fail_reason"]) == ("open", "session ended unexpectedly")


def test_parallel_2_builds_independent_tasks_in_worktrees(three_tasks, run_ralph, run_task,
                                                          base_env, home):
    with StandIn(builder) as api:
        proc = run_ralph("build", "--danger", "--parallel", "2",
                         env=claude_env(base_env, home, api.url), timeout=200)
    assert proc.returncode == 0, proc.stderr
    assert {t["id"]: t["status"] for t in tasks_of(run_task).values()} == {
        "a": "done", "b": "done", "c": "done"}
    assert sorted(p.name for p in three_tasks.glob("work-*.txt")) == [
        "work-a.txt", "work-b.txt", "work-c.txt"]                 # merged back


def test_assign_mode_hands_each_session_its_task_and_the_cli_finishes_them(
        three_tasks, run_ralph, run_task, base_env, home):
    with StandIn(builder) as api:
        proc = run_ralph("build", "--danger", "--assign",
                         env=claude_env(base_env, home, api.url), timeout=200)
    assert proc.returncode == 0, proc.stderr
    assert {t["id"]: t["status"] for t in tasks_of(run_task).values()} == {
        "a": "done", "b": "done", "c": "done"}
    assert [given_task(t["body"]) for t in api.agent_turns() if not tool_results(t["body"])] \
        == ["a", "b", "c"]


# docs/questions.md, as the model: the first session asks on t1 and ends; the next one works
# on t2 until t1's hold is gone (the question answered from another shell); the session after
# that finds the answer under t1 in its prompt and builds t1.
ASK = """set -e
"$RALPH_TASK_SCRIPT" claim t1 >/dev/null
"$RALPH_TASK_SCRIPT" ask t1 "Which database should the store use?" --timeout 2h
"""
WORK_WHILE_ASKED = """set -e
id=t2
"$RALPH_TASK_SCRIPT" claim t2 >/dev/null
i=0
while "$RALPH_TASK_SCRIPT" show t1 | grep -q '^Held:' && [ $i -lt 500 ]; do
  i=$((i+1)); sleep 0.2
done
echo "built $id" > "work-$id.txt"
git add "work-$id.txt"
git commit -q -m "Build $id"
"$RALPH_TASK_SCRIPT" done "$id" --result "{\\"commit\\":\\"$(git rev-parse --short HEAD)\\"}"
"""


def first_task(prompt: str) -> str:
    """The id of the first task of the peek the prompt carries."""
    found = re.search(r"^## Task (\S+)", prompt.split("<command-args>", 1)[-1], re.M)
    return found.group(1) if found else ""


def test_a_question_asked_in_one_session_is_answered_in_the_prompt_of_its_tasks_next_one(
        git_repo, run_ralph, run_task, base_env, home):
    sync(run_task, {"id": "t1", "t": "Pick the store", "p": 1},
         {"id": "t2", "t": "Write the docs", "p": 2})
    ralph_install(git_repo, base_env)
    prompts: list[str] = []

    def asker(body, n):
        # by what the prompt says, not by the count: the CLI may send a turn's request twice
        if tool_results(body):
            return Text("Session over.")
        prompt = first_user_text(body)
        prompts.append(prompt)
        if first_task(prompt) == "t2":
            return bash(WORK_WHILE_ASKED, "Working on t2 meanwhile.")
        if "answer: |" in prompt:
            return bash(WORK.replace("{given}", ""), "Working on the next task.")
        return bash(ASK, "This needs a person's decision.")

    with StandIn(asker) as api:
        run = subprocess.Popen([sys.executable, str(RALPH), "build", "--danger", "-n", "3"],
                               cwd=git_repo, env=claude_env(base_env, home, api.url),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, text=True)
        try:
            wait_for(lambda: "Status:      active" in run_task("show", "t2").stdout
                     or run.poll() is not None, timeout=150)    # t2's session works
            assert run.poll() is None, run.communicate()
            answered = run_ralph("answer", "t1", "PostgreSQL, as the fleet uses")  # another shell
            assert answered.returncode == 0, answered.stderr
            out, err = run.communicate(timeout=180)
        finally:
            run.kill()
            run.wait()
    assert run.returncode == 0, err
    assert "question on t1: Which database should the store use?" in err
    assert {t["id"]: t["status"] for t in tasks_of(run_task).values()} == {
        "t1": "done", "t2": "done"}
    answered_at = [i for i, p in enumerate(prompts) if "answer: |" in p]
    assert answered_at and first_task(prompts[0]) == "t1"
    assert "t2" in map(first_task, prompts[:answered_at[0]])     # asked, then t2, then t1
    given = prompts[answered_at[0]]
    assert first_task(given) == "t1"
    assert ("question: |\n  Which database should the store use?\n"
            "answer: |\n  PostgreSQL, as the fleet uses\nanswered_by: a person") in given


WORK_PAST_DEADLINE = """set -e
id=t2
"$RALPH_TASK_SCRIPT" claim t2 >/dev/null
python3 - <<'PY'
import json, os, time
asked = os.path.join(os.environ["RALPH_QUESTIONS_DIR"], "asked", "t1.json")
give_up = time.monotonic() + 60
while time.time() <= json.load(open(asked))["deadline"] and time.monotonic() < give_up:
    time.sleep(0.1)
PY
echo "built $id" > "work-$id.txt"
git add "work-$id.txt"
git commit -q -m "Build $id"
"$RALPH_TASK_SCRIPT" done "$id" --result "{\\"commit\\":\\"$(git rev-parse --short HEAD)\\"}"
"""


def test_a_question_nobody_answers_gives_its_default_to_the_tasks_next_session(
        git_repo, run_ralph, run_task, base_env, home):
    sync(run_task, {"id": "t1", "t": "Pick the store", "p": 1},
         {"id": "t2", "t": "Write the docs", "p": 2})
    ralph_install(git_repo, base_env)
    prompts: list[str] = []

    def asker(body, n):
        if tool_results(body):
            return Text("Session over.")
        prompt = first_user_text(body)
        prompts.append(prompt)
        if first_task(prompt) == "t2":             # works past the deadline, then finishes
            return bash(WORK_PAST_DEADLINE, "Working on t2 meanwhile.")
        if "answer: |" in prompt:
            return bash(WORK.replace("{given}", ""), "Working on the next task.")
        return bash(ASK.replace("--timeout 2h", "--default SQLite --timeout 1s"),
                    "This needs a person's decision.")

    with StandIn(asker) as api:
        proc = run_ralph("build", "--danger", "-n", "3",
                         env=claude_env(base_env, home, api.url), timeout=200)
    assert proc.returncode == 0, proc.stderr
    assert "question on t1 timed out: took its default answer: SQLite" in proc.stderr
    assert {t["id"]: t["status"] for t in tasks_of(run_task).values()} == {
        "t1": "done", "t2": "done"}
    given = next(p for p in prompts if "answer: |" in p)
    assert first_task(given) == "t1"
    assert ("answer: |\n  SQLite\nanswered_by: default (no answer came in time; the "
            "question named it)") in given
    report = run_ralph("report", "--md")
    assert "question_default: question on t1 timed out: took its default answer: SQLite" \
        in report.stdout
