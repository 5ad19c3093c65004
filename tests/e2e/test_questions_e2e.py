"""Black-box: a question to a person (docs/questions.md). `task ask` holds the task with the
question as the hold's reason and records it; `ralph answer` releases it; a run tells the
question, goes on with other tasks, gives the answer (a person's, or the default at the
deadline) to the task's next session, and its report says which answers were defaults."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import RALPH, ignore_ralph_dir, install_stub, read_jsonl, wait_for

ASKED = Path(".ralph/questions/asked")


def snapshot(repo: Path) -> dict[str, bytes]:
    """Every file under .ralph/ but the store's WAL side files, by content."""
    return {str(p.relative_to(repo)): p.read_bytes() for p in sorted((repo / ".ralph").rglob("*"))
            if p.is_file() and not p.name.endswith(("-wal", "-shm"))}


def test_ask_holds_the_task_with_the_question_and_gives_back_the_askers_claim(
        git_repo, run_task, any_store):
    assert run_task("create", "t1", "Pick a store").returncode == 0
    assert run_task("claim", "t1", "--agent", "a1").returncode == 0
    proc = run_task("ask", "t1", "Which database?", "--default", "sqlite", "--timeout", "2h")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "asked t1: held until a person answers; go on with another task\n"
    shown = run_task("show", "t1").stdout
    assert "Status:      open\n" in shown                  # the asker's claim went back
    assert 'Held:        question: Which database?; answer it with: ralph answer t1 ' \
           '"<answer>"\n' in shown
    assert "Retries" not in shown                           # asking is no failed attempt
    assert run_task("plan-status").stdout == "0 open, 0 active, 0 done, 1 blocked, 0 deleted\n"
    assert run_task("claim", "--agent", "a2").returncode == 2      # nothing claimable
    record = json.loads((git_repo / ASKED / "t1.json").read_text())
    assert (record["question"], record["default"]) == ("Which database?", "sqlite")
    assert abs(record["deadline"] - record["asked_at"] - 7200) < 0.001
    usage = run_task("ask", "--help")
    assert usage.returncode == 0 and usage.stdout.startswith("Usage: ralph task ask <id> ")


@pytest.mark.parametrize("args, code, line", [
    (["ask", "nope", "Which?"], 2, "Error: task 'nope' not found\n"),
    (["ask", "t1", "   "], 1,
     "Error: the question is empty: say what the person should decide\n"),
    (["ask", "t1", "Which?", "--timeout", "soon"], 1,
     "Error: --timeout: not a duration: 'soon' (use e.g. 90s, 15m, 8h or 1h30m)\n"),
    (["ask", "t1", "Which?", "--timeout", "0"], 1, "Error: --timeout must be more than 0, got: 0\n"),
    (["ask", "t1", "Which?", "--default"], 1, "Error: --default requires a value\n"),
    (["ask", "t1"], 1, 'Error: missing question\nUsage: ralph task ask <id> "<question>" '
                       '[--default ANSWER] [--timeout 2h]\n'),
], ids=["unknown-id", "empty-question", "bad-timeout", "zero-timeout", "default-no-value",
        "no-question"])
def test_a_bad_ask_says_what_is_wrong_and_writes_nothing(git_repo, run_task, args, code, line):
    assert run_task("create", "t1", "Pick a store").returncode == 0
    before = snapshot(git_repo)
    proc = run_task(*args)
    assert (proc.returncode, proc.stderr, proc.stdout) == (code, line, "")
    assert snapshot(git_repo) == before
    assert "Held" not in run_task("show", "t1").stdout


def test_answer_releases_the_task_once_and_refuses_what_it_cannot_answer(
        git_repo, run_task, run_ralph, base_env, any_store):
    assert run_task("create", "t1", "Pick a store").returncode == 0
    assert run_task("ask", "t1", "Which database?").returncode == 0
    before = snapshot(git_repo)
    for args, line in [
        ([], 'Error: ralph answer takes a task id and the answer. Usage: ralph answer <id> '
             '"<answer>"\n'),
        (["t1", " "], "Error: the answer to t1's question is empty\n"),
        (["t9", "yes"], "Error: task 't9' has no question waiting for an answer "
                        "('ralph task show t9' says why it is held)\n"),
    ]:
        proc = run_ralph("answer", *args, env=base_env)
        assert (proc.returncode, proc.stderr, proc.stdout) == (1, line, "")
        assert snapshot(git_repo) == before                 # nothing written
    proc = run_ralph("answer", "t1", "PostgreSQL", env=base_env)   # the same store
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("answered t1: ")
    assert "Held" not in run_task("show", "t1").stdout
    again = run_ralph("answer", "t1", "SQLite", env=base_env)
    assert (again.returncode, again.stderr) == (
        1, "Error: the question on t1 was answered already: PostgreSQL\n")
    assert "answer" in run_ralph("answer", "--help").stdout
    assert "answer " in run_ralph("help").stdout


