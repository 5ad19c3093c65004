"""End to end: `make demo`'s demo/run_demo.py runs the real ralph.py build loop with the bundled
stub agent over the demo backlog, as it is and with `--assign` or `--parallel 2` (`make demo
ARGS=...`); every demo task must end done with a commit that exists."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT, TASK, run_process

DEMO = ROOT / "demo" / "run_demo.py"


@pytest.mark.parametrize("options", [[], ["--assign"], ["--parallel", "2"]], ids=str)
def test_demo_completes_every_task_with_a_commit_of_its_own(tmp_path, base_env, options):
    extra = ["--", *options] if options else []
    result = run_process([sys.executable, str(DEMO), "--dir", str(tmp_path / "demo"), *extra],
                         cwd=tmp_path, env=base_env, timeout=110)
    assert result.returncode == 0, result.stdout + result.stderr
    repo = tmp_path / "demo" / "repo"
    assert f"Running: ralph.py {' '.join(['build', '-n', '10', *options])}   " in result.stdout
    assert "All tasks complete. Exiting loop." in result.stdout
    assert f"The demo repository is kept in {repo}" in result.stdout

    exported = subprocess.run([sys.executable, str(TASK), "_export-json"], cwd=repo,
                              env=base_env, capture_output=True, text=True, check=True)
    tasks = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [t["id"] for t in tasks] == [f"demo-0{i}" for i in range(1, 6)]
    log = subprocess.run(["git", "log", "--format=%H %s"], cwd=repo, env=base_env,
                         capture_output=True, text=True, check=True).stdout.splitlines()
    subjects = dict(line.split(" ", 1) for line in log)
    for task in tasks:
        assert task["status"] == "done", task
        sha = json.loads(task["result"])["commit"]
        assert subjects[sha] == f"{task['id']}: {task['title']}"
    # Dependencies were respected: each task's commit comes after its blockers' commits.
    oldest_first = {line.split(" ", 1)[0]: i for i, line in enumerate(reversed(log))}
    done_at = {t["id"]: oldest_first[json.loads(t["result"])["commit"]] for t in tasks}
    assert any(t["deps"] for t in tasks)
    for task in tasks:
        for dep in task["deps"] or []:
            assert done_at[dep] < done_at[task["id"]]


def test_the_parallel_demo_runs_two_sessions_at_once(tmp_path, base_env):
    """The README's promise: `make demo ARGS='--parallel 2'` overlaps two sessions (its tasks
    of different specs), as its events record them, and its start line says so."""
    result = run_process([sys.executable, str(DEMO), "--dir", str(tmp_path / "demo"), "--",
                          "--parallel", "2"], cwd=tmp_path, env=base_env, timeout=110)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "parallel: up to 2 sessions at once\n" in result.stderr
    (events,) = (tmp_path / "demo" / "repo" / ".ralph" / "runs").glob("*/events.jsonl")
    kinds = [e["event"] for e in map(json.loads, events.read_text().splitlines())
             if e["event"] in ("session_start", "session_end")]
    assert kinds[:2] == ["session_start", "session_start"], kinds
    assert kinds.count("session_start") == kinds.count("session_end") == 5


def test_demo_refuses_unknown_arguments(tmp_path, base_env):
    result = run_process([sys.executable, str(DEMO), "--bogus"], cwd=tmp_path, env=base_env)
    assert (result.returncode, result.stderr) == (
        1, "Usage: run_demo.py [--dir DIR] [-- BUILD_OPTIONS...]\n")
    assert {p.name for p in tmp_path.iterdir()} <= {"home", "bin"}     # nothing created


def test_stub_agent_reads_the_peek_from_the_file_a_big_prompt_names(git_repo, base_env, run_task):
    run_task("plan-sync", input='{"id":"big-01","t":"Big backlog task"}\n')
    spilled = git_repo / ".ralph" / "prompts" / "s1.md"
    spilled.parent.mkdir(parents=True, exist_ok=True)
    spilled.write_text(run_task("peek", "-n", "10").stdout)
    prompt = (f"/ralph-build The task data is too large for the command line (99 bytes); "
              f"read it from the file {spilled} (same format as it would have had here).")
    env = {**base_env, "RALPH_TASK_SCRIPT": str(TASK), "RALPH_AGENT_ID": "a1b2"}
    result = run_process([str(ROOT / "demo" / "stub-agent"), "-p", prompt,
                          "--output-format=stream-json", "--verbose"], cwd=git_repo, env=env)
    assert result.returncode == 0
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[-1]["type"] == "result" and events[-1]["result"].startswith("done big-01")
    assert "status: done" in run_task("list", "--all", "--markdown").stdout
