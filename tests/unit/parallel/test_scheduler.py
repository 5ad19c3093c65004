"""The --parallel fill-capacity loop (seed 001) over a simulated backlog and clock:
fake sessions with fixed durations; start/end times are recorded and checked."""
from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time

import pytest

from ralphpy.parallel import scheduler
from ralphpy.parallel import worktrees

ENV = dict(os.environ)


class Backlog:
    """A tiny task store and session runner driven by a simulated clock."""

    def __init__(self, tasks: list[dict], *, fail: set[str] = frozenset(),
                 unlaunchable: set[str] = frozenset(), taken_elsewhere: set[str] = frozenset()):
        self.tasks = {t["id"]: {**t, "status": "open"} for t in tasks}
        self.fail, self.unlaunchable, self.taken = fail, unlaunchable, taken_elsewhere
        self.clock = 0.0
        self.running: dict[str, tuple[float, float]] = {}
        self.log: list[tuple[str, float, float, bool]] = []
        self.launches: list[str] = []

    def peek(self) -> list[dict]:
        # As the store: claimable once every blocker is done.
        return [dict(t) for t in self.tasks.values() if t["status"] == "open"
                and all(self.tasks[d]["status"] == "done" for d in t.get("deps", []))]

    def claim(self, task: dict) -> bool:
        stored = self.tasks[task["id"]]
        if task["id"] in self.taken or stored["status"] != "open":
            stored["status"] = "active"          # another runner holds it
            return False
        stored["status"] = "active"
        return True

    def launch(self, task: dict):
        self.launches.append(task["id"])
        if task["id"] in self.unlaunchable:
            self.tasks[task["id"]]["status"] = "open"
            return None
        self.running[task["id"]] = (self.clock, self.clock + task.get("duration", 1.0))
        if task.get("done_early"):    # the agent runs `task done` long before its session ends
            self.tasks[task["id"]]["status"] = "done"
        return task["id"]

    def wait(self, active: dict) -> list[tuple[str, bool]]:
        assert set(active) == set(self.running)
        self.clock = min(end for _, end in self.running.values())
        ended = []
        for task_id, (start, end) in list(self.running.items()):
            if end == self.clock:
                ok = task_id not in self.fail
                self.tasks[task_id]["status"] = "done" if ok else "open"
                self.log.append((task_id, start, end, ok))
                del self.running[task_id]
                ended.append((task_id, ok))
        return ended

    def max_concurrency(self) -> int:
        points = sorted({s for _, s, _, _ in self.log})
        return max(sum(1 for _, s, e, _ in self.log if s <= p < e) for p in points)


def clash(a: dict, b: dict) -> bool:
    """Independent of components.py: do two TWELVE tasks share a component (api ~ api/auth)?"""
    names = [set(t["category"].removeprefix("component:").split(",")) for t in (a, b)]
    return any(x == y or x.startswith(y + "/") or y.startswith(x + "/")
               for x in names[0] for y in names[1])


def drive(backlog: Backlog, state: scheduler.ParallelRun, **kw) -> scheduler.ParallelRun:
    return scheduler.run(state, peek=backlog.peek, claim=backlog.claim, launch=backlog.launch,
                         wait=backlog.wait, **kw)


TWELVE = [{"id": f"t{i:02d}", "category": f"component:{c}", "duration": d}
          for i, (c, d) in enumerate(zip(
              ["api", "api", "db", "ui", "api,db", "ui", "docs", "db", "api/auth", "ui,docs",
               "infra", "api"],
              [3, 1, 2, 2, 1, 3, 1, 2, 2, 1, 4, 1]))]


def test_three_sessions_finish_twelve_tasks_once_each_without_overlapping_components():
    backlog = Backlog(TWELVE)
    state = drive(backlog, scheduler.ParallelRun(parallel=3))
    assert state.reason == "complete"
    assert sorted(backlog.launches) == sorted(t["id"] for t in TWELVE)      # each exactly once
    assert sorted(state.completed) == sorted(t["id"] for t in TWELVE) and not state.failed
    assert all(t["status"] == "done" for t in backlog.tasks.values())
    assert backlog.max_concurrency() == 3
    for (a, sa, ea, _), (b, sb, eb, _) in itertools.combinations(backlog.log, 2):
        if sa < eb and sb < ea:                                              # ran at once
            assert not clash(backlog.tasks[a], backlog.tasks[b]), (a, b)


def test_parallel_runs_are_shorter_than_one_at_a_time():
    one, three = Backlog(TWELVE), Backlog(TWELVE)
    drive(one, scheduler.ParallelRun(parallel=1))
    drive(three, scheduler.ParallelRun(parallel=3))
    assert one.clock == sum(t["duration"] for t in TWELVE)
    assert three.clock < one.clock / 1.5


@pytest.mark.parametrize("parallel, limit", [(1, 5), (3, 5), (4, 2)], ids=["1x5", "3x5", "4x2"])
def test_max_iterations_counts_sessions_started_across_all_slots(parallel, limit):
    backlog = Backlog(TWELVE)
    state = drive(backlog, scheduler.ParallelRun(parallel=parallel, max_iterations=limit))
    assert state.reason == "max_iterations"
    assert state.started == limit == len(backlog.launches)
    assert len(state.completed) == limit and not state.active


