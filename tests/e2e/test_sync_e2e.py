"""Black-box: `ralph build --sync` on several machines (clones of one bare origin, each with
its own .ralph/) over one shared backlog, with tests/stubs/fleet-agent as the agent
(tests/fleethelp.py). The store is RALPH_TASKS_DB=<one SQLite file>; the fleet helper takes
another store's value the same way."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import log_git_calls, read_jsonl

HOOKS_OFF = "-c core.hooksPath=/dev/null -c core.fsmonitor=false "   # ralph's own git calls
from fleethelp import Fleet, make_fleet

TASKS = [f"t{n:02d}" for n in range(1, 31)]
# FLEET_AFTER: once the agent committed and marked its task done, kill -9 its parent, ralph.py
CRASH = "kill -9 $(awk '{print $4}' /proc/$PPID/stat)"


def sync_events(clone: Path) -> list[dict]:
    (events,) = clone.glob(".ralph/runs/*/events.jsonl")
    return [e for e in read_jsonl(events) if e["event"] == "sync"]


def crashed_sync_run(pair: Fleet, *args: str, before: str = "") -> None:
    """`ralph build --sync <args>` on machine 0, killed with SIGKILL by its agent once that
    agent committed and marked its task done (after running `before`, sh -c)."""
    first = pair.ralph(0, "build", "--sync", *args,
                       FLEET_AFTER=f"{before}; {CRASH}" if before else CRASH)
    assert first.returncode == -9, first.stderr


def last_line(stdout: str) -> str:
    """The run's last message (the agent's `deregistered <id>` comes at exit,
    docs/contract/ralph-cli.md s.17)."""
    return [line for line in stdout.splitlines() if not line.startswith("deregistered ")][-1]


@pytest.fixture
def pair(tmp_path: Path, base_env: dict, bin_dir: Path) -> Fleet:
    return make_fleet(tmp_path, base_env, bin_dir, machines=2)


def test_three_machines_at_once_do_every_task_exactly_once_and_origin_has_every_commit(
        tmp_path, base_env, bin_dir):
    fleet = make_fleet(tmp_path, base_env, bin_dir, machines=3)
    fleet.create(*TASKS)
    # -n: a machine whose peek shows only tasks the others hold runs a session that claims
    # nothing; the limit keeps those from tripping the idle breaker.
    runs = [fleet.start(i, "build", "--sync", "-n", "60") for i in range(3)]
    done = [fleet.finish(proc, timeout=120) for proc in runs]
    for proc in done:
        assert proc.returncode == 0, proc.stderr
        assert last_line(proc.stdout) in ("All tasks complete. Exiting loop.",
                                          "No tasks available. Exiting loop.")
        assert "sync: main follows origin/main" in proc.stderr
    fleet.assert_every_task_done_once_and_on_origin(TASKS)
    assert len({clone for clone, _ in fleet.finished()}) >= 2  # they did work side by side
    assert fleet.origin_git("ls-tree", "--name-only", "main", "work/").split() == [
        f"work/{tid}.txt" for tid in TASKS]
    pushed = [t for clone in fleet.clones for e in sync_events(clone)
              if e["action"] == "pushed" for t in e["tasks"]]
    assert sorted(pushed) == TASKS                               # each pushed by its machine
    # Stub sessions take a fraction of a second, so pushes race a lot; a push that lost every
    # retry went with the machine's next one (above: each task pushed once), never conflicted.
    assert not any(e["action"] in ("conflict", "push_failed")
                   for clone in fleet.clones for e in sync_events(clone))


def test_a_push_race_is_retried_after_a_fetch_and_rebase(pair):
    pair.create("t01")
    other = pair.other_machine_pushes(1, "other.txt", "host2 was faster")
    proc = pair.ralph(0, "build", "--sync", "-n", "1", FLEET_AFTER=other)
    assert proc.returncode == 0, proc.stderr
    assert ("sync: push of main rejected: origin/main moved; fetched and rebased, pushing "
            "again (retry 1 of 5)\n") in proc.stderr
    assert "sync: pushed main to origin/main: 1 commit (task t01), head " in proc.stderr
    assert pair.origin_subjects() == ["t01: work", "other machine: host2 was faster", "initial"]
    assert pair.git(0, "rev-parse", "HEAD") == pair.origin_git("rev-parse", "main")
    assert pair.tasks()["t01"]["status"] == "done"
    # the rebase gave t01's commit a new id: its result names that one
    pushed = pair.origin_git("rev-parse", "main")
    assert pair.result_commits() == {"t01": pushed}
    events = sync_events(pair.clones[0])
    assert [e["action"] for e in events] == ["start", "push_retry", "pushed", "recommitted"]
    old = events[-1]["old"]
    assert (events[-1]["task"], events[-1]["new"]) == ("t01", pushed) and old != pushed
    assert (f"sync: task t01's result names commit {pushed[:12]}, its id after the rebase "
            f"(it was {old[:12]})\n") in proc.stderr


def test_a_conflict_between_two_machines_reopens_the_task_and_keeps_its_branch(pair):
    pair.create("t01", "t02")
    host2 = pair.clones[1]
    # During machine 1's session on t01, machine 2 does t02, which edits the same line, and
    # pushes first.
    other = (f"cd '{host2}' && git pull -q --rebase origin main && RALPH_AGENT_ID=host2 "
             f"FLEET_AFTER= claude && git push -q origin main")
    proc = pair.ralph(0, "build", "--sync", "-n", "1", FLEET_FILE="shared.txt",
                      FLEET_AFTER=other)
    assert proc.returncode == 0, proc.stderr
    tasks = pair.tasks()
    assert (tasks["t01"]["status"], tasks["t02"]["status"]) == ("open", "done")
    reason = tasks["t01"]["fail_reason"]
    host = pair.clones[0].name                 # RALPH_HOSTNAME, as the agents table has it
    assert reason.startswith("sync: rebase of main onto origin/main conflicts in shared.txt; "
                             f"the commits are kept on branch ralph/sync/{host}-")
    assert reason.endswith("/t01; main was reset to origin/main")
    assert tasks["t01"]["retry_count"] == 1
    kept = reason.split("kept on branch ")[1].split(";")[0]
    assert pair.git(0, "log", "-1", "--format=%s", kept) == "t01: work"
    assert pair.git(0, "show", f"{kept}:shared.txt") == "t01"
    assert pair.git(0, "rev-parse", "HEAD") == pair.origin_git("rev-parse", "main")
    assert pair.origin_git("show", "main:shared.txt") == "t02"
    assert f"sync: conflict: {reason[len('sync: '):]}; task t01 reopened\n" in proc.stderr
    conflict = [e for e in sync_events(pair.clones[0]) if e["action"] == "conflict"]
    assert [(e["kept"], e["tasks"], e["files"]) for e in conflict] == [
        (kept, ["t01"], ["shared.txt"])]
    state = json.loads(next(pair.clones[0].glob(".ralph/runs/*/state.json")).read_text())
    assert [(f["task"], f["reason"]) for f in state["failed"]] == [("t01", reason)]
    report = next(pair.clones[0].glob(".ralph/runs/*/report.md")).read_text()
    assert f"sync conflict: reopened; its commits are on branch {kept}" in report


def test_a_session_that_leaves_the_branch_stops_the_sync_before_any_push(pair):
    """The agent switches to another branch after its task: every later step of --sync works
    on main and would push main, while the next sessions commit on the other branch. The run
    stops before pushing anything, naming the checkout's state."""
    pair.create("t01", "t02")
    before = pair.origin_git("rev-parse", "main")
    proc = pair.ralph(0, "build", "--sync", "-n", "3", FLEET_AFTER="git switch -q -c side")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.splitlines()[-1] == (
        f"Error: --sync stopped: a session left {pair.clones[0]} unable to sync (HEAD is on "
        "branch side; --sync works on main); what it did is not pushed. Bring the commits to "
        "main, then run again")
    assert "sync: pushed" not in proc.stderr
    assert pair.origin_git("rev-parse", "main") == before
    pair.git(0, "switch", "-q", "main")                     # the backlog's scope is main's
    assert [t["status"] for t in pair.tasks().values()].count("done") == 1   # one session


