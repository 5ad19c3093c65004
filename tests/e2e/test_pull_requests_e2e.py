"""Black-box: `ralph build --pr` against the stand-in of GitHub's REST API (tests/ghstandin.py),
whose bare repository is the checkout's origin: a pull request per finished task, checks and
reviews fed back into the task, merges, and a pull request a person closed."""
from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

import ghstandin
from conftest import RALPH, git, install_stub, read_jsonl, wait_for
from sourcehelp import AGENT, claims

AGENT = ghstandin.appending_agent(AGENT)


@pytest.fixture
def remote(tmp_path, git_repo, base_env, bin_dir):
    install_stub(bin_dir)
    standin = ghstandin.origin(tmp_path, git_repo, base_env, AGENT,
                               STUB_LOG=str(tmp_path / "agent.jsonl"))
    yield standin
    standin.close()


def green(standin):
    standin.on_pull = lambda number, sha: standin.set_checks(sha, ("test", "success", "ok"))


def remote_files(standin) -> list[str]:
    return sorted(subprocess.run(["git", "ls-tree", "--name-only", "main"], cwd=standin.bare,
                                 capture_output=True, text=True, check=True).stdout.split())


def test_labelled_issues_become_merged_pull_requests(run_ralph, remote, git_repo, tmp_path):
    green(remote)
    a = remote.add_issue("Parse the input", "", labels=("ralph", "priority:1"))
    b = remote.add_issue("Print a report", "blocked by #1", labels=("ralph",))
    proc = run_ralph("build", "--tasks", "github", "--pr", env=remote.env, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "All tasks complete. Exiting loop." in proc.stdout
    assert claims(tmp_path) == [str(a), str(b)]
    pulls = sorted(remote.pulls.values(), key=lambda p: p["number"])
    assert [(p["head"]["ref"], p["merged"]) for p in pulls] == [
        (f"ralph-pr/{a}", True), (f"ralph-pr/{b}", True)]
    assert f"Closes #{a}" in pulls[0]["body"] and "Result: `" in pulls[0]["body"]
    assert remote.issues[a]["state"] == remote.issues[b]["state"] == "closed"
    assert remote_files(remote) == [".gitignore", "README.md", "specs", f"work-{a}.txt",
                                    f"work-{b}.txt"]
    assert f"pr: #{pulls[0]['number']} opened for task {a}" in proc.stderr
    assert git(git_repo, "branch", "--show-current").strip() == "main"   # the user's branch stays
    report = run_ralph("report", "--md", env=remote.env).stdout
    assert (f"pull request #{pulls[0]['number']} merged, checks success "
            f"{pulls[0]['html_url']}; issue https://github.com/acme/widgets/issues/{a}") in report
    status = run_ralph("status", env=remote.env)
    assert (f"  {a}  #{pulls[0]['number']} merged, checks success  {pulls[0]['html_url']}  "
            f"issue https://github.com/acme/widgets/issues/{a}") in status.stdout


def test_a_failed_check_sends_its_log_to_the_next_session_on_the_same_branch(
        run_ralph, remote, git_repo, tmp_path):
    heads = []

    def checks(number, sha):
        heads.append(sha)
        if len(heads) == 1:
            remote.set_checks(sha, ("lint", "success", "clean"),
                              ("test", "failure", "collected 3 items\n"
                               "FAILED test_parse.py::test_empty - AssertionError: 2 != 3\n"
                               "\x1b[31m1 failed\x1b[0m"))
        else:
            remote.set_checks(sha, ("lint", "success", "clean"), ("test", "success", "ok"))
    remote.on_pull = checks
    number = remote.add_issue("Parse the input", "", labels=("ralph",))
    proc = run_ralph("build", "--tasks", "github", "--pr", env=remote.env, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert claims(tmp_path) == [str(number), str(number)]
    (pull,) = remote.pulls.values()
    assert (pull["merged"], len(heads)) == (True, 2), proc.stderr
    prompts = [json.dumps(r["argv"]) for r in read_jsonl(tmp_path / "agent.jsonl")]
    assert "AssertionError: 2 != 3" not in prompts[0]
    assert "check test failure" in prompts[1] and "AssertionError: 2 != 3" in prompts[1]
    assert "\\u001b[31m" not in prompts[1] and "\\\\x1b[31m1 failed" in prompts[1]
    assert f"continues on branch ralph-pr/{number}" in prompts[1]
    assert "(the check run's output: not a GitHub Actions job)" in prompts[1]
    assert any(c.startswith("ralph: failed: pull request #") and "AssertionError" in c
               for c in remote.comment_bodies(number))
    assert remote_files(remote).count(f"work-{number}.txt") == 1


def test_a_failed_actions_job_sends_its_log_and_an_expired_log_its_check_output(
        run_ralph, remote, git_repo, tmp_path):
    """A GitHub Actions check run's id is its job's: the job's log (a redirect to another
    host, followed without the token) is what the next session reads, up to its last error;
    a log that expired leaves the check run's output, said in one line."""
    steps = [f"2026-01-01T00:00:{n % 60:02d}.1234567Z step line {n}" for n in range(200)]
    log = "\n".join(["\ufeff" + steps[0], *steps[1:],
                     "2026-01-01T00:01:00.0000000Z E   AssertionError: 2 != 3 in test_parse",
                     "2026-01-01T00:01:00.0000000Z ##[error]Process completed with exit code 1.",
                     "2026-01-01T00:01:01.0000000Z Post job cleanup.",
                     "2026-01-01T00:01:02.0000000Z Cleaning up orphan processes"])
    heads = []

    def checks(number, sha):
        heads.append(sha)
        if len(heads) == 1:
            remote.set_checks(sha, ("test", "failure", "OUTPUT SUMMARY OF TEST"),
                              ("lint", "failure", "lint: line 3 is too long"),
                              jobs={"test": log, "lint": 410})
        else:
            remote.set_checks(sha, ("test", "success", "ok"), ("lint", "success", "ok"))
    remote.on_pull = checks
    number = remote.add_issue("Parse the input", "", labels=("ralph",))
    proc = run_ralph("build", "--tasks", "github", "--pr", env=remote.env, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert len(heads) == 2 and claims(tmp_path) == [str(number), str(number)]
    prompts = ["\n".join(r["argv"]) for r in read_jsonl(tmp_path / "agent.jsonl")]
    test_part = prompts[1][prompts[1].index("check test failure:"):]
    assert "E   AssertionError: 2 != 3 in test_parse\n##[error]Process completed" in test_part
    assert "step line 199" in test_part and "step line 150" not in test_part    # its tail
    assert "OUTPUT SUMMARY OF TEST" not in prompts[1]
    assert "Cleaning up orphan processes" not in prompts[1] and "2026-01-01T" not in prompts[1]
    assert ("check lint failure:\n(the job's log cannot be read (GitHub answered 410, expired "
            "or not allowed): the check run's output instead)\nlint: line 3 is too long"
            ) in prompts[1]
    (download,) = remote.storage_requests
    assert "Authorization" not in download[1] and "authorization" not in download[1]
    assert ghstandin.TOKEN not in json.dumps(download)


def test_a_review_asking_for_changes_reopens_the_task_with_its_comments(
        run_ralph, remote, git_repo, tmp_path):
    reviewed = []

    def checks(number, sha):
        remote.set_checks(sha, ("test", "success", "ok"))
        if not reviewed:
            reviewed.append(sha)
            remote.review(number, "CHANGES_REQUESTED", "Please name the constant.",
                          comments=[("parse.py", 3, "magic number 42")])
    remote.on_pull = checks
    remote.add_issue("Parse the input", "", labels=("ralph",))
    proc = run_ralph("build", "--tasks", "github", "--pr", env=remote.env, timeout=180)
    assert proc.returncode == 0, proc.stderr
    prompts = [json.dumps(r["argv"]) for r in read_jsonl(tmp_path / "agent.jsonl")]
    assert len(prompts) == 2
    assert "Please name the constant." in prompts[1] and "parse.py:3: magic number 42" in \
        prompts[1]
    (pull,) = remote.pulls.values()
    assert pull["merged"]


def test_manual_merge_leaves_a_green_pull_request_and_a_closed_one_holds_its_task(
        run_ralph, remote, git_repo, tmp_path):
    green(remote)
    number = remote.add_issue("Parse the input", "", labels=("ralph",))
    runs = []

    def close_when_green(n, sha):
        remote.set_checks(sha, ("test", "success", "ok"))
        runs.append(n)
    remote.on_pull = close_when_green
    proc = run_ralph("build", "--tasks", "github", "--pr", "--pr-merge", "manual", "-n", "1",
                     env=remote.env, timeout=180)
    assert proc.returncode == 0, proc.stderr
    (pull,) = remote.pulls.values()
    assert not pull["merged"] and pull["state"] == "open"
    assert f"pr: #{pull['number']} is green: left for a person to merge" in proc.stderr
    remote.close_pull(pull["number"])
    again = run_ralph("build", "--tasks", "github", "--pr", "-n", "1", env=remote.env,
                      timeout=180)
    assert f"pr: #{pull['number']} closed without merging: task {number} held" in again.stderr
    assert remote.issues[number]["state"] == "open"
    assert claims(tmp_path) == [str(number)]


@pytest.mark.parametrize("args, line", [
    (("--pr-merge", "fast"), "Error: --pr-merge must be one of auto, squash, rebase, manual, got 'fast'"),
    (("--pr-wait", "ci"), "Error: --pr-wait must be one of checks, none, got 'ci'"),
])
def test_a_bad_pr_setting_is_one_line_and_nothing_is_written(run_ralph, remote, git_repo,
                                                             args, line):
    proc = run_ralph("build", "--tasks", "github", "--pr", *args, env=remote.env)
    assert (proc.returncode, proc.stderr.splitlines()) == (1, [line])
    assert not (git_repo / ".ralph").exists()


def test_pr_with_a_rejected_token_stops_before_any_session(run_ralph, remote, git_repo,
                                                           tmp_path):
    remote.add_issue("One", "", labels=("ralph",))
    (git_repo / "specs").mkdir(exist_ok=True)
    proc = run_ralph("build", "--pr", env={**remote.env, "GH_TOKEN": "wrong"})
    assert proc.returncode == 9, proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("Error: GitHub rejected the token")
    assert claims(tmp_path) == []


def test_two_machines_never_open_two_pull_requests_for_one_task(
        run_ralph, remote, git_repo, tmp_path, base_env):
    """Machine one opens the pull request (left for a person); the task's hold is on GitHub,
    so machine two does not take it. A person lifts the hold and machine two redoes the task:
    its branch exists already, so it opens no second pull request."""
    green(remote)
    number = remote.add_issue("Parse the input", "", labels=("ralph",))
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote.bare), str(other)], check=True,
                   env=base_env)
    (other / "ralph.yml").write_text("pr_poll: 1s\n")
    first = run_ralph("build", "--tasks", "github", "--pr", "--pr-merge", "manual", "-n", "1",
                      env=remote.env, timeout=180)
    assert first.returncode == 0, first.stderr
    assert "ralph:held" in remote.labels(number)
    idle = run_ralph("build", "--tasks", "github", "--pr", "-n", "1", env=remote.env,
                     cwd=other, timeout=180)
    assert "No tasks available. Exiting loop." in idle.stdout, idle.stderr
    remote.set_labels(number, "ralph")                                 # a person lifts it
    second = run_ralph("build", "--tasks", "github", "--pr", "--pr-merge", "manual", "-n", "1",
                       env=remote.env, cwd=other, timeout=180)
    assert second.returncode == 0, second.stderr
    assert (f"pr: ralph-pr/{number} exists already (another run opened it): task {number} "
            "gets no second pull request") in second.stderr
    assert claims(tmp_path) == [str(number), str(number)]
    assert [p["head"]["ref"] for p in remote.pulls.values()] == [f"ralph-pr/{number}"]


