"""Assignment mode end to end: `ralph build --assign` as a real process over the real task CLI in a
temp git repo, with the stub agent tests/stubs/claude-assigned. Each outcome (finish, exit
without finishing, drift, a leftover ralph-loop file, an agent stuck on its task) is checked
in the backlog, the task files and events.jsonl; respawn safety and FRESH_START also in the
default mode, whose output and task calls stay ralph.sh's."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import RALPH, git, install_stub, read_jsonl, wait_for

FINISHED = "All tasks complete. Exiting loop."


@pytest.fixture
def agent(bin_dir: Path, tmp_path: Path):
    """The assignment stub as `claude`; returns the path of its call log."""
    install_stub(bin_dir, "claude", "claude-assigned")
    return tmp_path / "agent.jsonl"


@pytest.fixture
def build(run_ralph, agent, base_env):
    """build(mode, *args) runs `ralph build *args` with STUB_ASSIGNED_MODE=mode."""
    def run(mode: str, *args: str, env: dict | None = None):
        return run_ralph("build", *args, env={"STUB_ASSIGNED_MODE": mode, "STUB_LOG": str(agent),
                                              **(env or {})})
    return run


def tasks(run_task) -> dict[str, dict]:
    out = run_task("_export-json").stdout
    return {t["id"]: t for t in map(json.loads, out.splitlines())}


def events(repo: Path) -> list[dict]:
    runs = sorted((repo / ".ralph" / "runs").glob("*/events.jsonl"))
    return [e for path in runs for e in read_jsonl(path)]


def of(kind: str, repo: Path) -> list[dict]:
    return [e for e in events(repo) if e["event"] == kind]


def test_finished_tasks_are_claimed_in_priority_order_archived_and_fresh_started(
        build, run_task, git_repo, agent):
    run_task("create", "later", "Later work", "-p", "3")
    run_task("create", "web/login", "Add login", "-p", "1",
             "-d", "Why it matters: users need to sign in\n\n- [ ] form validates")
    proc = build("finish", "--assign")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-2] == FINISHED             # then `deregistered <agent>`
    calls = read_jsonl(agent)
    assert [c["task"] for c in calls] == ["web/login", "later"]
    prompt = calls[0]["argv"][1]
    assert prompt.startswith("/ralph-build ======")
    for line in ("Task: web/login (priority 1, high)", "Objective: Add login",
                 "Why it matters: users need to sign in", "- form validates",
                 "Do NOT start unrelated work (tests for other modules, refactoring, etc.)"):
        assert line in prompt
    assert "--continue" not in calls[0]["argv"] + calls[1]["argv"]      # never resumed by default
    assert {t["id"]: t["status"] for t in tasks(run_task).values()} == {"later": "done", "web/login": "done"}
    record = json.loads((git_repo / ".ralph" / "completed" / "web%2Flogin.json").read_text())
    assert record["verification_notes"] == "criteria checked for web/login"
    assert [c["subject"] for c in record["artifacts"]["commits"]] == ["task web/login: implement"]
    assert record["artifacts"]["filesChanged"] == [{"status": "A", "path": "work/web_login.txt"}]
    assert record["artifacts"]["unrelated"] == []
    assert record["task"]["criteria"] == ["form validates"]
    assert record["timings"]["durationSeconds"] >= 0
    assert (git_repo / ".ralph" / "FRESH_START").exists()
    assert not (git_repo / ".ralph" / "current-task.json").exists()
    assert json.loads((git_repo / ".ralph" / "backlog.json").read_text())["tasks"] == []
    assert [(e["task"], e["spawn"]) for e in of("task_assigned", git_repo)] == [("web/login", 1), ("later", 1)]
    assert [e["task"] for e in of("task_completed", git_repo)] == ["web/login", "later"]
    assert [e["task"] for e in of("session_start", git_repo)] == ["web/login", "later"]
    assert [(e["task"], e["outcome"]) for e in of("session_end", git_repo)] == [
        ("web/login", "completed"), ("later", "completed")]
    assert "assigned task web/login" in proc.stderr


def test_a_prompt_template_given_with_assign_is_named_as_ignored_not_dropped_silently(
        build, run_task, git_repo, agent):
    run_task("create", "t1", "One")
    proc = build("finish", "--assign", "--prompt", "/tf {id} --auto")
    assert proc.returncode == 0, proc.stderr
    line = "--prompt ignored: --assign sends each session its task's anti-drift block"
    assert [text for text in proc.stderr.splitlines() if " ignored: " in text] == [line]
    assert read_jsonl(agent)[0]["argv"][1].startswith("/ralph-build ======")   # the block
    assert [e["message"] for e in of("log", git_repo) if e["kind"] == "flag_ignored"] == [line]


def test_a_session_that_exits_without_finishing_fails_its_task_with_the_reason(
        build, run_task, git_repo):
    run_task("create", "t1", "Only task")
    proc = build("exit", "--assign", "-n", "1")
    assert proc.returncode == 0, proc.stderr
    assert "failed t1\n" in proc.stdout
    task = tasks(run_task)["t1"]
    assert (task["status"], task["retry_count"], task["fail_reason"]) == (
        "open", 1, "session exited without completing task")
    assert not (git_repo / ".ralph" / "completed").exists()
    assert not (git_repo / ".ralph" / "current-task.json").exists()
    assert not (git_repo / ".ralph" / "FRESH_START").exists()
    assert [t["id"] for t in json.loads((git_repo / ".ralph" / "backlog.json").read_text())["tasks"]] == ["t1"]
    [failed] = of("task_failed", git_repo)
    assert (failed["task"], failed["status"], failed["held"]) == ("t1", "open", False)
    [end] = of("session_end", git_repo)
    assert (end["task"], end["outcome"], end["reason"]) == (
        "t1", "failed", "session exited without completing task")
    assert "task t1: not done after the session" in proc.stderr


def test_the_next_session_is_told_why_the_last_attempt_failed(build, run_task, agent):
    run_task("create", "t1", "Only task")
    build("exit", "--assign", "-n", "2")
    calls = read_jsonl(agent)
    assert "Previous attempt failed: session exited without completing task" in calls[1]["argv"][1]


def test_drift_commits_are_archived_and_listed_as_unrelated(build, run_task, git_repo):
    run_task("create", "t1", "Only task")
    proc = build("drift,finish", "--assign")
    assert proc.returncode == 0 and FINISHED in proc.stdout
    record = json.loads((git_repo / ".ralph" / "completed" / "t1.json").read_text())
    assert [c["subject"] for c in record["artifacts"]["commits"]] == [
        "refactor: tidy unrelated module", "task t1: implement"]
    [unrelated] = record["artifacts"]["unrelated"]
    assert (unrelated["subject"], unrelated["files"]) == (
        "refactor: tidy unrelated module", ["unrelated/cleanup.txt"])
    assert {"status": "A", "path": "unrelated/cleanup.txt"} in record["artifacts"]["filesChanged"]
    [done] = of("task_completed", git_repo)
    assert (done["commits"], done["unrelated"]) == (2, [unrelated["sha"]])
    assert "possible drift" in proc.stderr and unrelated["sha"][:10] in proc.stderr
    assert [e for e in of("log", git_repo) if e["kind"] == "drift"]


def test_the_file_protocol_marks_the_task_done(build, run_task, git_repo):
    run_task("create", "t1", "Only task")
    proc = build("file", "--assign")
    assert proc.returncode == 0 and FINISHED in proc.stdout
    record = json.loads((git_repo / ".ralph" / "completed" / "t1.json").read_text())
    assert record["verification_notes"] == "file protocol for t1"
    assert tasks(run_task)["t1"]["status"] == "done"



def stop_at_mark(git_repo: Path, env: dict, mark: Path, sig: int) -> int:
    """`ralph build --assign` until its stub agent touches `mark`, then `sig` to ralph.py
    alone (not its agent's group); returns ralph.py's exit status."""
    proc = subprocess.Popen([sys.executable, str(RALPH), "build", "--assign"], cwd=git_repo,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        wait_for(mark.exists, timeout=30)
        os.kill(proc.pid, sig)
        return proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()

@pytest.mark.parametrize("mode", ["finish", "file"])
def test_a_task_finished_before_a_kill_9_of_ralph_is_archived_on_resume_not_run_again(
        run_ralph, run_task, git_repo, agent, base_env, tmp_path, mode):
    # the agent finishes its task (`task done`, or current-task.json marked completed), then
    # hangs until ralph.py's death: the resumed run settles it as the session's end would have
    run_task("create", "t1", "First", "-p", "1")
    run_task("create", "t2", "Second", "-p", "2")
    mark = tmp_path / "finished"
    env = {**base_env, "STUB_ASSIGNED_MODE": f"{mode},hang", "STUB_HANG_MARK": str(mark),
           "STUB_LOG": str(agent)}
    stop_at_mark(git_repo, env, mark, signal.SIGKILL)
    again = run_ralph("build", "--assign", env={"STUB_ASSIGNED_MODE": "finish",
                                                 "STUB_LOG": str(agent)})
    assert again.returncode == 0, again.stderr
    assert [c["task"] for c in read_jsonl(agent)] == ["t1", "t2"]      # t1 not run again
    assert {t["id"]: t["status"] for t in tasks(run_task).values()} == {"t1": "done",
                                                                         "t2": "done"}
    record = json.loads((git_repo / ".ralph" / "completed" / "t1.json").read_text())
    assert [c["subject"] for c in record["artifacts"]["commits"]] == ["task t1: implement"]
    assert record["verification_notes"] == {"finish": "criteria checked for t1",
                                            "file": "file protocol for t1"}[mode]
    notes = [e["message"] for e in of("log", git_repo) if e["kind"] == "resume"]
    assert f"task t1: done, archived to {git_repo / '.ralph' / 'completed' / 't1.json'}" in notes
    assert ("task t1: marked done from current-task.json" in notes) == (mode == "file")
    state = json.loads(next((git_repo / ".ralph" / "runs").glob("*/state.json")).read_text())
    assert [(e["task"], e.get("recovered")) for e in state["completed"]] == [("t1", True),
                                                                             ("t2", None)]
    assert state["failed"] == []                     # the killed session's task was done



@pytest.mark.parametrize("mode", ["hang", "file,hang"])
def test_a_task_left_by_a_run_ended_with_sigterm_is_settled_by_the_next_run(
        run_ralph, run_task, git_repo, agent, base_env, tmp_path, mode):
    """SIGTERM (or Ctrl+C) ends a run with no crash-safety step (docs/contract/ralph-cli.md s.16):
    its task stays active under its agent, gone since. A plain re-run releases it at once (it would
    wait out the lease: the session timeout and a minute) and resumes it from current-task.json, or,
    when the agent had finished it by the file protocol, settles it without running it again."""
    run_task("create", "t1", "First", "-p", "1")
    run_task("create", "t2", "Second", "-p", "2")
    mark = tmp_path / "started"
    env = {**base_env, "STUB_ASSIGNED_MODE": mode, "STUB_HANG_MARK": str(mark),
           "STUB_LOG": str(agent)}
    assert stop_at_mark(git_repo, env, mark, signal.SIGTERM) == 130
    assert tasks(run_task)["t1"]["status"] == "active"          # no crash safety on SIGTERM
    first_run = next((git_repo / ".ralph" / "runs").iterdir()).name
    again = run_ralph("build", "--assign", env={"STUB_ASSIGNED_MODE": "finish",
                                                 "STUB_LOG": str(agent)})
    assert again.returncode == 0, again.stderr
    reason = f"ralph.py was interrupted during the session (run {first_run})"
    states = {t["id"]: (t["status"], t["retry_count"]) for t in tasks(run_task).values()}
    if mode == "hang":
        assert [c["task"] for c in read_jsonl(agent)] == ["t1", "t1", "t2"]
        assert "resuming task t1 from current-task.json" in again.stderr
        line = next(x for x in again.stderr.splitlines() if x.startswith("released task t1 "))
        assert line.startswith("released task t1 of the interrupted run's agent ")
        assert line.endswith(f": {reason}")
        assert states == {"t1": ("done", 0), "t2": ("done", 0)}     # stopped: no attempt
    else:                                            # finished by the file: not run again
        assert [c["task"] for c in read_jsonl(agent)] == ["t1", "t2"]
        assert "task t1: marked done from current-task.json" in again.stderr
        assert states == {"t1": ("done", 0), "t2": ("done", 0)}
        assert (git_repo / ".ralph" / "completed" / "t1.json").exists()
    assert any(e["kind"] == "interrupted_run" for e in of("log", git_repo))

def test_a_leftover_ralph_loop_file_is_neutralised_before_the_next_launch(
        build, run_task, git_repo):
    run_task("create", "t1", "First", "-p", "1")
    run_task("create", "t2", "Second", "-p", "2")
    proc = build("ralph-loop,finish", "--assign")
    assert proc.returncode == 0 and FINISHED in proc.stdout
    # The first session left an active file; it was moved aside before the second launch.
    # The second session left one again (nothing launches after it, so it stays).
    inactive = git_repo / ".claude" / "ralph-loop.local.md.inactive"
    assert "active: false" in inactive.read_text() and "active: true" not in inactive.read_text()
    assert proc.stderr.count("respawn safety: neutralised .claude/ralph-loop.local.md "
                             "(active: true -> false, moved to .claude/ralph-loop.local.md.inactive)") == 1
    assert [e["kind"] for e in of("log", git_repo)].count("respawn_safety") == 1


@pytest.mark.parametrize("args", [["-n", "1"], ["-n", "1", "--assign"]], ids=["default", "assign"])
def test_respawn_safety_runs_before_every_launch_and_is_idempotent(
        run_ralph, bin_dir, run_task, git_repo, args):
    install_stub(bin_dir, "claude", "claude")
    run_task("create", "t1", "Only task")
    state = git_repo / ".claude" / "ralph-loop.local.md"
    state.parent.mkdir()
    state.write_text("---\nactive: true\niteration: 4\n---\n\nloop forever\n")
    first = run_ralph("build", *args)
    assert "respawn safety: neutralised" in first.stderr
    assert not state.exists()
    assert (git_repo / ".claude" / "ralph-loop.local.md.inactive").read_text() == (
        "---\nactive: false\niteration: 4\n---\n\nloop forever\n")
    second = run_ralph("build", *args)
    assert "respawn safety" not in second.stderr                 # nothing left: nothing done
    assert (first.returncode, second.returncode) == (0, 0)


def test_a_task_respawned_without_progress_is_held_and_the_loop_moves_on(
        build, run_task, git_repo, agent):
    (git_repo / "ralph.yml").write_text("respawn_limit: 2\n")
    run_task("create", "stuck", "Never finishes", "-p", "1")
    run_task("create", "next", "Comes next", "-p", "2")
    proc = build("nothing", "--assign")
    assert proc.returncode == 0, proc.stderr
    # Each task is spawned twice (the limit) without progress, held, and the loop moves on.
    assert [c["task"] for c in read_jsonl(agent)] == ["stuck", "stuck", "next", "next"]
    assert FINISHED not in proc.stdout
    assert proc.stdout.splitlines()[-3:-1] == [
        "No tasks left to claim, 2 held: stuck, next. Exiting loop.",
        "Release a held task with: ralph task _unhold <id>"]
    assert "task stuck: respawned 2 times for status open without progress; holding it and moving on" in proc.stderr
    backlog = tasks(run_task)
    assert backlog["stuck"]["held"] == "respawned 2 times for status open without progress"
    assert (backlog["stuck"]["status"], backlog["stuck"]["retry_count"]) == ("open", 2)
    assert json.loads((git_repo / ".ralph" / "backlog.json").read_text())["held"] == ["stuck", "next"]
    held = [e for e in of("task_failed", git_repo) if e["held"]]
    assert [(e["task"], e["hold_reason"]) for e in held] == [
        ("stuck", "respawned 2 times for status open without progress"),
        ("next", "respawned 2 times for status open without progress")]
    # Released, it is claimable again and its count starts over.
    assert run_task("_unhold", "stuck").returncode == 0
    again = build("finish", "--assign")
    assert again.returncode == 0 and "No tasks left to claim, 1 held: next. Exiting loop." in again.stdout
    assert tasks(run_task)["stuck"]["status"] == "done"


def test_the_default_respawn_limit_is_three_spawns(build, run_task, agent):
    run_task("create", "stuck", "Never finishes")
    proc = build("nothing", "--assign")
    assert proc.returncode == 0
    assert len(read_jsonl(agent)) == 3
    assert "No tasks left to claim, 1 held: stuck. Exiting loop." in proc.stdout


def test_inbox_files_are_imported_once_before_the_claim_highest_priority_first(
        build, run_task, git_repo, agent):
    run_task("create", "planned", "Planned", "-p", "1")
    inbox = git_repo / ".ralph" / "inbox"
    inbox.mkdir(parents=True)
    (inbox / "hotfix.json").write_text(json.dumps({
        "id": "hotfix", "objective": "Fix the outage", "priority": "critical",
        "why_it_matters": "customers are down", "success_criteria": ["service answers"]}))
    (inbox / "notes.md").write_text("# Tidy docs\nPriority: low\n")
    proc = build("finish", "--assign")
    assert proc.returncode == 0, proc.stderr
    assert [c["task"] for c in read_jsonl(agent)] == ["hotfix", "planned", "notes"]
    assert "Why it matters: customers are down" in read_jsonl(agent)[0]["argv"][1]
    assert "inbox: imported 2 task(s): hotfix, notes" in proc.stderr
    again = build("finish", "--assign")                           # each file once
    assert "inbox:" not in again.stderr and "No tasks available. Exiting loop." in again.stdout
    assert [e["imported"] for e in of("inbox_import", git_repo)] == [["hotfix", "notes"]]


def test_continue_session_resumes_until_a_task_completes(build, run_task, git_repo, agent):
    run_task("create", "t1", "First", "-p", "1")
    run_task("create", "t2", "Second", "-p", "2")
    proc = build("finish", "--assign", "--continue-session")
    assert proc.returncode == 0
    first, second = (c["argv"] for c in read_jsonl(agent))
    assert first[-1] == "--continue"                     # no FRESH_START yet: opted in
    assert "--continue" not in second                    # FRESH_START from t1 consumed
    assert (git_repo / ".ralph" / "FRESH_START").exists()  # written after t2, for the next run


def test_continue_session_from_ralph_yml_and_a_hand_made_fresh_start(
        run_ralph, bin_dir, run_task, git_repo, tmp_path):
    install_stub(bin_dir, "claude", "claude-assigned")
    (git_repo / "ralph.yml").write_text("continue_session: true\n")
    run_task("create", "t1", "Only task")
    (git_repo / ".ralph" / "FRESH_START").touch()
    log = tmp_path / "log.jsonl"
    run_ralph("build", "-n", "2", env={"STUB_ASSIGNED_MODE": "nothing", "STUB_LOG": str(log)})
    first, second = (c["argv"] for c in read_jsonl(log))
    assert "--continue" not in first and second[-1] == "--continue"
    assert not (git_repo / ".ralph" / "FRESH_START").exists()


def test_assign_true_in_ralph_yml_turns_assignment_mode_on(run_ralph, agent, run_task, git_repo):
    (git_repo / "ralph.yml").write_text("assign: true\n")
    run_task("create", "t1", "Only task")
    proc = run_ralph("build", env={"STUB_ASSIGNED_MODE": "finish", "STUB_LOG": str(agent)})
    assert proc.returncode == 0 and (git_repo / ".ralph" / "completed" / "t1.json").exists()


def test_a_custom_template_replaces_the_anti_drift_block(build, run_task, git_repo, agent):
    (git_repo / "prompt.md").write_text("DO {id} ONLY: {objective}\n")
    (git_repo / "ralph.yml").write_text("assign_prompt: prompt.md\n")
    run_task("create", "t1", "Only task")
    build("finish", "--assign")
    assert read_jsonl(agent)[0]["argv"][1] == "/ralph-build DO t1 ONLY: Only task"


def test_an_unreadable_template_is_a_usage_error_before_anything_is_claimed(
        build, run_task, git_repo, agent):
    (git_repo / "ralph.yml").write_text("assign_prompt: missing.md\n")
    run_task("create", "t1", "Only task")
    proc = build("finish", "--assign")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("Error: assignment prompt template ") and proc.stderr.count("\n") == 1
    assert tasks(run_task)["t1"]["status"] == "open" and not agent.exists()


@pytest.mark.parametrize("how", [["--assign"], ["--prompt", "/tf {id}"]],
                         ids=["assign", "prompt-template"])
def test_a_backlog_that_cannot_be_read_stops_the_run_not_no_tasks_available(
        build, run_task, git_repo, agent, how):
    """ralph claims for the session: a failed peek and no claim is a backlog that cannot be
    read (here a task database overwritten with garbage), not an empty one: exit 8 with the
    task CLI's reason, where `No tasks available` (exit 0) ended the run as if it were done.
    At start the preflight finds it, before anything is written."""
    run_task("create", "t1", "Only task")
    db = git_repo / ".ralph" / "tasks.db"
    for side in db.parent.glob("tasks.db-*"):
        side.unlink()
    db.write_bytes(b"not a database " * 1000)
    proc = build("finish", *how)
    assert proc.returncode == 8, proc.stdout + proc.stderr
    assert "No tasks available" not in proc.stdout
    assert proc.stderr.splitlines() == [
        "Error: cannot read the backlog .ralph/tasks.db: database error: file is not a database"]
    assert not agent.exists()


def test_a_task_the_assigned_session_also_finished_is_named_as_drift(
        run_ralph, run_task, git_repo, bin_dir):
    """The session was given t1 and also claimed and finished t2: never silent scope creep."""
    install_stub(bin_dir)
    run_task("create", "t1", "First", "-p", "1")
    run_task("create", "t2", "Second", "-p", "2")
    also = ('"$RALPH_TASK_SCRIPT" claim t2 >/dev/null; "$RALPH_TASK_SCRIPT" done t2 >/dev/null; '
            '"$RALPH_TASK_SCRIPT" done t1 >/dev/null')
    proc = run_ralph("build", "--assign", "-n", "1", env={"STUB_ACTION": also})
    assert proc.returncode == 0, proc.stderr
    line = "task t1: the session also finished task t2, which it was not assigned"
    assert line in proc.stderr
    assert [e["message"] for e in of("log", git_repo) if e.get("kind") == "drift"] == [line]


def test_assign_is_a_build_flag_only(run_ralph):
    proc = run_ralph("plan", "--assign")
    assert (proc.returncode, proc.stderr) == (
        1, "Error: Unknown option '--assign'\nRun 'ralph plan --help' for usage\n")


def test_without_assign_no_task_file_is_written_and_the_agent_picks(
        run_ralph, bin_dir, run_task, git_repo):
    install_stub(bin_dir, "claude", "claude")
    run_task("create", "t1", "Only task")
    proc = run_ralph("build", "-n", "1")
    assert proc.returncode == 0 and proc.stderr == ""
    ralph = git_repo / ".ralph"
    for name in ("current-task.json", "backlog.json", "spawns.json", "completed", "FRESH_START"):
        assert not (ralph / name).exists(), name
    assert git(git_repo, "status", "--porcelain") == ""


def test_a_dry_run_in_assignment_mode_claims_nothing_and_says_so(build, run_task, git_repo, agent):
    run_task("create", "t1", "Only task")
    proc = build("finish", "--assign", "--dry-run")
    assert proc.returncode == 0
    assert "Assignment mode: ralph would claim the first claimable task" in proc.stdout
    assert tasks(run_task)["t1"]["status"] == "open" and not agent.exists()
    assert not (git_repo / ".ralph" / "current-task.json").exists()


def test_assignment_mode_works_through_a_task_command_run_as_a_process(
        build, run_task, git_repo):
    task_cmd = Path(__file__).resolve().parents[2] / "scripts" / "task"
    run_task("create", "t1", "Only task")
    proc = build("finish", "--assign", env={"RALPH_TASK_CMD": str(task_cmd)})
    assert proc.returncode == 0 and FINISHED in proc.stdout, proc.stderr
    assert json.loads((git_repo / ".ralph" / "completed" / "t1.json").read_text())["verification_notes"]
    assert [e["task"] for e in of("task_completed", git_repo)] == ["t1"]


def test_a_backlog_that_becomes_unreadable_mid_run_stops_the_run_not_no_tasks_available(
        run_ralph, run_task, git_repo, bin_dir, tmp_path):
    """The start's preflight read it; a session then overwrote the task database: the next
    peek and claim fail, exit 8 with the task CLI's reason, never `No tasks available`."""
    install_stub(bin_dir)
    run_task("create", "t1", "First", "-p", "1")
    run_task("create", "t2", "Second", "-p", "2")
    db = git_repo / ".ralph" / "tasks.db"
    spoil = (f'rm -f "{db}-wal" "{db}-shm"; '
             f'python3 -c "open(\'{db}\', \'wb\').write(b\'not a database \' * 1000)"')
    proc = run_ralph("build", "--assign", env={"STUB_ACTION": spoil})
    assert proc.returncode == 8, proc.stdout + proc.stderr
    assert "No tasks available" not in proc.stdout
    assert proc.stderr.splitlines()[-1] == (
        "Error: cannot read the backlog: `task peek -n 10` failed: database error: file is "
        "not a database; no task was claimed, stopping")