@pytest.mark.parametrize("arrange,args,line", [
    (lambda f: f.git(0, "remote", "remove", "origin"), (),
     'Error: --sync needs the git remote "origin": {top} has none. '
     "Run: git remote add origin <url>"),
    (lambda f: f.git(0, "checkout", "-q", "--detach"), (),
     "Error: --sync needs a branch: HEAD is detached in {top}. Run: git checkout <branch>"),
    (lambda f: None, ("--parallel", "2"),
     "Error: --sync does not work with --parallel: run one ralph per clone"),
], ids=["no-origin", "detached-head", "parallel"])
def test_a_checkout_that_cannot_sync_stops_at_start_up_with_one_line_and_writes_nothing(
        pair, arrange, args, line):
    arrange(pair)
    db = Path(pair.env["RALPH_TASKS_DB"])
    proc = pair.ralph(0, "build", "--sync", *args)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == line.format(top=pair.clones[0]) + "\n"
    assert not (pair.clones[0] / ".ralph").exists() and not db.exists()


def test_plan_mode_brings_origin_s_commits_in_before_its_session_and_pushes_nothing(pair):
    pair.commit(1, "specs/more.md", "# More\n", push=True, message="a spec from host2")
    proc = pair.ralph(0, "plan", "--sync")
    assert proc.returncode == 0, proc.stderr
    assert "sync: main rebased onto origin/main: 1 commit from origin, head " in proc.stderr
    assert (pair.clones[0] / "specs" / "more.md").exists()
    assert [e["action"] for e in sync_events(pair.clones[0])] == ["start", "rebased"]


