"""What the build loop reads of the embedded store around each session (backlog.readonly: the
tasks a session touched, finished, failed or deleted, the retry counts before it, whether a
task could still start) costs the same at 100 tasks and at 4,000: counted in SQLite virtual
machine instructions, not in time. A real store written by the real task CLI."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Callable

import pytest

from conftest import wait_for
from ralphpy.backlog import readonly

SMALL, LARGE = 100, 4000
_real_connect = sqlite3.connect


@pytest.fixture
def steps(mocker) -> list[int]:
    """Every connection sqlite3.connect opens counts its virtual machine steps into steps[0]
    (a progress handler called at each instruction; the counting is all it does)."""
    counted = [0]

    def connect(*args, **kwargs):
        conn = _real_connect(*args, **kwargs)

        def tick() -> int:
            counted[0] += 1
            return 0                          # 0: go on
        conn.set_progress_handler(tick, 1)
        return conn
    mocker.patch("sqlite3.connect", side_effect=connect)
    return counted


def backlog(run_task, cwd: Path, size: int) -> str:
    """A backlog of `size` open tasks in its own database, where one session's worth of
    work happened: t0 done by agent w1, t1 failed by the agent (it failed once before too),
    t2 deleted, t3 claimed. Returns the session's start as the reads take it: a second
    after the backlog was written (updated_at has whole seconds)."""
    lines = "".join(json.dumps({"id": f"t{i}", "t": f"Task {i}", "d": "x" * 100}) + "\n"
                    for i in range(size))
    assert run_task("plan-sync", input=lines, cwd=cwd).returncode == 0
    written = readonly.since_now()
    since = wait_for(lambda: readonly.since_now() > written and readonly.since_now())
    w1 = {"RALPH_AGENT_ID": "w1"}
    for argv in (("claim", "t1"), ("fail", "t1", "--reason", "before"), ("claim", "t0"),
                 ("done", "t0"), ("claim", "t1"), ("fail", "t1", "--reason", "gave up"),
                 ("delete", "t2"), ("claim", "t3")):
        assert run_task(*argv, env=w1, cwd=cwd).returncode == 0, argv
    return since


def reads(environ, cwd: Path, since: str) -> dict[str, Callable[[], object]]:
    kw = {"environ": environ, "cwd": cwd}
    return {
        "finished_by": lambda: readonly.finished_by("w1", since, **kw),
        "deleted_since": lambda: readonly.deleted_since(since, **kw),
        "retry_counts": lambda: list(readonly.retry_counts(**kw).values()),   # by row id
        "failed_since": lambda: readonly.failed_since({}, since, **kw),
        "touched": lambda: [t["id"] for t in readonly.export_records("touched", since=since,
                                                                     **kw)],
        "slugs": lambda: [t["id"] for t in readonly.export_records("slugs", slugs=["t3", "t0"],
                                                                   **kw)],
        "retried": lambda: [t["id"] for t in readonly.export_records("retried", **kw)],
        "any_pending": lambda: readonly.any_pending(**kw),
    }


def test_the_reads_around_a_session_cost_the_same_at_100_tasks_and_at_4000(
        git_repo: Path, base_env, run_task, steps, monkeypatch):
    monkeypatch.chdir(git_repo)           # the scope is the current directory's
    counts, answers = {}, {}
    for size in (SMALL, LARGE):
        db = f".ralph/tasks-{size}.db"
        env = {**base_env, "RALPH_TASKS_DB": db}
        since = backlog(lambda *a, env=None, **k: run_task(*a, env={**(env or {}),
                                                                    "RALPH_TASKS_DB": db}, **k),
                        git_repo, size)
        answers[size], counts[size] = {}, {}
        for name, read in reads(env, git_repo, since).items():
            steps[0] = 0
            answers[size][name] = read()
            counts[size][name] = steps[0]
    assert answers[SMALL] == answers[LARGE]
    assert answers[LARGE]["finished_by"] == ["t0"] and answers[LARGE]["retry_counts"] == [2]
    assert answers[LARGE]["failed_since"] == {"t1": "gave up"}
    assert [slug for slug, _ in answers[LARGE]["deleted_since"]] == ["t2"]
    assert answers[LARGE]["slugs"] == ["t0", "t3"] and answers[LARGE]["retried"] == ["t1"]
    assert set(answers[LARGE]["touched"]) >= {"t0", "t1", "t2", "t3"}
    for name, small in counts[SMALL].items():
        # a 40-fold backlog: a walk over it would take some 40 times the steps
        assert counts[LARGE][name] < 2 * small + 2000, (name, counts)
