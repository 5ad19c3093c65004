"""The frozen run's per-session check reuses the last backlog listing only while the task
database has not been written (speed; lib/ralphpy/scope/cache.py). Real SQLite files
written by real task CLI processes; the check runs in-process as ralph.py runs it."""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from ralphpy.runs import state as run_state
from ralphpy.scope import hashing
from ralphpy.scope import freeze
from ralphpy.backlog import calls

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def frozen(git_repo: Path, run_task, base_env: dict[str, str], monkeypatch):
    """start() for a backlog of two tasks; returns (check, env) where check() runs the
    per-session check as ralph.py does (embedded task CLI, scope exported)."""
    assert run_task("create", "t-1", "First", "-r", "specs/feature.md").returncode == 0
    assert run_task("create", "t-2", "Second").returncode == 0
    lines = dict(line.split(":", 1) for line in run_task("_get-scope").stdout.splitlines())
    env = {**base_env, "RALPH_SCOPE_REPO": lines["repo"], "RALPH_SCOPE_BRANCH": lines["branch"]}
    monkeypatch.chdir(git_repo)                 # the embedded task CLI works in the cwd
    holder: dict = {}

    def check(task: calls.TaskCommand | None = None) -> freeze.Check:
        task = task or calls.resolve(ROOT, env)
        if "freeze" not in holder:
            state = run_state.RunState(run_state.new_run_id(), "build", 0)
            holder["freeze"] = freeze.start(task, env, git_repo / ".ralph", state, git_repo,
                                               stop_on_change=False)
        return freeze.check(holder["freeze"], task, env)
    return check, env


def _age_files(mocker) -> None:
    """The clock runs 10 s ahead: every file written so far is past the racy window."""
    real = time.time_ns
    mocker.patch.object(hashing, "_clock", side_effect=lambda: real() + 10_000_000_000)


def test_an_unchanged_backlog_is_not_listed_again_once_the_database_has_aged(frozen, mocker):
    check, env = frozen
    _age_files(mocker)
    first = check()                            # the freeze's own listing
    assert not first.listing_reused and not first.report.changed
    task = calls.resolve(ROOT, env)
    again = []
    for _ in range(3):       # the loop's read-only calls between checks write nothing
        assert task.call("peek", "-n", "10", env=env).ok
        assert task.call("plan-status", env=env).ok
        again.append(check())
    assert [c.listing_reused for c in again] == [True, True, True]
    assert all(not c.report.changed and not c.target_done for c in again)
    # Not even the store's fingerprint is read again while another connection keeps the -wal
    # (a user's sqlite3 shell, another task CLI): the fingerprint's own read-only connection
    # must not move the signature (as root, SQLite fchown()s the -wal on every open).
    keeper = sqlite3.connect(Path(".ralph") / "tasks.db")
    try:
        keeper.execute("SELECT count(*) FROM tasks").fetchall()
        again = [check() for _ in range(4)]
    finally:
        keeper.close()
    assert [(c.listing_reused, c.statuses_refreshed) for c in again[2:]] == [(True, False)] * 2


def test_a_change_written_right_after_a_check_is_caught_although_the_database_stat_is_racy(
        frozen, run_task):
    check, _ = frozen
    # Real clock: the database was written a moment ago, so its stat is never trusted (a
    # same-size rewrite of the -wal within the same timestamp tick could keep it): each
    # check reads the store's fingerprint instead, which sees the table contents.
    assert not check().listing_reused
    second = check()
    assert second.listing_reused and second.statuses_refreshed
    assert run_task("update", "t-2", "--title", "Renamed").returncode == 0   # same second
    found = check()
    assert not found.listing_reused
    assert found.report.definition_modified == ["t-2"]


@pytest.mark.parametrize("change, expect", [
    (("update", "t-1", "--title", "Renamed"), "definition"),
    (("create", "t-9", "Sneaked in"), "added"),
    (("delete", "t-2"), "removed"),
    (("done", "t-2", "--result", '{"commit": "abc"}'), "status"),
], ids=["title-edit", "task-added", "task-deleted", "status-change"])
def test_a_change_by_another_process_while_ralph_waits_is_detected(
        frozen, run_task, mocker, change, expect):
    check, _ = frozen
    _age_files(mocker)
    check()
    assert check().listing_reused
    if expect == "status":
        assert run_task("claim", "t-2", env={"RALPH_AGENT_ID": "other"}).returncode == 0
    assert run_task(*change, env={"RALPH_AGENT_ID": "other"}).returncode == 0
    found = check()
    # A status write moves the database but not the definitions: the store's fingerprint
    # keeps the listing (a status change is not a scope change).
    assert found.listing_reused == found.statuses_refreshed == (expect == "status")
    report = found.report
    if expect == "definition":
        assert report.definition_modified == ["t-1"]
    elif expect == "added":
        assert report.added == ["t-9"]
    elif expect == "removed":
        assert report.removed == ["t-2"]
    else:                                     # progress, not a change; the target moves
        assert not report.changed
        assert run_task("claim", "t-1", env={"RALPH_AGENT_ID": "other"}).returncode == 0
        assert run_task("done", "t-1", "--result", '{"commit": "abc"}',
                        env={"RALPH_AGENT_ID": "other"}).returncode == 0
        assert check().target_done
    assert check().listing_reused             # settled again: no further listing


def test_an_external_task_command_is_listed_before_every_check(frozen, mocker):
    check, env = frozen
    _age_files(mocker)
    external = calls.resolve(ROOT, {**env, "RALPH_TASK_CMD": str(ROOT / "scripts" / "task")})
    assert not external.embedded
    assert [check(external).listing_reused for _ in range(3)] == [False, False, False]
