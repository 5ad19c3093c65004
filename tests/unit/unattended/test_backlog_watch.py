"""unattended.backlog_watch with the real embedded task CLI over a real repository: after one
whole read, the fingerprint follows the backlog from the tasks touched since and the run's
holds (whole again when a dependency came or went), and gives what a whole read gives."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT, _clean_environ, wait_for
from ralphpy.backlog import calls as task_calls
from ralphpy.backlog import readonly
from ralphpy.unattended.backlog_watch import BacklogWatch


@pytest.fixture
def watch(git_repo: Path, monkeypatch) -> BacklogWatch:
    monkeypatch.chdir(git_repo)              # the embedded task CLI runs in the process's cwd
    env = _clean_environ()
    task = task_calls.resolve(ROOT, env)
    assert task.embedded
    for argv in (("create", "a", "A"), ("create", "b", "B"), ("create", "c", "C")):
        assert task.call(*argv, env=env).ok
    return BacklogWatch(task, env, git_repo)


def call(watch: BacklogWatch, *argv: str, agent: str = "w1") -> None:
    assert watch.task.call(*argv, env={**watch.env, "RALPH_AGENT_ID": agent}).ok, argv


def whole(watch: BacklogWatch) -> str:
    """The fingerprint a first, whole read gives now."""
    return BacklogWatch(watch.task, watch.env, watch.cwd).fingerprint(None)


def next_second() -> None:
    """updated_at has whole seconds: what follows is stamped after the last fingerprint."""
    now = readonly.since_now()
    wait_for(lambda: readonly.since_now() > now)


@pytest.mark.parametrize("change", [
    ("update", "b", "--title", "B2"), ("done", "a"), ("delete", "c"), ("create", "d", "D"),
    ("block", "b", "--by", "a"), ("_hold", "c", "--reason", "stuck"),
], ids=["edit", "done", "delete", "create", "dependency", "hold"])
def test_a_change_of_the_backlog_changes_the_fingerprint_as_a_whole_read_does(watch, change):
    before = watch.fingerprint(None)
    if change[0] == "done":
        call(watch, "claim", "a")
    call(watch, *change)
    if change[0] == "_hold":
        watch.held.add("c")                  # the run's own hold, as Night records it
    after = watch.fingerprint(None)
    assert after != before and after == whole(watch)


def test_a_claim_and_the_loops_fail_leave_the_fingerprint_unchanged(watch):
    before = watch.fingerprint(None)
    next_second()
    call(watch, "claim", "b")
    call(watch, "fail", "b", "--reason", "session exited without completing task")
    assert watch.fingerprint(None) == before == whole(watch)
    assert watch.retries["b"] == 1           # what --max-attempts carries over


class Recorded:
    """The task command, with the argv of each call kept."""

    def __init__(self, task):
        self.task, self.embedded, self.calls = task, task.embedded, []

    def call(self, *argv, env):
        self.calls.append(argv)
        return self.task.call(*argv, env=env)


def test_after_the_first_read_only_the_touched_tasks_are_read(watch):
    recorded = Recorded(watch.task)
    watch = BacklogWatch(recorded, watch.env, watch.cwd)
    watch.fingerprint(None)
    assert recorded.calls == [("_export-json",)]        # the one whole read
    next_second()
    call(watch, "update", "a", "--title", "A2")
    recorded.calls.clear()
    now = watch.fingerprint(None)
    assert recorded.calls == []                          # read by index, without a task call
    assert now == whole(watch)
    assert watch.rows.keys() == {"a", "b", "c"}