def test_parallel_sessions_each_open_a_pull_request_instead_of_merging_locally(
        run_ralph, remote, git_repo, tmp_path):
    heads = {}

    def checks(number, sha):                     # each pull request's first head fails once
        if number in heads:
            remote.set_checks(sha, ("test", "success", "ok"))
        else:
            heads[number] = sha
            remote.set_checks(sha, ("test", "failure", f"broken in #{number}"))
    remote.on_pull = checks
    a = remote.add_issue("Parse the input", "", labels=("ralph", "component:parse"))
    b = remote.add_issue("Print a report", "", labels=("ralph", "component:report"))
    local = git(git_repo, "rev-parse", "main").strip()
    agent = AGENT.replace('out=$("$RALPH_TASK_SCRIPT" claim) || exit 0\n', "").replace(
        """tid=$(printf '%s\\n' "$out" | sed -n 's/^id: //p' | head -n 1)""",
        'tid=$(cat "$RALPH_FROZEN_IDS_FILE")')                 # ralph claimed it for the session
    assert "claim" not in agent and "RALPH_FROZEN_IDS_FILE" in agent
    run = ("build", "--tasks", "github", "--pr", "--parallel", "2")
    first = run_ralph(*run, env={**remote.env, "STUB_ACTION": agent}, timeout=240)
    assert first.returncode == 0, first.stderr
    numbers = sorted(remote.pulls)
    assert len(numbers) == 2 and not any(p["merged"] for p in remote.pulls.values())
    assert "a check failed: task" in first.stderr       # reopened: a run tries a task once
    second = run_ralph(*run, env={**remote.env, "STUB_ACTION": agent}, timeout=240)
    assert second.returncode == 0, second.stderr
    assert sorted(remote.pulls) == numbers               # the same two pull requests
    pulls = sorted(remote.pulls.values(), key=lambda p: p["head"]["ref"])
    assert [(p["head"]["ref"], p["merged"]) for p in pulls] == [
        (f"ralph-pr/{a}", True), (f"ralph-pr/{b}", True)]
    assert sorted(claims(tmp_path)) == sorted([str(a), str(a), str(b), str(b)])
    assert remote.issues[a]["state"] == remote.issues[b]["state"] == "closed"
    assert f"work-{a}.txt" in remote_files(remote) and f"work-{b}.txt" in remote_files(remote)
    assert git(git_repo, "rev-parse", "main").strip() == local     # nothing merged locally


