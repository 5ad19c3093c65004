"""Black-box: a `--parallel` worktree made ready before its agent starts (docs/parallel.md,
"A worktree's set-up"): the ignored files `.worktreeinclude` names copied in from the
checkout, the `worktree_setup` command run there (its failure fails that task, not the
run), and `RALPH_SLOT` in every agent's environment, the single loop's too. Real git
worktrees, the real task CLI, stub agents (test_parallel_e2e's ACTION)."""
from __future__ import annotations

import json

import pytest

from conftest import git, read_jsonl
from test_parallel_e2e import ACTION, export, intervals, setup  # noqa: F401
from test_parallel_placement_e2e import plan, ran_together, waiting_action

# What each session saw in its worktree, before its work: its files, and its .env.
SEEN = ('tid=$(cat "$RALPH_FROZEN_IDS_FILE"); ls -A | grep -v "^.git$" | sort | tr "\\n" " " '
        '> "$STUB_SEEN/$tid.files"; cat .env > "$STUB_SEEN/$tid.env" 2>/dev/null; ')


def two_specs(run_task) -> None:
    plan(run_task, [{"id": "a", "t": "Auth", "spec": "auth.md"},
                    {"id": "b", "t": "Billing", "spec": "billing.md"}])


def test_worktreeinclude_copies_the_ignored_env_file_into_each_worktree_and_nothing_else(
        run_ralph, run_task, setup, git_repo, base_env, tmp_path):
    (git_repo / ".gitignore").write_text(".ralph/\n.env\nlocal.cfg\n")
    (git_repo / ".worktreeinclude").write_text("# what a worktree needs\n.env\n*.env\n")
    git(git_repo, "add", ".gitignore", ".worktreeinclude", env=base_env)
    git(git_repo, "commit", "-qm", "ignore local files", env=base_env)
    (git_repo / ".env").write_text("API_KEY=local\n")          # ignored, included: copied
    (git_repo / "local.cfg").write_text("x\n")                 # ignored, not included
    (git_repo / "notes.env").write_text("y\n")                 # included, not ignored
    seen = tmp_path / "seen"
    seen.mkdir()
    two_specs(run_task)
    proc = run_ralph("build", "--parallel", "2", timeout=90,
                     env={**setup, "STUB_SEEN": str(seen), "STUB_ACTION": SEEN + ACTION})
    assert proc.returncode == 0, proc.stderr
    for tid in ("a", "b"):
        assert (seen / f"{tid}.env").read_text() == "API_KEY=local\n"
        files = (seen / f"{tid}.files").read_text().split()
        assert ".env" in files and "local.cfg" not in files and "notes.env" not in files
    log = git(git_repo, "log", "--format=%s", "--name-only", "main", env=base_env)
    assert ".env" not in log.split()                           # ignored there too: never merged
    ends = [e for e in read_jsonl(next((git_repo / ".ralph" / "runs").glob("*/events.jsonl")))
            if e["event"] == "session_end"]
    assert [e.get("included") for e in ends] == [[".env"], [".env"]]


def test_worktree_setup_runs_in_each_new_worktree_before_its_agent(
        run_ralph, run_task, setup, git_repo, tmp_path):
    seen = tmp_path / "seen"
    seen.mkdir()
    two_specs(run_task)
    command = 'echo "$RALPH_SLOT" > prepared.txt; pwd >> "$STUB_SEEN/setup.log"'
    proc = run_ralph("build", "--parallel", "2", "--worktree-setup", command, timeout=90,
                     env={**setup, "STUB_SEEN": str(seen),
                          "STUB_ACTION": SEEN + 'rm prepared.txt; ' + ACTION})
    assert proc.returncode == 0, proc.stderr
    worktrees = sorted((seen / "setup.log").read_text().split())
    assert len(worktrees) == 2 and all("/.ralph/worktrees/" in w for w in worktrees)
    for tid in ("a", "b"):
        assert "prepared.txt" in (seen / f"{tid}.files").read_text().split()
    assert {t["status"] for t in export(run_task).values()} == {"done"}
    assert not (git_repo / "prepared.txt").exists()            # the checkout is not set up


