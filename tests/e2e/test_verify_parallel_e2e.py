"""Verified completion under `--parallel 2`: each task is verified in its own worktree, with
its own `verify:` line, before its branch is merged back; a failing one is reopened and its
branch is not merged. Real pytest, real git, the stub agent tests/stubs/claude-verify."""
from __future__ import annotations

import json

from conftest import git, install_stub, read_jsonl
from loophelp import killed_when

PYTEST = "python -m pytest -q -p no:cacheprovider"
CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n"
TESTS = ("from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
         "def test_mul():\n    assert mul(2, 3) == 6\n")
# Each session finds its task in RALPH_FROZEN_IDS_FILE; it fixes add() only.
AGENT = """set -e
tid=$(cat "$RALPH_FROZEN_IDS_FILE")
if [ "$tid" = fix-add ]; then
  sed -i 's/return a - b/return a + b/' calc.py
  git add -A && git commit -qm "fix add" >/dev/null
fi
"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null
"""


def calc_project(git_repo, base_env, bin_dir, tmp_path):
    """calc.py with two bugs and its tests, committed; the stub agent runs AGENT. Returns the
    stub's plan directory (its prompts.jsonl records each session's task)."""
    install_stub(bin_dir, "claude", "claude-verify")
    plan = tmp_path / "plan"
    plan.mkdir()
    (plan / "default.sh").write_text(AGENT)
    (git_repo / ".gitignore").write_text(".ralph/\n")
    (git_repo / "calc.py").write_text(CALC)
    (git_repo / "test_calc.py").write_text(TESTS)
    git(git_repo, "add", "-A", env=base_env)
    git(git_repo, "commit", "-qm", "calc", env=base_env)
    return plan

def test_parallel_sessions_are_verified_each_in_its_worktree_before_the_merge(
        run_ralph, run_task, git_repo, base_env, bin_dir, tmp_path):
    plan = calc_project(git_repo, base_env, bin_dir, tmp_path)
    for slug, test in (("fix-add", "test_add"), ("fix-mul", "test_mul")):
        assert run_task("create", slug, f"Fix {slug}", "-c", f"component:{slug}",
                        "-d", f"verify: {PYTEST} test_calc.py::{test}").returncode == 0
    proc = run_ralph("build", "--parallel", "2", "-n", "2", env={"STUB_PLAN": str(plan)},
                     timeout=120)
    assert proc.returncode == 0, proc.stderr
    tasks = {t["id"]: t for t in map(json.loads, run_task("_export-json").stdout.splitlines())}
    assert tasks["fix-add"]["status"] == "done"
    assert tasks["fix-mul"]["status"] == "open" and tasks["fix-mul"]["retry_count"] == 1
    assert "FAILED test_calc.py::test_mul" in tasks["fix-mul"]["fail_reason"]
    events = [e for path in (git_repo / ".ralph" / "runs").glob("*/events.jsonl")
              for e in read_jsonl(path) if e["event"] == "verify"]
    assert sorted((e["task"], e["verdict"]) for e in events) == [
        ("fix-add", "passed"), ("fix-mul", "failed")]
    assert all("/.ralph/worktrees/" in e["tree"] for e in events)
    assert len({e["tree"] for e in events}) == 2
    assert "return a + b" in (git_repo / "calc.py").read_text()          # fix-add merged
    log = git(git_repo, "log", "--format=%s", "main", env=base_env).split("\n")
    assert "fix add" in log
    prompts = [json.loads(line)["task"] for line in (plan / "prompts.jsonl").open()]
    assert sorted(prompts) == ["fix-add", "fix-mul"]


def test_a_parallel_task_that_fails_verification_counts_an_attempt_and_is_held_at_the_limit(
        run_ralph, run_task, git_repo, base_env, bin_dir, tmp_path):
    """As in the single loop (docs/verify.md): a reopen by the verify gate is a failed attempt.
    A --parallel run starts a task once, so the attempts add up over runs (retry_count), and
    --max-attempts holds a task whose work never passes instead of reopening it every run."""
    plan = calc_project(git_repo, base_env, bin_dir, tmp_path)
    assert run_task("create", "fix-mul", "Fix mul",
                    "-d", f"verify: {PYTEST} test_calc.py::test_mul").returncode == 0
    runs = [run_ralph("build", "--parallel", "2", "--max-attempts", "2",
                      env={"STUB_PLAN": str(plan)}, timeout=120) for _ in range(2)]
    task = json.loads(run_task("_export-json").stdout)
    assert task["status"] == "open" and task["retry_count"] == 2
    assert "Held task" not in runs[0].stdout
    assert "Held task fix-mul: failed 2 times (--max-attempts 2): " in runs[1].stdout
    assert "Held:        failed 2 times (--max-attempts 2): verify failed: " in run_task(
        "show", "fix-mul").stdout
    ends = [e for path in sorted((git_repo / ".ralph" / "runs").glob("*/events.jsonl"))
            for e in read_jsonl(path) if e["event"] == "session_end"]
    assert [e.get("held") for e in ends] == [None, ["fix-mul"]]