def test_an_agent_session_cannot_answer_its_own_question(git_repo, run_task, run_ralph):
    assert run_task("create", "t1", "Pick a store").returncode == 0
    assert run_task("ask", "t1", "Which database?").returncode == 0
    proc = run_ralph("answer", "t1", "whatever", env={"RALPH_SESSION_TAG": "x"})
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: cannot release t1: _unhold is refused inside an "
                                  "agent session")
    assert "Held:        question: " in run_task("show", "t1").stdout
    assert not (git_repo / ".ralph/questions/answered/t1.json").exists()   # taken back


# The stub agent: claims the top task; on t1's first session it asks and ends; on t2 it
# waits (conditions, bounded) until t1 is held by its question (--parallel starts both sessions
# at once), then until t1 is no longer held or its question's deadline has passed (the run
# settles a default between sessions), then finishes; t1 again: done.
AGENT = r"""
if [ -n "$RALPH_FROZEN_IDS_FILE" ] && [ -f "$RALPH_FROZEN_IDS_FILE" ]; then
  tid=$(cat "$RALPH_FROZEN_IDS_FILE")                        # --parallel: ralph claimed it
else
  tid=$("$RALPH_TASK_SCRIPT" claim --agent "$RALPH_AGENT_ID" | sed -n 's/^## Task //p' | head -1)
fi
echo "$tid" >> "$WORK_LOG"
if [ "$tid" = t1 ] && [ ! -f "$ASK_MARK" ]; then
  touch "$ASK_MARK"
  "$RALPH_TASK_SCRIPT" ask t1 "Which database should the store use?" $ASK_FLAGS
  exit 0
fi
if [ "$tid" = t2 ]; then
  "$PYTHON" -c "$AWAIT_T1"
fi
echo "$tid" > "out-$tid.txt"
git add -A >/dev/null && git commit -qm "work on $tid" >/dev/null
"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null
"""
AWAIT_T1 = r"""
import json, os, subprocess, time
questions = os.environ["RALPH_QUESTIONS_DIR"]
asked = os.path.join(questions, "asked", "t1.json")
answered = os.path.join(questions, "answered", "t1.json")

def held():
    return "\nHeld:" in subprocess.run([os.environ["RALPH_TASK_SCRIPT"], "show", "t1"],
                                       capture_output=True, text=True).stdout

def deadline_passed():
    try:
        deadline = json.load(open(asked)).get("deadline")
    except (OSError, ValueError):
        return False
    return deadline is not None and time.time() > deadline

give_up = time.monotonic() + 100
# --parallel starts both sessions at once: first t1's question is out (or already answered)
while time.monotonic() < give_up and not (held() or os.path.exists(answered)):
    time.sleep(0.1)
while time.monotonic() < give_up and held() and not deadline_passed():
    time.sleep(0.1)
"""


def start_run(git_repo, base_env, bin_dir, run_task, tmp_path, ask_flags: str,
              flags: tuple[str, ...] = ()):
    install_stub(bin_dir)
    ignore_ralph_dir(git_repo, base_env)
    for tid, priority in (("t1", "1"), ("t2", "2")):
        assert run_task("create", tid, f"Task {tid}", "-p", priority,
                        "-c", f"component:{tid}").returncode == 0
    env = {**base_env, "STUB_ACTION": AGENT, "STUB_LOG": str(tmp_path / "stub.jsonl"),
           "WORK_LOG": str(tmp_path / "work.log"), "ASK_MARK": str(tmp_path / "asked"),
           "ASK_FLAGS": ask_flags, "PYTHON": sys.executable, "AWAIT_T1": AWAIT_T1}
    return subprocess.Popen([sys.executable, str(RALPH), "build", "-n", "4", *flags],
                            cwd=git_repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)


def run_events(repo: Path) -> list[dict]:
    """The run's events so far (a line still being written is left for the next look)."""
    found = list((repo / ".ralph/runs").glob("*/events.jsonl"))
    events = []
    for line in found[0].read_text().splitlines() if found else []:
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    return events


def prompts(tmp_path) -> list[str]:
    return [" ".join(call["argv"]) for call in read_jsonl(tmp_path / "stub.jsonl")]


