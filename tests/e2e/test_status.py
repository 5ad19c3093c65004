"""status: `ralph status [--json]` run from another process while a real run holds the lock."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from ralphpy.runs import progress
from ralphpy.runs import state as run_state
from ralphpy.commands import status
from ralphpy.config import settings

HOLDER = r"""
import sys
from pathlib import Path
from ralphpy.runs import progress
from ralphpy.runs import lock as run_lock
from ralphpy.runs import state as run_state
ralph_dir = Path(sys.argv[1])
lock = run_lock.acquire(ralph_dir / "run.lock", "run-live")
state = run_state.RunState(run_id="run-live", mode="build", max_iterations=5)
state.begin_session("t-1", 11, ".ralph/logs/1.log")
state.end_session("t-1", ok=True)
state.iteration = 1
state.begin_session("t-2", 12, ".ralph/logs/2.log")
run_state.save(ralph_dir, state)
progress.append_event(ralph_dir, "run-live", "session_end", n=1, task="t-1", exit_code=0,
                      duration_s=12.4, cost_usd=0.25, turns=4, outcome="completed")
print("ready", flush=True)
sys.stdin.read()
run_lock.release(lock)
"""
STATUS = "import sys; from ralphpy.commands import status; sys.exit(status.main(sys.argv[1:]))"


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "lib")}


def ralph_status(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", STATUS, *args], cwd=cwd, env=child_env(),
                          capture_output=True, text=True, timeout=30)


@pytest.fixture
def live_run(tmp_path: Path):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / ".ralph")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=child_env())
    try:
        assert proc.stdout.readline() == "ready\n"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def test_status_json_from_another_process_sees_the_live_run(tmp_path: Path, live_run):
    result = ralph_status(tmp_path, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert (data["alive"], data["lock"], data["pid"]) == (True, "alive", live_run.pid)
    assert (data["runId"], data["mode"], data["iteration"], data["maxIterations"]) == (
        "run-live", "build", 1, 5)
    assert (data["currentTask"], data["sessionsStarted"], data["completed"]) == ("t-2", 2, 1)
    assert data["interrupted"] is False
    assert data["lastOutcomes"][0]["task"] == "t-1" and data["lastOutcomes"][0]["turns"] == 4


def test_status_text_names_the_run_its_iteration_and_current_task(tmp_path: Path, live_run):
    result = ralph_status(tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Run:        run-live (build)"
    assert lines[1].startswith(f"Status:     running, held by pid {live_run.pid} on host ")
    assert "Iteration:  1 of 5, sessions started: 2" in lines
    assert "Tasks:      1 completed, 0 failed" in lines
    assert any(line.startswith("Current:    t-2 (session 2, started ") for line in lines)
    assert lines[-1].endswith("session 1  t-1  completed  (exit 0, 12s, $0.25, 4 turns)")


def test_status_after_the_run_was_killed_says_it_was_interrupted(tmp_path: Path, live_run):
    live_run.kill()
    live_run.wait(timeout=10)
    data = json.loads(ralph_status(tmp_path, "--json").stdout)
    assert (data["alive"], data["lock"], data["interrupted"]) == (False, "stale", True)
    text = ralph_status(tmp_path).stdout
    assert "Status:     not running: interrupted (process gone); `ralph build` resumes it" in text


def test_status_of_a_finished_run_shows_how_it_ended(tmp_path: Path):
    ralph_dir = tmp_path / ".ralph"
    state = run_state.RunState(run_id="run-done", mode="plan", max_iterations=1)
    state.finish(0, "Reached max iterations: 1")
    run_state.save(ralph_dir, state)
    out = io.StringIO()
    assert status.main([], stdout=out, cwd=tmp_path) == 0
    assert f"Status:     ended {state.ended_at}: Reached max iterations: 1 (exit 0)" in (
        out.getvalue())


def test_status_shows_escape_sequences_in_a_runs_records_escaped(tmp_path: Path):
    """A task id, a fail reason and an exit reason come from agents and stores: `ralph status`
    shows their control characters as text, one line each."""
    ralph_dir = tmp_path / ".ralph"
    hostile = "\x1b]0;pwned\x07\x1b[2Jgone\nnext"
    state = run_state.RunState(run_id="run-bad", mode="build", max_iterations=2)
    state.begin_session("t\x1b[31m1", 11, ".ralph/logs/1.log")
    state.finish(6, f"no progress: {hostile}")
    state.active = {"n": 1, "task": "t\x1b[31m1"}
    run_state.save(ralph_dir, state)
    progress.append_event(ralph_dir, "run-bad", "session_end", n=1, task="t\x1b[31m1",
                          exit_code=1, outcome="failed", reason=hostile)
    result = ralph_status(tmp_path)
    assert result.returncode == 0
    shown = "\\x1b]0;pwned\\x07\\x1b[2Jgone\\nnext"
    assert f"no progress: {shown} (exit 6)" in result.stdout
    assert "Current:    t\\x1b[31m1 (session 1" in result.stdout
    assert f"session 1  t\\x1b[31m1  failed  (exit 1, {shown})" in result.stdout
    assert not any(c in result.stdout for c in "\x1b\x07")


def test_status_without_any_run_says_so_and_exits_0(tmp_path: Path):
    result = ralph_status(tmp_path)
    assert (result.returncode, result.stdout) == (0, "No ralph run found in .ralph.\n")
    data = json.loads(ralph_status(tmp_path, "--json").stdout)
    assert (data["runId"], data["alive"], data["lastOutcomes"]) == (None, False, [])


def test_status_never_touches_a_corrupt_state_file(tmp_path: Path):
    path = run_state.state_path(tmp_path / ".ralph", "run-x")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x00\x01")
    result = ralph_status(tmp_path)
    assert result.returncode == 0
    assert "State:      not written yet or unreadable" in result.stdout
    assert path.read_bytes() == b"\x00\x01"


@pytest.mark.parametrize("argv,code,stream,text", [
    (["--help"], 0, "out", "Usage: ralph status [options]\n"),
    (["--bogus"], 1, "err", "Error: Unknown option '--bogus'\nRun 'ralph status --help' for usage\n"),
    (["--count", "2"], 1, "err",
     "Error: --count needs --watch\nRun 'ralph status --help' for usage\n"),
    (["--interval", "2"], 1, "err", "Error: --interval needs --watch\n"),
], ids=["help", "unknown-option", "count-without-watch", "interval-without-watch"])
def test_status_options(tmp_path: Path, argv, code, stream, text):
    out, err = io.StringIO(), io.StringIO()
    assert status.main(argv, stdout=out, stderr=err, cwd=tmp_path) == code
    got = (out if stream == "out" else err).getvalue()
    assert got.startswith(text)
    assert not (tmp_path / ".ralph").exists()


def test_last_outcomes_are_the_newest_five_newest_first(tmp_path: Path):
    ralph_dir = tmp_path / ".ralph"
    run_state.save(ralph_dir, run_state.RunState(run_id="r", mode="build", max_iterations=0))
    for n in range(1, 8):
        progress.append_event(ralph_dir, "r", "session_end", n=n, task=f"t-{n}", outcome="idle")
    data = status.read_status(ralph_dir)
    assert [o["n"] for o in data["lastOutcomes"]] == [7, 6, 5, 4, 3]


def test_a_watch_reads_the_settings_once_not_at_every_refresh(tmp_path: Path, monkeypatch,
                                                               mocker):
    for name in ("RALPH_TASKS_DB", "RALPH_TASKS"):       # no fleet: ralph.yml is asked
        monkeypatch.delenv(name, raising=False)
    load = mocker.spy(settings, "load")
    out = io.StringIO()
    argv = ["--watch", "--count", "3", "--interval", "0.01"]
    assert status.main(argv, stdout=out, cwd=tmp_path) == 0
    assert out.getvalue().count("No ralph run found") == 3
    assert load.call_count == 1


@pytest.mark.parametrize("mode, max_iterations, options, stops_at", [
    ("build", 0, {}, (5, 3)),                                   # unattended: the defaults
    ("build", 4, {}, (0, 0)),                                   # -n 4: off unless given
    ("build", 4, {"max_idle_sessions": 2}, (0, 2)),
    ("plan", 0, {}, (0, 0)),
    ("build", 0, {"parallel": 2}, (5, 0)),                      # each task once: no idle count
    ("build", 0, {"parallel": 2, "max_consecutive_failures": 7}, (7, 0)),
], ids=["build", "iteration-limit", "iteration-limit-given", "plan", "parallel",
        "parallel-given"])
def test_the_breakers_shown_stop_the_run_where_the_run_applies_them(
        tmp_path: Path, mode, max_iterations, options, stops_at):
    ralph_dir = tmp_path / ".ralph"
    state = run_state.RunState(run_id="r", mode=mode, max_iterations=max_iterations,
                               options=options)
    state.extra["guards"] = {"consecutive_failures": 1, "idle_sessions": 0}
    run_state.save(ralph_dir, state)
    breakers = status.read_status(ralph_dir)["breakers"]
    assert (breakers["consecutive_failures"]["stopsAt"],
            breakers["idle_sessions"]["stopsAt"]) == stops_at
    assert breakers["consecutive_failures"]["count"] == 1
