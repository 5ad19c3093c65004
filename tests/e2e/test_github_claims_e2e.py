"""Black-box: two machines (two clones of one repository, each with its own .ralph/ and lease
record) claiming issues of one GitHub repository through the stand-in (tests/ghstandin.py).
The claim ref `refs/ralph/claims/<issue>` decides: its creation answers 422 to all but one
claimer (docs/decisions/0048). The races are put in order by the stand-in holding one
request until the test lets it go: no timing decides a result."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import ghstandin
from conftest import RALPH, TASK, git, ignore_ralph_dir, run_process, wait_for
from sourcehelp import agent_env  # noqa: F401 (a fixture)

CLAIM_1 = "refs/ralph/claims/1"


@pytest.fixture
def github(tmp_path, git_repo, base_env):
    """The stand-in, its bare repository holding git_repo's main (machine A's clone), and
    machine B: a second clone of it. Both name the repository through GITHUB_REPOSITORY."""
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    ignore_ralph_dir(git_repo, base_env)
    git(git_repo, "push", "-q", str(bare), "main", env=base_env)
    git(tmp_path, "clone", "-q", str(bare), "machine-b", env=base_env)
    standin = ghstandin.Standin(bare)
    standin.env = {**base_env, "GITHUB_API_URL": standin.url, "GH_TOKEN": ghstandin.TOKEN,
                   "GITHUB_REPOSITORY": "acme/widgets", "RALPH_TASKS": "github"}
    standin.machine_b = tmp_path / "machine-b"
    yield standin
    standin.close()


def task(github, repo: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return run_process([sys.executable, str(TASK), *args], cwd=repo,
                       env={**github.env, **env}, timeout=60)


def claimed_id(output: str) -> str:
    return next(line[4:] for line in output.splitlines() if line.startswith("id: "))


def test_two_machines_that_peeked_the_same_issue_never_both_claim_it(github, git_repo):
    first, second = github.add_issue("First"), github.add_issue("Second")
    # Machine A wins the claim ref of #1 and stops before its label: the listing still shows
    # #1 open to anyone who reads it now.
    arrived, go = github.hold_once("POST", rf"/issues/{first}/labels$")
    machine_a = subprocess.Popen([sys.executable, str(TASK), "claim"], cwd=git_repo,
                                 env={**github.env, "RALPH_AGENT_ID": "a1"},
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(arrived.is_set)
        peeked = task(github, github.machine_b, "peek")
        assert "title: First" in peeked.stdout                 # B sees #1 claimable
        machine_b = task(github, github.machine_b, "claim", RALPH_AGENT_ID="b1")
        assert machine_b.returncode == 0, machine_b.stderr
        assert claimed_id(machine_b.stdout) == str(second)
        none_left = task(github, github.machine_b, "claim", RALPH_AGENT_ID="b2")
        assert (none_left.returncode, none_left.stderr.strip()) == (2, "No eligible tasks")
    finally:
        go.set()
        out, err = machine_a.communicate(timeout=60)
    assert machine_a.returncode == 0, err
    assert claimed_id(out) == str(first)
    assert github.claim_refs() == [CLAIM_1, "refs/ralph/claims/2"]
    assert "ralph:active" in github.labels(first) and "ralph:active" in github.labels(second)
    # No branch appears for a claim: the refs live outside refs/heads/.
    heads = subprocess.run(["git", "for-each-ref", "--format=%(refname)", "refs/heads/"],
                           cwd=github.bare, capture_output=True, text=True).stdout.split()
    assert heads == ["refs/heads/main"]


def test_a_claim_costs_two_requests_more_than_the_label_and_the_assignee(github, git_repo):
    github.add_issue("First")
    second = github.add_issue("Second")
    assert task(github, git_repo, "claim", RALPH_AGENT_ID="a1").returncode == 0
    del github.requests[:]
    claimed = task(github, git_repo, "claim", RALPH_AGENT_ID="a2")
    assert claimed.returncode == 0, claimed.stderr
    assert claimed_id(claimed.stdout) == str(second)
    writes = [(verb, path.split("?")[0], status) for verb, path, status in github.requests
              if verb != "GET"]
    assert writes == [("POST", "/repos/acme/widgets/git/commits", 201),
                      ("POST", "/repos/acme/widgets/git/refs", 201),
                      ("POST", f"/repos/acme/widgets/issues/{second}/labels", 200),
                      ("POST", f"/repos/acme/widgets/issues/{second}/assignees", 201)]
    # Reads: what changed in the listing, and the token's user once per process; the commit
    # the claim's commit builds on was looked up by the first claim and kept.
    reads = [path.split("?")[0] for verb, path, _ in github.requests if verb == "GET"]
    assert reads == ["/repos/acme/widgets/issues", "/user"]


def claim_commit(repo: Path, number: int) -> str:
    note = repo / ".ralph" / "sources" / "github" / "acme+widgets" / "claims" / str(number)
    return note.read_text().strip()


def freed_and_taken_by_b(github, git_repo) -> int:
    """Machine A claims an issue (a lease that has run out at once, as a dead session's
    does), a person on machine B frees it with `task fail`, and B claims it."""
    number = github.add_issue("Contested")
    assert task(github, git_repo, "claim", "--lease", "0", RALPH_AGENT_ID="a1").returncode == 0
    freed = task(github, github.machine_b, "fail", str(number), "--reason", "machine A is gone")
    assert freed.returncode == 0, freed.stderr
    taken = task(github, github.machine_b, "claim", RALPH_AGENT_ID="b1")
    assert claimed_id(taken.stdout) == str(number)
    assert github._ref(CLAIM_1) == claim_commit(github.machine_b, number) != claim_commit(
        git_repo, number)
    return number


def test_a_machine_back_after_its_claim_was_freed_does_not_take_the_issue_over(github,
                                                                              git_repo):
    number = freed_and_taken_by_b(github, git_repo)
    again = task(github, git_repo, "claim", RALPH_AGENT_ID="a2")    # A's expired lease
    assert (again.returncode, again.stderr.strip()) == (2, "No eligible tasks")
    assert github._ref(CLAIM_1) == claim_commit(github.machine_b, number)
    assert "ralph:active" in github.labels(number)


def test_a_machine_back_after_its_claim_was_freed_gives_back_nothing_of_the_new_claim(
        github, git_repo):
    number = freed_and_taken_by_b(github, git_repo)
    comments = github.comment_bodies(number)
    settled = task(github, git_repo, "fail", str(number), "--reason", "interrupted",
                   RALPH_AGENT_ID="a1")                            # a new run's settling
    assert settled.returncode == 0, settled.stderr
    assert github._ref(CLAIM_1) == claim_commit(github.machine_b, number)
    assert "ralph:active" in github.labels(number)
    assert github.issues[number]["assignees"] != [] and github.comment_bodies(number) == comments


def test_a_failed_or_abandoned_claim_is_claimable_again_on_the_other_machine(github, git_repo):
    number = github.add_issue("Flaky")
    assert task(github, git_repo, "claim", RALPH_AGENT_ID="a1").returncode == 0
    assert task(github, github.machine_b, "claim", RALPH_AGENT_ID="b1").returncode == 2
    failed = task(github, git_repo, "fail", str(number), "--reason", "tests fail",
                  RALPH_AGENT_ID="a1")
    assert failed.returncode == 0, failed.stderr
    assert github.claim_refs() == [] and github.labels(number) == ["ralph"]
    again = task(github, github.machine_b, "claim", RALPH_AGENT_ID="b1")
    assert again.returncode == 0, again.stderr
    assert claimed_id(again.stdout) == str(number)
    assert github.claim_refs() == [CLAIM_1]
    # Machine B dies holding it: a person on machine A gives it back with `task fail`, which
    # takes the label, the assignee and the claim ref off, and A may claim it.
    assert task(github, git_repo, "claim", RALPH_AGENT_ID="a2").returncode == 2
    freed = task(github, git_repo, "fail", str(number), "--reason", "machine B is gone")
    assert freed.returncode == 0, freed.stderr
    assert github.claim_refs() == []
    taken = task(github, git_repo, "claim", RALPH_AGENT_ID="a2")
    assert claimed_id(taken.stdout) == str(number)


def test_a_claim_won_on_an_issue_closed_since_the_listing_gives_it_back(github, git_repo):
    first, second = github.add_issue("Done elsewhere"), github.add_issue("Open")
    github.freeze_listing()                  # the listing lags: it shows both open, unclaimed
    assert claimed_id(task(github, git_repo, "claim", RALPH_AGENT_ID="a1").stdout) == str(first)
    assert task(github, git_repo, "done", str(first), RALPH_AGENT_ID="a1").returncode == 0
    assert github.claim_refs() == [] and github.issues[first]["state"] == "closed"
    claimed = task(github, github.machine_b, "claim", RALPH_AGENT_ID="b1")
    assert claimed.returncode == 0, claimed.stderr
    assert claimed_id(claimed.stdout) == str(second)
    assert github.claim_refs() == ["refs/ralph/claims/2"]
    assert github.labels(first) == ["ralph"] and github.issues[first]["assignees"] == []


def test_a_repository_without_a_commit_refuses_the_claim_in_one_line(github, git_repo,
                                                                    tmp_path):
    empty = tmp_path / "empty.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(empty)], check=True)
    standin = ghstandin.Standin(empty)
    try:
        number = standin.add_issue("First")
        env = {**github.env, "GITHUB_API_URL": standin.url}
        proc = run_process([sys.executable, str(TASK), "claim"], cwd=git_repo, env=env)
        assert (proc.returncode, proc.stderr.splitlines()) == (1, [
            "Error: GitHub: acme/widgets has no commit on main: a claim is a ref at a commit; "
            "push a first commit"])
        assert standin.labels(number) == ["ralph"]
        assert not list((git_repo / ".ralph" / "sources" / "github" / "leases").glob("*"))
    finally:
        standin.close()


def test_a_token_that_may_not_write_refs_refuses_the_claim_in_one_line(github, git_repo):
    number = github.add_issue("First")
    github.refs_forbidden = True
    proc = task(github, git_repo, "claim", RALPH_AGENT_ID="a1")
    assert (proc.returncode, proc.stderr.splitlines()) == (1, [
        "Error: GitHub POST /repos/acme/widgets/git/refs: 403 Resource not accessible by "
        "personal access token"])
    assert github.labels(number) == ["ralph"] and github.issues[number]["assignees"] == []
    assert not list((git_repo / ".ralph" / "sources" / "github" / "leases").glob("*"))


# A --parallel session's task is the one ralph claimed for it (its frozen ids file).
PARALLEL_AGENT = (r'tid=$(cat "$RALPH_FROZEN_IDS_FILE"); echo "$tid" >> "$STUB_CLAIMS"; '
                  r'echo "$tid" > "work-$tid.txt"; git add -A >/dev/null; '
                  r'git commit -qm "on $tid"; "$RALPH_TASK_SCRIPT" done "$tid" '
                  r'--result "{\"commit\": \"$(git rev-parse HEAD)\"}" >/dev/null')


def build(github, repo: Path, claims: Path, env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(RALPH), "build", "--tasks", "github", "-n", "10", *args],
        cwd=repo, env={**github.env, **env, "STUB_CLAIMS": str(claims)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("machine_b_args", [(), ("--parallel", "2")], ids=["loop", "parallel"])
def test_two_builds_on_two_machines_run_each_issue_once(github, git_repo, agent_env,
                                                        tmp_path, machine_b_args):
    numbers = [github.add_issue(f"Work {n}", labels=("ralph", f"component:c{n}"))
               for n in range(3)]
    claims_a, claims_b = tmp_path / "claims-a.txt", tmp_path / "claims-b.txt"
    env_b = {**agent_env, "STUB_ACTION": PARALLEL_AGENT} if machine_b_args else agent_env
    # A's claim of #1 stops before its label until B has claimed: B's listing shows #1 open.
    arrived, go = github.hold_once("POST", rf"/issues/{numbers[0]}/labels$")
    runs = [build(github, git_repo, claims_a, agent_env)]
    try:
        wait_for(arrived.is_set, timeout=60)
        runs.append(build(github, github.machine_b, claims_b, env_b, *machine_b_args))
        wait_for(lambda: claims_b.exists() and claims_b.read_text(), timeout=60)
    finally:
        go.set()
        outputs = [run.communicate(timeout=240) for run in runs]
    for run, (out, err) in zip(runs, outputs):
        assert run.returncode == 0, err
    ran_a, ran_b = (p.read_text().split() if p.exists() else [] for p in (claims_a, claims_b))
    assert ran_a[0] == str(numbers[0]) and str(numbers[0]) not in ran_b
    assert sorted(ran_a + ran_b, key=int) == [str(n) for n in numbers]
    for number in numbers:
        assert github.issues[number]["state"] == "closed"
        assert len([c for c in github.comment_bodies(number) if c.startswith("ralph: done")]) == 1
    assert github.claim_refs() == []