@pytest.mark.parametrize("how", ["exits", "times-out"])
def test_a_failing_worktree_setup_fails_its_task_not_the_run(run_ralph, run_task, setup,
                                                             git_repo, base_env, how):
    fail = {"exits": 'echo "no toolchain for b" >&2; exit 3',
            "times-out": "sleep 30"}[how]
    (git_repo / "ralph.yml").write_text(
        "worktree_setup: |\n"
        f'  if [ "$(cat "$RALPH_FROZEN_IDS_FILE")" = b ]; then {fail}; fi\n'
        "worktree_setup_timeout: 1s\n")
    two_specs(run_task)
    proc = run_ralph("build", "--parallel", "2", timeout=90, env=setup)
    assert proc.returncode == 0, proc.stderr
    tasks = export(run_task)
    assert tasks["a"]["status"] == "done"
    b = tasks["b"]
    ending = {"exits": "exited 3: no toolchain for b", "times-out": "timed out after 1s"}[how]
    assert b["status"] == "open" and b["fail_reason"].startswith("worktree set-up `")
    assert b["fail_reason"].endswith(ending), b["fail_reason"]
    assert f"[b] not started: {b['fail_reason']}\n" in proc.stderr
    assert git(git_repo, "worktree", "list", env=base_env).count("\n") == 1   # b's went
    logged = [e for path in (git_repo / ".ralph" / "runs").glob("*/events.jsonl")
              for e in read_jsonl(path) if e.get("kind") == "not_started"]
    assert [(e["task"], e["message"]) for e in logged] == [("b", b["fail_reason"])]


def test_ralph_slot_is_0_and_1_for_two_concurrent_sessions(run_ralph, run_task, setup,
                                                           tmp_path):
    two_specs(run_task)
    calls = tmp_path / "calls.jsonl"
    proc = run_ralph("build", "--parallel", "2", timeout=90,
                     env={**setup, "STUB_LOG": str(calls),
                          "STUB_ACTION": waiting_action("a", "b")})
    assert proc.returncode == 0, proc.stderr
    assert ran_together(intervals(tmp_path), "a", "b")
    slots = sorted(c["env"].get("RALPH_SLOT") for c in read_jsonl(calls))
    assert slots == ["0", "1"]
    agents = {c["env"]["RALPH_SLOT"]: c["env"]["RALPH_AGENT_ID"] for c in read_jsonl(calls)}
    assert len(set(agents.values())) == 2                      # one slot per agent id


def test_ralph_slot_is_0_in_the_single_loop(run_ralph, run_task, setup, tmp_path):
    run_task("create", "only", "The only task")
    calls = tmp_path / "calls.jsonl"
    action = '"$RALPH_TASK_SCRIPT" claim only >/dev/null; "$RALPH_TASK_SCRIPT" done only >/dev/null'
    proc = run_ralph("build", "-n", "1", timeout=60,
                     env={**setup, "STUB_LOG": str(calls), "STUB_ACTION": action})
    assert proc.returncode == 0, proc.stderr
    assert [c["env"].get("RALPH_SLOT") for c in read_jsonl(calls)] == ["0"]


@pytest.mark.parametrize("args, yml, line", [
    (["--worktree-setup"], None, "Error: --worktree-setup requires a command"),
    ([], "worktree_setup_timeout: 0\n",
     "Error: ralph.yml: worktree_setup_timeout must be greater than 0, got 0"),
    ([], "worktree_setup: [make, setup]\n",
     "Error: ralph.yml: worktree_setup must be a non-empty text, got ['make', 'setup']"),
], ids=["flag-without-command", "zero-timeout", "not-text"])
def test_bad_worktree_setup_settings_stop_before_anything_is_written(run_ralph, git_repo, setup,
                                                                     args, yml, line):
    if yml:
        (git_repo / "ralph.yml").write_text(yml)
    proc = run_ralph("build", "--parallel", "2", *args, env=setup)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", line + "\n")
    assert not (git_repo / ".ralph").exists()
