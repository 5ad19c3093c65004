"""One assigned session end to end, without ralph.py: start_assigned_session, the stub agent
tests/stubs/claude-assigned as a real process in a real git repo, the ralph-loop check before
each launch, then finish_assigned_session ("Must hold", library side)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_process

from ralphpy.session import respawn
from ralphpy.assign.choice import load_template
from ralphpy.backlog.answers import FAIL_REASON
from ralphpy.assign.assigned_session import finish_assigned_session, start_assigned_session
from ralphpy.errors import UsageError
from ralphpy.assign.respawn_guard import RespawnGuard
from ralphpy.backlog import calls
from ralphpy.backlog.client import export_tasks

ROOT = Path(__file__).resolve().parents[3]
TASK = ROOT / "scripts" / "task"
STUB = ROOT / "tests" / "stubs" / "claude-assigned"


@pytest.fixture
def task_call(git_repo, base_env, monkeypatch):
    """The real task CLI, in process (fast); the stub agents use scripts/task as a process."""
    monkeypatch.chdir(git_repo)
    return calls.resolve(ROOT, base_env).bound(base_env)   # the loop's own call


@pytest.fixture
def loop(git_repo, base_env, task_call):
    """loop(mode) runs one assigned iteration the way ralph.py will; returns (start, outcome,
    neutralise message)."""
    ralph = git_repo / ".ralph"
    guard = RespawnGuard(ralph / "spawns.json", limit=3)

    def iterate(mode: str, inbox_dir: Path | None = None):
        start = start_assigned_session(task_call, repo=git_repo, ralph_dir=ralph, agent="a1",
                                       guard=guard, lease=600, inbox_dir=inbox_dir)
        if start.task is None:
            return start, None, None
        message = respawn.neutralise_ralph_loop(git_repo)
        env = {**base_env, "RALPH_TASK_SCRIPT": str(TASK), "RALPH_AGENT_ID": "a1",
               "STUB_ASSIGNED_MODE": mode}
        run_process([str(STUB), "-p", start.prompt, "--output-format=stream-json", "--verbose"],
                    cwd=git_repo, env=env)
        outcome = finish_assigned_session(task_call, start.task.id, repo=git_repo,
                                          ralph_dir=ralph, guard=guard)
        return start, outcome, message
    return iterate


def tasks_by_id(task_call) -> dict:
    return {t["id"]: t for t in export_tasks(task_call)}


def test_a_finished_task_is_archived_with_its_commit_and_notes(loop, run_task, git_repo, task_call):
    run_task("create", "web/01", "Add login", "-p", "1", "-d", "- [ ] form validates")
    run_task("create", "later", "Later", "-p", "3")
    start, outcome, _ = loop("finish")
    assert start.prompt.startswith("/ralph-build ====")
    assert "Task: web/01 (priority 1, high)" in start.prompt and "- form validates" in start.prompt
    assert json.loads((git_repo / ".ralph" / "backlog.json").read_text())["tasks"][0]["id"] == "later"
    assert (outcome.outcome, outcome.status, outcome.held) == ("completed", "done", False)
    record = json.loads((git_repo / ".ralph" / "completed" / "web%2F01.json").read_text())
    assert outcome.archive == git_repo / ".ralph" / "completed" / "web%2F01.json"
    assert [c["subject"] for c in record["artifacts"]["commits"]] == ["task web/01: implement"]
    assert record["artifacts"]["filesChanged"] == [{"status": "A", "path": "work/web_01.txt"}]
    assert record["verification_notes"] == "criteria checked for web/01"
    assert record["task"]["criteria"] == ["form validates"]
    assert record["result"]["commit"] == record["artifacts"]["commits"][0]["sha"]
    assert record["timings"]["durationSeconds"] >= 0
    assert (git_repo / ".ralph" / "FRESH_START").exists()
    assert not (git_repo / ".ralph" / "current-task.json").exists()
    assert tasks_by_id(task_call)["web/01"]["status"] == "done"


def test_drift_commits_show_up_in_the_archive_next_to_the_task_commit(loop, run_task, git_repo):
    run_task("create", "t1", "Only this")
    _, outcome, _ = loop("drift,finish")
    record = json.loads(outcome.archive.read_text())
    assert [c["subject"] for c in record["artifacts"]["commits"]] == [
        "refactor: tidy unrelated module", "task t1: implement"]
    assert {"status": "A", "path": "unrelated/cleanup.txt"} in record["artifacts"]["filesChanged"]
    assert record["artifacts"]["claimed"] == ["work/t1.txt"]     # what the agent admitted to


def test_a_session_that_exits_without_finishing_fails_the_task(loop, run_task, task_call, git_repo):
    run_task("create", "t1", "Hard task")
    _, outcome, _ = loop("exit")
    assert (outcome.outcome, outcome.status, outcome.fail_output) == ("failed", "open", "failed t1")
    task = tasks_by_id(task_call)["t1"]
    assert (task["status"], task["retry_count"], task["fail_reason"]) == ("open", 1, FAIL_REASON)
    assert not (git_repo / ".ralph" / "completed").exists()
    assert not (git_repo / ".ralph" / "FRESH_START").exists()
    start, _, _ = loop("finish")
    assert "Previous attempt failed: session exited without completing task" in start.prompt


def test_completion_recorded_only_in_current_task_json_is_accepted(loop, run_task, task_call):
    run_task("create", "t1", "File protocol")
    _, outcome, _ = loop("file")
    assert (outcome.outcome, outcome.status) == ("completed", "done")
    assert "task t1: marked done from current-task.json" in outcome.messages
    result = json.loads(tasks_by_id(task_call)["t1"]["result"])
    assert result["recorded_by"] == "current-task.json"
    record = json.loads(outcome.archive.read_text())
    assert record["verification_notes"] == "file protocol for t1"


def test_an_endless_task_is_held_after_three_spawns_and_the_loop_moves_on(loop, run_task, task_call):
    run_task("create", "stuck", "Never finishes", "-p", "0")
    run_task("create", "other", "Fine", "-p", "2")
    outcomes = [loop("nothing")[1] for _ in range(3)]
    assert [o.task_id for o in outcomes] == ["stuck"] * 3
    assert [o.held for o in outcomes] == [False, False, True]
    assert ("task stuck: respawned 3 times for status open without progress; holding it and "
            "moving on") in outcomes[2].messages
    stuck = tasks_by_id(task_call)["stuck"]
    assert stuck["held"] == "respawned 3 times for status open without progress"
    assert stuck["retry_count"] == 3
    start, outcome, _ = loop("finish")
    assert start.task.id == "other" and outcome.outcome == "completed"
    start, outcome, _ = loop("finish")
    assert start.task is None and outcome is None


def test_a_leftover_ralph_loop_file_is_neutralised_before_the_next_launch(loop, run_task, git_repo):
    run_task("create", "t1", "Loops")
    _, outcome, message = loop("ralph-loop")
    assert message is None and outcome.outcome == "failed"
    assert (git_repo / ".claude" / "ralph-loop.local.md").exists()
    _, outcome, message = loop("finish")
    assert message == ("respawn safety: neutralised .claude/ralph-loop.local.md "
                       "(active: true -> false, moved to .claude/ralph-loop.local.md.inactive)")
    assert not (git_repo / ".claude" / "ralph-loop.local.md").exists()
    assert "active: false" in (git_repo / ".claude" / "ralph-loop.local.md.inactive").read_text()
    assert outcome.outcome == "completed"


def test_an_unfinished_current_task_is_resumed_before_higher_priority_work(
        loop, run_task, git_repo):
    run_task("create", "urgent", "Urgent", "-p", "0")
    run_task("create", "started", "Started earlier", "-p", "3")
    (git_repo / ".ralph" / "current-task.json").write_text(
        json.dumps({"id": "started", "status": "in_progress"}))
    start, outcome, _ = loop("finish")
    assert start.task.id == "started"
    assert "resuming task started from current-task.json" in start.messages
    assert loop("finish")[0].task.id == "urgent"


def test_inbox_files_are_imported_before_the_claim(loop, git_repo):
    inbox_dir = git_repo / ".ralph" / "inbox"
    inbox_dir.mkdir(parents=True)
    (inbox_dir / "hotfix.json").write_text(json.dumps(
        {"objective": "Patch the leak", "why_it_matters": "Memory alerts", "priority": "critical"}))
    start, outcome, _ = loop("finish", inbox_dir=inbox_dir)
    assert start.messages[0] == "inbox: imported 1 task(s): hotfix"
    assert "Why it matters: Memory alerts" in start.prompt
    assert outcome.outcome == "completed"


def test_an_agent_that_gives_up_itself_is_not_failed_again(loop, run_task, task_call):
    run_task("create", "t1", "Gives up")
    _, outcome, _ = loop("giveup")
    assert (outcome.outcome, outcome.status, outcome.fail_output) == ("released", "open", "")
    task = tasks_by_id(task_call)["t1"]
    assert (task["retry_count"], task["fail_reason"]) == (1, "stub gave up")


def test_a_task_cli_failure_after_the_session_keeps_current_task_json(
        run_task, task_call, git_repo):
    run_task("create", "t1", "Kept")
    ralph = git_repo / ".ralph"
    guard = RespawnGuard(ralph / "spawns.json")
    start_assigned_session(task_call, repo=git_repo, ralph_dir=ralph, agent="a1", guard=guard)
    outcome = finish_assigned_session(lambda argv: (False, ""), "t1", repo=git_repo,
                                      ralph_dir=ralph, guard=guard)
    assert (outcome.outcome, outcome.status) == ("unknown", None)
    assert outcome.as_event()["event"] == "task_unknown"
    assert json.loads((ralph / "current-task.json").read_text())["id"] == "t1"


def test_a_bad_template_is_refused_before_anything_is_claimed(run_task, task_call, git_repo):
    run_task("create", "t1", "Untouched")
    ralph = git_repo / ".ralph"
    with pytest.raises(UsageError, match="assignment prompt template"):
        start_assigned_session(task_call, repo=git_repo, ralph_dir=ralph, agent="a1",
                               guard=RespawnGuard(ralph / "spawns.json"),
                               template=load_template(git_repo / "missing.md"))
    assert tasks_by_id(task_call)["t1"]["status"] == "open"


def test_events_and_the_backlog_describe_the_held_task(loop, run_task, git_repo):
    run_task("create", "stuck", "Stuck")
    for _ in range(3):
        start, outcome, _ = loop("nothing")
    assert start.as_event() == {"event": "task_assigned", "task": "stuck", "priority": 2,
                                "baseline": "open", "spawn": 3, "head": start.head}
    assert outcome.as_event() == {
        "event": "task_failed", "task": "stuck", "status": "open", "archive": None,
        "held": True, "hold_reason": "respawned 3 times for status open without progress"}
    backlog = json.loads((git_repo / ".ralph" / "backlog.json").read_text())
    assert backlog["tasks"] == [] and backlog["held"] == ["stuck"]