def test_a_dry_run_names_the_shared_branch_and_fetches_nothing(pair):
    pair.git(1, "commit", "-q", "--allow-empty", "-m", "host2 moves origin")
    pair.git(1, "push", "-q", "origin", "main")
    before = pair.git(0, "rev-parse", "origin/main")
    proc = pair.ralph(0, "build", "--sync", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert ("Sync: would fetch origin/main and rebase main onto it before each session, push "
            "it after each session that finishes a task (nothing fetched now).") in proc.stdout
    assert pair.git(0, "rev-parse", "origin/main") == before
    assert not (pair.clones[0] / ".ralph").exists()


def test_the_verify_gate_judges_the_session_s_diff_not_origin_s_commits_the_rebase_brought(
        pair):
    pair.commit(1, "tests/test_app.py", "def test_app():\n    assert True\n", push=True,
                message="a test")
    pair.git(0, "pull", "-q", "--rebase", "origin", "main")
    pair.git(1, "rm", "-q", "tests/test_app.py")
    pair.git(1, "commit", "-qm", "host2 removes the test")           # host2's own choice
    pair.git(1, "push", "-q", "origin", "main")
    pair.create("t01")
    proc = pair.ralph(0, "build", "--sync", "--verify", "true", "-n", "1")
    assert proc.returncode == 0, proc.stderr
    assert "verify: task t01 passed" in proc.stderr
    assert pair.tasks()["t01"]["status"] == "done" and not pair.tasks()["t01"]["held"]
    assert pair.origin_subjects()[0] == "t01: work"


@pytest.mark.parametrize("args", [("build", "--sync", "-n", "1"), ("plan", "--sync", "-n", "1"),
                                  ("build", "--sync", "--dry-run")],
                         ids=["build", "plan", "dry-run"])
def test_the_shared_branch_is_resolved_once_per_run(pair, bin_dir, tmp_path, args):
    pair.create("t01")
    log = tmp_path / "git-calls"
    log_git_calls(bin_dir, log)
    proc = pair.ralph(0, *args)
    assert proc.returncode == 0, proc.stderr
    calls = [c.removeprefix(HOOKS_OFF) for c in log.read_text().splitlines()]
    # resolving the shared branch is the run's only `git remote get-url` (the remote exists)
    assert [c for c in calls if c.startswith("remote get-url")] == ["remote get-url origin"]


def test_a_crashed_sync_run_resumed_without_the_flag_still_syncs(pair, bin_dir, tmp_path):
    pair.create("t01", "t02")
    crashed_sync_run(pair, "-n", "1")                         # t01 done, killed
    log = tmp_path / "git-calls"
    log_git_calls(bin_dir, log)
    proc = pair.ralph(0, "build", "-n", "1")                  # the run's settings keep --sync
    assert proc.returncode == 0, proc.stderr
    assert "sync: main follows origin/main" in proc.stderr
    # t01's commit goes before the session, t02's after it
    assert "sync: pushed main to origin/main: 1 commit (task t01), head " in proc.stderr
    assert "sync: pushed main to origin/main: 1 commit (task t02), head " in proc.stderr
    assert pair.origin_subjects() == ["t02: work", "t01: work", "initial"]
    calls = [c.removeprefix(HOOKS_OFF) for c in log.read_text().splitlines()]
    assert [c for c in calls if c.startswith("remote get-url")] == ["remote get-url origin"]


def test_a_crashed_sync_run_resumed_with_parallel_keeps_syncing_without_parallel(pair):
    """--sync does not work with --parallel; a resumed run's kept --sync wins over a
    --parallel given now: one line says so and the run goes on as the single loop."""
    pair.create("t01", "t02")
    crashed_sync_run(pair, "-n", "1")                         # t01 done, killed
    proc = pair.ralph(0, "build", "--parallel", "2", "-n", "1")
    assert proc.returncode == 0, proc.stderr
    assert ("--parallel 2 ignored: the resumed run syncs (--sync), which does not work with "
            "--parallel\n") in proc.stderr
    assert "sync: pushed main to origin/main: 1 commit (task t01), head " in proc.stderr
    assert "sync: pushed main to origin/main: 1 commit (task t02), head " in proc.stderr
    assert pair.origin_subjects() == ["t02: work", "t01: work", "initial"]


def test_a_crashed_parallel_run_resumed_with_sync_stays_parallel_without_sync(pair):
    """The other way round: the resumed run kept --parallel (its state says so, as a
    `ralph build --parallel 2` killed with SIGKILL leaves it), so a --sync given now is
    dropped with one line, and nothing is fetched or pushed."""
    pair.create("t01", "t02")
    crashed_sync_run(pair, "-n", "2")                         # t01 done, killed
    (path,) = pair.clones[0].glob(".ralph/runs/*/state.json")
    state = json.loads(path.read_text())
    del state["options"]["sync"]
    state["options"]["parallel"] = 2
    path.write_text(json.dumps(state))
    proc = pair.ralph(0, "build", "--sync", "-n", "2")        # t02's session: the run's second
    assert proc.returncode == 0, proc.stderr
    logs = read_jsonl(path.with_name("events.jsonl"))
    assert [e["message"] for e in logs if e.get("kind") == "parallel"] == [
        "2 slots, merge rebase, into main"]                      # the run went parallel
    # and ran t02 as --parallel does: on a branch of its own, its lines prefixed
    assert re.search(rf"^\[t02\] started: agent \w+, branch ralph/{path.parent.name}/t02$",
                     proc.stdout, re.M), proc.stdout
    assert ("--sync ignored: the resumed run runs --parallel 2, which does not work with "
            "--sync\n") in proc.stderr, proc.stderr
    assert "sync: " not in proc.stderr
    assert pair.origin_subjects() == ["initial"]
    assert "sync" not in json.loads(path.read_text())["options"]


def test_a_run_killed_after_its_last_task_before_the_push_pushes_it_when_resumed(pair):
    pair.create("t01")
    crashed_sync_run(pair)
    assert pair.tasks()["t01"]["status"] == "done" and pair.origin_subjects() == ["initial"]
    proc = pair.ralph(0, "build")                             # the run's settings keep --sync
    assert proc.returncode == 0, proc.stderr
    assert last_line(proc.stdout) == "No tasks available. Exiting loop."   # no session ran
    assert pair.origin_subjects() == ["t01: work", "initial"]
    head = pair.origin_git("rev-parse", "main")
    assert ("sync: main holds 1 commit (task t01) that origin/main lacks, left unpushed when "
            "the run stopped; it goes with the next push\n") in proc.stderr
    assert (f"sync: pushed main to origin/main: 1 commit (task t01), head {head[:12]}\n"
            in proc.stderr)
    assert pair.git(0, "rev-parse", "HEAD") == head and pair.result_commits() == {"t01": head}
    events = sync_events(pair.clones[0])
    assert [e["action"] for e in events] == ["start", "start", "unpushed", "pushed"]
    assert (events[2]["tasks"], events[2]["commits"]) == (["t01"], 1)


def test_a_new_run_pushes_the_finished_task_an_earlier_run_could_not_push(pair):
    pair.create("t01")
    hook = pair.origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'origin: read-only tonight' >&2\nexit 1\n")
    hook.chmod(0o755)
    first = pair.ralph(0, "build", "--sync")
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("sync: push of main to origin/main failed: ") == 2   # + the end's
    assert pair.tasks()["t01"]["status"] == "done" and pair.origin_subjects() == ["initial"]
    hook.unlink()
    proc = pair.ralph(0, "build", "--sync")                   # a new run: nothing left to do
    assert proc.returncode == 0, proc.stderr
    assert last_line(proc.stdout) == "No tasks available. Exiting loop."
    assert pair.origin_subjects() == ["t01: work", "initial"]
    assert ("sync: main holds 1 commit (task t01) that origin/main lacks, left unpushed by an "
            "earlier run; it goes with the next push\n") in proc.stderr
    head = pair.origin_git("rev-parse", "main")
    assert (f"sync: pushed main to origin/main: 1 commit (task t01), head {head[:12]}\n"
            in proc.stderr)
    runs = [[e["action"] for e in read_jsonl(path) if e["event"] == "sync"]
            for path in pair.clones[0].glob(".ralph/runs/*/events.jsonl")]
    assert sorted(runs) == [["start", "push_failed", "push_failed"],
                            ["start", "unpushed", "pushed"]]


def test_a_resumed_run_s_push_of_what_its_dead_run_left_renames_the_rebased_commit(pair):
    pair.create("t01")
    other = pair.other_machine_pushes(1, "other.txt", "host2 meanwhile")
    crashed_sync_run(pair, before=other)
    old = pair.result_commits()["t01"]
    proc = pair.ralph(0, "build")
    assert proc.returncode == 0, proc.stderr
    assert pair.origin_subjects() == ["t01: work", "other machine: host2 meanwhile", "initial"]
    pushed = pair.origin_git("rev-parse", "main")
    assert pair.result_commits() == {"t01": pushed} and old != pushed
    assert ("sync: main rebased onto origin/main: 1 commit from origin, head "
            f"{pushed[:12]}\n") in proc.stderr
    assert (f"sync: task t01's result names commit {pushed[:12]}, its id after the rebase "
            f"(it was {old[:12]})\n") in proc.stderr
    assert [e["action"] for e in sync_events(pair.clones[0])] == [
        "start", "start", "unpushed", "rebased", "pushed", "recommitted"]