@pytest.mark.parametrize("args, line", [
    (("--sync",), "Error: --pr and --sync both push: choose one"),
    (("--parallel", "2", "--merge", "ff"),
     "Error: --pr with --parallel: the pull request is the merge, so --merge ff cannot apply "
     "(leave it out, or --merge none)"),
])
def test_pr_beside_a_setting_it_cannot_work_with_is_one_line(run_ralph, remote, git_repo, args,
                                                             line):
    proc = run_ralph("build", "--tasks", "github", "--pr", *args, env=remote.env)
    assert (proc.returncode, proc.stderr.splitlines()[-1:]) == (1, [line]), proc.stderr
    assert not (git_repo / ".ralph").exists()


def test_an_interrupted_pr_session_leaves_the_checkout_on_its_branch(run_ralph, remote, git_repo,
                                                                     tmp_path):
    remote.add_issue("Parse the input", "", labels=("ralph",))
    started = tmp_path / "started"
    env = {**remote.env, "STUB_ACTION": f"touch '{started}'; exec sleep 60"}
    proc = subprocess.Popen([sys.executable, str(RALPH), "build", "--tasks", "github", "--pr"],
                            cwd=git_repo, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for(started.exists, timeout=60)
        assert git(git_repo, "branch", "--show-current").strip() == ""    # detached meanwhile
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130
    assert git(git_repo, "branch", "--show-current").strip() == "main"


def test_pr_without_an_origin_is_one_line(run_ralph, remote, git_repo, base_env):
    git(git_repo, "remote", "remove", "origin", env=base_env)
    proc = run_ralph("build", "--tasks", "github", "--pr", env=remote.env)
    assert (proc.returncode, proc.stderr.splitlines()) == (1, [
        "Error: --pr pushes each task's branch to the remote 'origin', which this checkout "
        "does not have"]), proc.stderr


def test_a_green_pull_request_waits_for_the_approval_the_repository_requires(
        remote, git_repo):
    green(remote)
    remote.require_approval = True
    number = remote.add_issue("Parse the input", "", labels=("ralph",))
    proc = subprocess.Popen([sys.executable, str(RALPH), "build", "--tasks", "github", "--pr"],
                            cwd=git_repo, env=remote.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: any(verb == "PUT" and status == 405
                             for verb, _, status in remote.requests), timeout=90)
        (pull,) = remote.pulls.values()
        assert not pull["merged"]
        remote.review(pull["number"], "APPROVED", "Looks good.")
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert pull["merged"] and remote.issues[number]["state"] == "closed"
    assert (f"pr: pull request #{pull['number']} cannot be merged yet: At least 1 approving "
            "review is required by reviewers with write access.") in err.splitlines()
    assert f"pr: waiting for pull requests: #{pull['number']} (task {number})" in err


def test_only_the_checks_the_base_branch_requires_are_waited_for(run_ralph, remote, git_repo):
    remote.required_checks = ["test"]
    remote.on_pull = lambda number, sha: remote.set_checks(
        sha, ("test", "success", "ok"), ("lint", "failure", "style nit"))
    number = remote.add_issue("Parse the input", "", labels=("ralph",))
    proc = run_ralph("build", "--tasks", "github", "--pr", env=remote.env, timeout=180)
    assert proc.returncode == 0, proc.stderr
    (pull,) = remote.pulls.values()
    assert pull["merged"] and remote.issues[number]["state"] == "closed"
    assert "a check failed" not in proc.stderr


def test_a_github_failure_between_sessions_is_one_line_and_settled_later(run_ralph, remote,
                                                                        git_repo):
    def green_then_fail(number, sha):
        remote.set_checks(sha, ("test", "success", "ok"))
        remote.failing.append(f"/repos/acme/widgets/pulls/{number}")   # its next read
    remote.on_pull = green_then_fail
    number = remote.add_issue("Parse the input", "", labels=("ralph",))
    proc = run_ralph("build", "--tasks", "github", "--pr", env=remote.env, timeout=180)
    assert proc.returncode == 0, proc.stderr
    (pull,) = remote.pulls.values()
    assert pull["merged"] and remote.issues[number]["state"] == "closed"
    assert (f"pr: GitHub GET /repos/acme/widgets/pulls/{pull['number']}: 502 Server Error; "
            "tried again before the next session") in proc.stderr.splitlines()
