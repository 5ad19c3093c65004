"""Black-box: what a pull request's feedback costs its task under --max-attempts
(docs/github.md "Attempts"): a review asking for changes gives the task back without a failure,
a failed check is a failed attempt; and a --parallel rerun of a reopened task continues on its
pull request's branch. Against the stand-in of GitHub's REST API (tests/ghstandin.py), on the
embedded task store."""
from __future__ import annotations


import pytest

import ghstandin
from conftest import git, install_stub
from sourcehelp import AGENT

AGENT = ghstandin.appending_agent(AGENT)


@pytest.fixture
def remote(tmp_path, git_repo, base_env, bin_dir):
    install_stub(bin_dir)
    standin = ghstandin.origin(tmp_path, git_repo, base_env, AGENT)
    yield standin
    standin.close()


def claims(tmp_path) -> list[str]:
    path = tmp_path / "claims.txt"
    return path.read_text().split() if path.exists() else []


def shown(run_task, tid: str) -> str:
    proc = run_task("show", tid)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_three_reviews_asking_for_changes_do_not_hold_a_task(run_ralph, run_task, remote,
                                                                 tmp_path):
    asked = []

    def checks(number, sha):                    # green each time; changes asked three times
        remote.set_checks(sha, ("test", "success", "ok"))
        if len(asked) < 3:
            asked.append(sha)
            remote.review(number, "CHANGES_REQUESTED", f"Round {len(asked)}: rename it.")
    remote.on_pull = checks
    assert run_task("create", "t1", "Parse the input").returncode == 0
    proc = run_ralph("build", "--pr", "--max-attempts", "2", env=remote.env, timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert claims(tmp_path) == ["t1"] * 4, proc.stdout + proc.stderr
    assert proc.stderr.count("a review requests changes: task t1 reopened") == 3
    (pull,) = remote.pulls.values()
    assert pull["merged"], proc.stderr
    show = shown(run_task, "t1")
    assert "Status:      done" in show and "Retries:" not in show, show   # none counted
    assert "Held task" not in proc.stdout


def test_two_failed_checks_hold_a_task_at_max_attempts_two(run_ralph, run_task, remote,
                                                           tmp_path):
    remote.on_pull = lambda number, sha: remote.set_checks(
        sha, ("test", "failure", f"broken at {sha[:12]}"))
    assert run_task("create", "t1", "Parse the input").returncode == 0
    proc = run_ralph("build", "--pr", "--max-attempts", "2", env=remote.env, timeout=240)
    assert claims(tmp_path) == ["t1", "t1"], proc.stdout + proc.stderr
    assert proc.stderr.count("a check failed: task t1 reopened") == 2
    assert "Held task t1: failed 2 times (--max-attempts 2)" in proc.stdout, proc.stdout
    show = shown(run_task, "t1")
    assert "Held:" in show and "Retries:     2" in show, show
    (pull,) = remote.pulls.values()
    assert not pull["merged"] and pull["state"] == "open"
    assert proc.returncode == 0, proc.stderr


def test_a_parallel_rerun_of_a_reopened_task_continues_on_its_pull_requests_branch(
        run_ralph, run_task, remote, tmp_path):
    heads = []

    def checks(number, sha):                     # the first attempt's head fails its check
        heads.append(sha)
        remote.set_checks(sha, ("test", "failure" if len(heads) == 1 else "success", "log"))
    remote.on_pull = checks
    agent = AGENT.replace('out=$("$RALPH_TASK_SCRIPT" claim) || exit 0\n', "").replace(
        """tid=$(printf '%s\\n' "$out" | sed -n 's/^id: //p' | head -n 1)""",
        'tid=$(cat "$RALPH_FROZEN_IDS_FILE")')                 # ralph claimed it for the session
    assert "claim" not in agent
    assert run_task("create", "t1", "Parse the input").returncode == 0
    run = ("build", "--pr", "--parallel", "2")
    first = run_ralph(*run, env={**remote.env, "STUB_ACTION": agent}, timeout=240)
    assert first.returncode == 0, first.stderr
    assert "a check failed: task t1 reopened" in first.stderr
    second = run_ralph(*run, env={**remote.env, "STUB_ACTION": agent}, timeout=240)
    assert second.returncode == 0, second.stderr
    (pull,) = remote.pulls.values()
    assert pull["merged"] and len(heads) == 2, second.stderr
    first_attempt, second_attempt = heads
    parent = git(remote.bare, "rev-parse", f"{second_attempt}^").strip()
    assert parent == first_attempt                    # on top of it, no force push losing it
    work = git(remote.bare, "show", "main:work-t1.txt")
    assert work == "session on t1\nsession on t1\n"   # the worktree had the first attempt's line