@pytest.mark.parametrize("flags", [(), ("--parallel", "2")], ids=["single", "parallel"])
def test_a_run_goes_on_while_a_question_waits_and_the_answer_reaches_the_tasks_next_session(
        git_repo, base_env, bin_dir, run_task, run_ralph, tmp_path, flags):
    run = start_run(git_repo, base_env, bin_dir, run_task, tmp_path, "", flags)
    try:
        # the question is out, t1's session has ended (the first to end: t2's waits for t1's
        # hold) and the run went on with t2
        wait_for(lambda: (tmp_path / "work.log").exists() and
                 sorted((tmp_path / "work.log").read_text().split()) == ["t1", "t2"] and
                 any(e.get("event") == "session_end" for e in run_events(git_repo)),
                 timeout=60)
        status = run_ralph("status")                 # a person looks from another shell
        assert "\nQuestions waiting for a person:\n  t1  Which database should the store " \
               'use?  (no default; ralph answer t1 "...")\n' in status.stdout, status.stdout
        waiting = json.loads(run_ralph("status", "--json").stdout)["questions"]
        assert [(q["task"], q["default"], q["deadline"]) for q in waiting] == [("t1", None, None)]
        answered = run_ralph("answer", "t1", "PostgreSQL, as the fleet uses")   # another process
        assert answered.returncode == 0, answered.stderr
        out, err = run.communicate(timeout=120)
    finally:
        run.kill()
        run.wait()
    assert run.returncode == 0, err
    assert (tmp_path / "work.log").read_text().split()[2:] == ["t1"], out + err
    assert all("Status:      done" in run_task("show", tid).stdout for tid in ("t1", "t2"))
    first, second, third = prompts(tmp_path)
    assert "PostgreSQL" not in first + second
    if flags:                        # ralph assigned t1: the answer follows its instructions
        assert "[t1] asked: question: Which database should the store use?\n" in out
        asked = [e for e in run_events(git_repo)
                 if e.get("event") == "session_end" and e.get("outcome") == "asked"]
        assert [e["counts_as_failure"] for e in asked] == [False]   # parked, not failed
        assert ("## The answer to your question on this task\n\nYou asked: Which database "
                "should the store use?\n\nAnswer: PostgreSQL, as the fleet uses\n") in third
    else:                            # the agent picks from the peek: under t1's section
        assert ("question: |\n  Which database should the store use?\nanswer: |\n"
                "  PostgreSQL, as the fleet uses\nanswered_by: a person") in third
    assert "question on t1: Which database should the store use?" in err
    logs = [e for e in run_events(git_repo)
            if e.get("event") == "log" and e.get("kind", "").startswith("question")]
    assert [e["kind"] for e in logs] == ["question", "question_answered"]
    assert logs[1]["answer"] == "PostgreSQL, as the fleet uses"
    assert not list((git_repo / ASKED).iterdir())           # t1 done: its question settled
    assert "Questions" not in run_ralph("status").stdout


def test_a_question_nobody_answers_takes_its_default_at_the_deadline_and_the_report_says_so(
        git_repo, base_env, bin_dir, run_task, run_ralph, tmp_path):
    run = start_run(git_repo, base_env, bin_dir, run_task, tmp_path,
                    "--default SQLite --timeout 1s")
    try:
        out, err = run.communicate(timeout=120)    # t2's session waits for the default's release
    finally:
        run.kill()
        run.wait()
    assert run.returncode == 0, err
    assert (tmp_path / "work.log").read_text().split() == ["t1", "t2", "t1"]
    third = prompts(tmp_path)[2]
    assert "answer: |\n  SQLite\nanswered_by: default" in third
    assert "question on t1 timed out: took its default answer: SQLite" in err
    report = run_ralph("report", "--md")
    assert report.returncode == 0, report.stderr
    assert "question_default: question on t1 timed out: took its default answer: SQLite" \
        in report.stdout


def test_a_question_without_a_default_stays_held_at_its_deadline_and_the_run_says_so(
        git_repo, base_env, bin_dir, run_task, run_ralph, tmp_path):
    install_stub(bin_dir)
    assert run_task("create", "t1", "Task t1").returncode == 0
    assert run_task("ask", "t1", "Which database?", "--timeout", "1s").returncode == 0
    record = json.loads((git_repo / ASKED / "t1.json").read_text())
    wait_for(lambda: time.time() > record["deadline"], timeout=30)
    proc = run_ralph("build", "-n", "2", env={"STUB_LOG": str(tmp_path / "stub.jsonl")})
    assert "question on t1 timed out with no default: it stays held" in proc.stderr
    assert "Held:        question: Which database?" in run_task("show", "t1").stdout
    assert not (tmp_path / "stub.jsonl").exists()           # nothing to work on
    report = run_ralph("report", "--md")
    assert "question_timeout: question on t1 timed out with no default" in report.stdout
