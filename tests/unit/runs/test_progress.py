"""progress: events.jsonl lines and progress.md, written for real and read back."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, read_jsonl
from ralphpy.runs import progress
from ralphpy.runs import state as run_state
from ralphpy.errors import EnvironmentFailure

TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture
def ralph_dir(tmp_path: Path) -> Path:
    return tmp_path / ".ralph"


def test_each_event_is_one_json_line_with_a_utc_timestamp(ralph_dir: Path):
    progress.append_event(ralph_dir, "r1", "run_start", mode="build", options={"n": 3},
                          resumed=False)
    progress.append_event(ralph_dir, "r1", "session_start", n=1, task="t-1", agent="claude",
                          log=".ralph/logs/1.log")
    progress.append_event(ralph_dir, "r1", "session_end", n=1, task="t-1", exit_code=0,
                          duration_s=1.5, cost_usd=0.01, turns=3, outcome="completed")
    progress.append_event(ralph_dir, "r1", "run_end", exit_code=0, reason="no tasks")
    lines = progress.events_path(ralph_dir, "r1").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["event"] for e in events] == ["run_start", "session_start", "session_end",
                                            "run_end"]
    assert all(TS.match(e["ts"]) for e in events)
    assert list(events[0]) == ["ts", "event", "mode", "options", "resumed"]
    assert events[2]["cost_usd"] == 0.01 and events[3]["reason"] == "no tasks"


def test_events_are_appended_never_rewritten(ralph_dir: Path):
    progress.append_event(ralph_dir, "r1", "log", kind="a", message="first")
    first = progress.events_path(ralph_dir, "r1").read_bytes()
    progress.append_event(ralph_dir, "r1", "log", kind="b", message="second")
    assert progress.events_path(ralph_dir, "r1").read_bytes().startswith(first)


def test_values_that_are_not_json_are_written_as_text(ralph_dir: Path):
    record = progress.append_event(ralph_dir, "r1", "log", kind="x", path=Path("/a/b"))
    assert read_jsonl(progress.events_path(ralph_dir, "r1"))[0]["path"] == "/a/b"
    assert record["path"] == Path("/a/b")


def test_concurrent_appenders_never_interleave_inside_a_line(ralph_dir: Path):
    child = r"""
import sys
from pathlib import Path
from ralphpy.runs import progress
for i in range(200):
    progress.append_event(Path(sys.argv[1]), "r1", "log", kind=sys.argv[2], i=i, pad="x" * 500)
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib")}
    procs = [subprocess.Popen([sys.executable, "-c", child, str(ralph_dir), name], env=env)
             for name in ("a", "b", "c")]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    events = read_jsonl(progress.events_path(ralph_dir, "r1"))   # fails on a torn line
    assert len(events) == 600
    for name in "abc":
        assert [e["i"] for e in events if e["kind"] == name] == list(range(200))


def test_a_torn_last_line_is_skipped_by_the_reader(ralph_dir: Path):
    progress.append_event(ralph_dir, "r1", "run_start", mode="build")
    with open(progress.events_path(ralph_dir, "r1"), "ab") as fh:
        fh.write(b'{"ts": "2026-01-01T00:00:00.000Z", "event": "sess')
    assert [e["event"] for e in progress.read_events(ralph_dir, "r1")] == ["run_start"]


def test_a_full_disk_while_appending_is_one_environment_error(ralph_dir: Path):
    # events.jsonl is a link to /dev/full: the append itself meets ENOSPC.
    path = progress.events_path(ralph_dir, "r1")
    path.parent.mkdir(parents=True)
    path.symlink_to("/dev/full")
    with pytest.raises(EnvironmentFailure) as err:
        progress.append_event(ralph_dir, "r1", "log", kind="x")
    assert str(err.value) == (f"cannot append to {path}: No space left on device; "
                              "free some disk space and run again")


def make_state() -> run_state.RunState:
    state = run_state.RunState(run_id="r1", mode="build", max_iterations=10,
                               started_at="2026-01-01T00:00:00Z")
    for n in range(12):
        state.begin_session(f"task-{n}", 100 + n, f".ralph/logs/{n}.log")
        ok = n % 3 != 0
        state.end_session(f"task-{n}", ok=ok, reason="session exited | early")
        (state.completed if ok else state.failed)[-1]["at"] = f"2026-01-01T00:{n:02d}:00Z"
    state.iteration = 12
    state.begin_session("task-12", 4242, ".ralph/logs/12.log")
    return state


def test_progress_md_shows_counters_active_session_and_the_latest_ten_outcomes(ralph_dir):
    state = make_state()
    run_state.save(ralph_dir, state)
    progress.write_progress(ralph_dir, state)
    text = progress.progress_path(ralph_dir).read_text()
    assert text.startswith("# ralph run r1\n\n- Mode: build\n- Status: running\n")
    for line in ("- Iteration: 12 of 10", "- Sessions started: 13", "- Completed: 8",
                 "- Failed: 4"):
        assert f"\n{line}\n" in text
    assert "- Session 13: task task-12, started " in text and "pid 4242" in text
    rows = [line for line in text.splitlines() if line.startswith("| 2026")]
    assert len(rows) == 10
    assert rows[0].startswith("| 2026-01-01T00:11:00Z | task-11 | completed |")
    assert rows[2] == "| 2026-01-01T00:09:00Z | task-9 | failed | session exited \\| early |"


def test_progress_md_of_a_finished_run_shows_its_exit(ralph_dir: Path):
    state = run_state.RunState(run_id="r1", mode="plan", max_iterations=0)
    state.finish(0, "completion promise received")
    progress.write_progress(ralph_dir, state)
    text = progress.progress_path(ralph_dir).read_text()
    assert "- Status: ended " in text and ": completion promise received (exit 0)" in text
    assert "- Iteration: 0 (no limit)" in text
    assert "## Active session\n\nNone.\n" in text and "None yet." in text



def test_outcomes_of_one_second_are_newest_first_and_parallel_sessions_each_have_a_line(
        ralph_dir: Path):
    state = run_state.RunState(run_id="r1", mode="build", max_iterations=0)
    for n in (1, 2, 3):                                 # sessions that ended within a second
        state.completed.append({"task": f"t{n}", "at": "2026-01-01T00:00:05Z", "n": n})
    state.failed.append({"task": "t0", "at": "2026-01-01T00:00:04Z", "n": 0, "reason": "x"})
    state.active = {"n": 5, "task": "a, b", "sessions": [          # a --parallel run's record
        {"n": 4, "task": "a", "startedAt": "s4", "pid": 41, "log": "l4"},
        {"n": 5, "task": "b", "startedAt": "s5", "pid": None, "log": "l5"}]}
    progress.keep_outcome(state, 3, "success", "result success", False)
    progress.write_progress(ralph_dir, state)
    text = progress.progress_path(ralph_dir).read_text()
    rows = [line.split(" | ")[1] for line in text.splitlines() if line.startswith("| 2026")]
    assert rows == ["t3", "t2", "t1", "t0"]
    assert "- Session 4: task a, started s4, pid 41, log l4\n" in text
    assert "- Session 5: task b, started s5, pid None, log l5\n" in text
    assert "| 3 | success | result success |" in text

def test_progress_md_is_replaced_atomically(ralph_dir: Path):
    state = make_state()
    progress.write_progress(ralph_dir, state)
    progress.write_progress(ralph_dir, state)
    # no temporary file left; .ralph/ ignores itself from its first write (atomic_file)
    assert sorted(os.listdir(ralph_dir)) == [".gitignore", "progress.md"]