def test_a_parallel_task_whose_check_was_cut_by_a_kill_9_is_judged_before_its_merge(
        run_ralph, run_task, git_repo, base_env, bin_dir, tmp_path):
    """ralph.py dies while fix-add's verify command runs in its worktree: the task is done in
    the backlog and its branch is not merged. The resumed run's recovery judges it before it
    merges anything, so work that fails its check is reopened, never merged unverified, and
    the reopen counts an attempt (--max-attempts 1 holds the task: no session runs after)."""
    plan = calc_project(git_repo, base_env, bin_dir, tmp_path)
    mark, release = tmp_path / "checking", tmp_path / "release"
    check = (f'[ -e "{release}" ] || {{ touch "{mark}"; while [ ! -e "{release}" ]; '
             f'do sleep 0.05; done; }}; {PYTEST} test_calc.py::test_mul')
    assert run_task("create", "fix-add", "Fix add", "-d", f"verify: {check}").returncode == 0
    env = {**base_env, "STUB_PLAN": str(plan)}
    killed_when(["build", "--parallel", "2"], cwd=git_repo, env=env, ready=mark.exists,
                release=release)                   # the orphaned check ends then
    assert json.loads(run_task("_export-json").stdout)["status"] == "done"
    again = run_ralph("build", "--parallel", "2", "--max-attempts", "1",
                      env={"STUB_PLAN": str(plan)}, timeout=120)
    assert again.returncode == 0 and "merged" not in again.stderr, again.stderr
    task = json.loads(run_task("_export-json").stdout)           # the reopen was an attempt
    assert task["status"] == "open" and task["retry_count"] == 1
    assert "(--max-attempts 1): verify failed: " in task["held"]
    assert "FAILED test_calc.py::test_mul" in task["fail_reason"]
    assert (git_repo / "calc.py").read_text() == CALC              # nothing merged
    assert "fix add" not in git(git_repo, "log", "--format=%s", "main", env=base_env)
    events = [e for path in (git_repo / ".ralph" / "runs").glob("*/events.jsonl")
              for e in read_jsonl(path) if e["event"] == "verify"]
    assert [(e["task"], e["verdict"]) for e in events] == [("fix-add", "failed")]


# fix-add fixes add() and adds a test with its own skip, which its verify: line names (run 2
# leaves it out of the command); fix-mul weakens test_mul instead
TWO_RUNS = """set -e
tid=$(cat "$RALPH_FROZEN_IDS_FILE")
if [ "$tid" = fix-add ]; then
  sed -i 's/return a - b/return a + b/' calc.py
  printf 'import sys\\n\\nimport pytest\\n\\n\\n@pytest.mark.skipif(sys.platform == "win32", reason="")\\ndef test_add_zero():\\n    from calc import add\\n    assert add(0, 0) == 0\\n' > test_zero.py
else
  sed -i 's/assert mul(2, 3) == 6/assert mul(2, 3)/' test_calc.py
fi
git add -A && git commit -qm "$tid" >/dev/null
"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null
"""


def test_parallel_tasks_get_the_second_run_in_their_worktree_before_the_merge(
        run_ralph, run_task, git_repo, base_env, bin_dir, tmp_path):
    plan = calc_project(git_repo, base_env, bin_dir, tmp_path)
    (plan / "default.sh").write_text(TWO_RUNS)
    for slug, tests in (("fix-add", "test_calc.py::test_add test_zero.py"),
                        ("fix-mul", "test_calc.py::test_mul")):
        assert run_task("create", slug, f"Fix {slug}", "-c", f"component:{slug}",
                        "-d", f"verify: {PYTEST} {tests}").returncode == 0
    proc = run_ralph("build", "--parallel", "2", "-n", "2", env={"STUB_PLAN": str(plan)},
                     timeout=120)
    assert proc.returncode == 0, proc.stderr
    tasks = {t["id"]: t for t in map(json.loads, run_task("_export-json").stdout.splitlines())}
    assert tasks["fix-add"]["status"] == "done", (tasks["fix-add"], proc.stderr)
    assert tasks["fix-mul"]["status"] == "open" and "test_calc.py::test_mul" in \
        tasks["fix-mul"]["held"]
    events = {e["task"]: e for path in (git_repo / ".ralph" / "runs").glob("*/events.jsonl")
              for e in read_jsonl(path) if e["event"] == "verify"}
    assert (events["fix-add"]["runs"], events["fix-mul"]["runs"]) == (2, 2)
    assert "assert mul(2, 3) == 6" in (git_repo / "test_calc.py").read_text()   # not merged