def test_a_failed_task_is_not_launched_again_in_the_same_run():
    backlog = Backlog(TWELVE[:4], fail={"t01"})
    state = drive(backlog, scheduler.ParallelRun(parallel=2))
    assert backlog.launches.count("t01") == 1
    assert state.failed == ["t01"] and state.reason == "blocked"
    assert backlog.tasks["t01"]["status"] == "open"                # left for the next run


def test_a_launch_failure_counts_as_a_started_and_failed_session():
    backlog = Backlog(TWELVE[:3], unlaunchable={"t00"})
    state = drive(backlog, scheduler.ParallelRun(parallel=2, max_iterations=3))
    assert state.started == 3 and "t00" in state.failed
    assert state.reason == "max_iterations"


def test_a_task_claimed_by_another_runner_is_neither_counted_nor_retried():
    backlog = Backlog(TWELVE[:4], taken_elsewhere={"t00"})
    state = drive(backlog, scheduler.ParallelRun(parallel=2))
    assert "t00" not in backlog.launches
    assert state.started == 3 and state.reason == "complete"


def test_untagged_tasks_run_one_at_a_time():
    backlog = Backlog([{"id": f"u{i}", "duration": 1} for i in range(4)])
    state = drive(backlog, scheduler.ParallelRun(parallel=4))
    assert state.reason == "complete" and backlog.max_concurrency() == 1


def test_a_stop_request_ends_launching_and_hands_back_the_running_sessions():
    backlog = Backlog(TWELVE)
    waits = []

    def wait(active):
        waits.append(1)
        return backlog.wait(active)

    state = scheduler.run(scheduler.ParallelRun(parallel=3), peek=backlog.peek,
                          claim=backlog.claim, launch=backlog.launch, wait=wait,
                          stopping=lambda: len(waits) >= 2)
    assert state.reason == "stopped"
    assert set(state.active) == set(backlog.running) and state.active
    assert len(backlog.launches) == state.started < len(TWELVE)


def test_a_task_waits_until_the_session_of_its_blocker_has_ended():
    backlog = Backlog([{"id": "base", "category": "component:api", "duration": 3,
                        "done_early": True},
                       {"id": "other", "category": "component:docs", "duration": 1},
                       {"id": "next", "category": "component:ui", "deps": ["base"],
                        "duration": 1}])
    drive(backlog, scheduler.ParallelRun(parallel=3))
    times = {task_id: (start, end) for task_id, start, end, _ in backlog.log}
    assert times["next"][0] >= times["base"][1]


def test_an_empty_backlog_completes_at_once():
    state = drive(Backlog([]), scheduler.ParallelRun(parallel=3))
    assert (state.reason, state.started) == ("complete", 0)


STUB_AGENT = """\
import os, subprocess, sys, time
task, name = sys.argv[1], sys.argv[2]
time.sleep(float(os.environ.get("STUB_SECONDS", "0.05")))
with open(name, "w") as f:
    f.write(task + "\\n")
subprocess.run(["git", "add", name], check=True)
subprocess.run(["git", "commit", "-q", "-m", "task " + task], check=True)
"""


def test_real_sessions_in_worktrees_finish_and_merge_every_task_once(git_repo, tmp_path):
    """The scheduler driving worktrees and real processes, as the loop will."""
    repo = git_repo.resolve()
    for key, value in (("user.name", "Test"), ("user.email", "test@example.com")):
        subprocess.run(["git", "config", key, value], cwd=repo, check=True)
    (repo / ".ralph").mkdir()
    (repo / ".ralph" / ".gitignore").write_text("*\n")
    agent = tmp_path / "stub_agent.py"
    agent.write_text(STUB_AGENT)
    backlog = Backlog(TWELVE)
    running: dict[int, tuple[str, worktrees.Worktree, float, subprocess.Popen]] = {}
    log: list[tuple[str, float, float]] = []

    def launch(task):
        wt = worktrees.create(repo, "run1", task["id"], "main", env=ENV)
        proc = subprocess.Popen([sys.executable, str(agent), task["id"], f"{task['id']}.txt"],
                                cwd=wt.path, stdin=subprocess.DEVNULL)
        running[proc.pid] = (task["id"], wt, time.monotonic(), proc)   # kept: never reaped by GC
        return proc.pid

    def wait(active):
        pid, status = os.wait()                      # blocks until one session ends
        task_id, wt, started, proc = running.pop(pid)
        proc.returncode = os.waitstatus_to_exitcode(status)
        log.append((task_id, started, time.monotonic()))
        result = worktrees.merge_back(wt, "rebase", env=ENV)
        worktrees.remove(wt, env=ENV)
        backlog.tasks[task_id]["status"] = "done" if result.merged else "open"
        return [(task_id, status == 0 and result.merged)]

    state = scheduler.run(scheduler.ParallelRun(parallel=3), peek=backlog.peek,
                          claim=backlog.claim, launch=launch, wait=wait)
    assert state.reason == "complete" and not state.failed
    assert sorted(state.completed) == sorted(t["id"] for t in TWELVE)
    for (a, sa, ea), (b, sb, eb) in itertools.combinations(log, 2):
        if sa < eb and sb < ea:
            assert not clash(backlog.tasks[a], backlog.tasks[b]), (a, b)
    for task in TWELVE:
        assert (repo / f"{task['id']}.txt").read_text() == f"{task['id']}\n"
    branches = subprocess.run(["git", "branch", "--list", "ralph/*"], cwd=repo,
                              capture_output=True, text=True, check=True).stdout
    assert branches == ""
    assert worktrees.cleanup_run(repo, "run1", "main", env=ENV) == []
