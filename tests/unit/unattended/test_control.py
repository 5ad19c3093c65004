"""`ralph ctl pause|resume|stop|status`: sentinel files in .ralph/, usage errors,
and the loop's between-sessions check (pause waits by polling; stop wins)."""
from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from ralphpy.commands.ctl import main
from ralphpy.runs import lock as run_lock
from ralphpy.unattended.control import CONTINUE, STOPPED, check_between_sessions, consume_stop


def ctl(ralph_dir: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), ralph_dir=ralph_dir, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def running(tmp_path):
    """A run going: this process holds the run lock of tmp_path/.ralph."""
    with run_lock.acquire(tmp_path / ".ralph" / "run.lock", "r1"):
        yield tmp_path / ".ralph"


def test_pause_writes_the_pause_file_atomically_and_resume_removes_it(running):
    code, out, err = ctl(running, "pause")
    assert (code, err) == (0, "")
    assert out == ("Pause requested: the run pauses before its next session "
                   "(`ralph ctl resume` to continue)\n")
    assert json.loads((running / "PAUSE").read_text())["requested"] == "pause"
    assert sorted(p.name for p in running.iterdir()) == [".gitignore", "PAUSE", "run.lock"]
    assert ctl(running, "resume") == (0, "Resumed: the run continues with its next session\n",
                                      "")
    assert not (running / "PAUSE").exists()
    assert ctl(running, "resume") == (0, "Not paused\n", "")


def test_stop_writes_the_stop_file(running):
    assert ctl(running, "stop") == (
        0, "Stop requested: the run stops after its current session\n", "")
    assert (running / "STOP").is_file()


@pytest.mark.parametrize("lock", ["none", "stale"])
def test_with_no_run_going_ctl_says_so_and_a_stop_writes_nothing(tmp_path, lock):
    """A run drops a STOP it finds at its start and honours a PAUSE: the lines say what
    each request does when no run holds the lock (none, or a dead run's)."""
    ralph = tmp_path / ".ralph"
    if lock == "stale":
        ralph.mkdir()
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)
        (ralph / "run.lock").write_text(json.dumps({
            "runId": "r0", "pid": int(dead.stdout), "host": socket.gethostname(),
            "startedAt": "2026-01-01T00:00:00Z"}))
    assert ctl(ralph, "stop") == (0, "No run is going: nothing to stop\n", "")
    assert not (ralph / "STOP").exists()
    assert ctl(ralph, "pause") == (0, "Pause requested: no run is going; the next run pauses "
                                      "before its first session (`ralph ctl resume` to lift "
                                      "it)\n", "")
    assert (ralph / "PAUSE").is_file()
    assert ctl(ralph, "resume") == (0, "Resumed: the pause is lifted; no run is going\n", "")
    assert not (ralph / "PAUSE").exists()


@pytest.mark.parametrize("files,expected", [
    ((), "no pause or stop requested"), (("PAUSE",), "paused"),
    (("PAUSE", "STOP"), "stop requested"),
], ids=["nothing", "paused", "stop-wins"])
def test_status_names_the_pending_request(running, files, expected):
    for name in files:
        (running / name).write_text("{}")
    assert ctl(running, "status") == (0, expected + "\n", "")


@pytest.mark.parametrize("files,expected", [
    ((), "no pause or stop requested"),
    (("PAUSE",), "no run is going; the next run pauses before its first session "
                 "(`ralph ctl resume` to lift it)"),
    (("PAUSE", "STOP"), "no run is going; the next run pauses before its first session "
                        "(`ralph ctl resume` to lift it)"),
    (("STOP",), "no run is going; the stop request an earlier run left is dropped when the "
                "next run starts"),
], ids=["nothing", "pause", "pause-and-stop", "stop"])
def test_status_without_a_run_says_what_the_next_run_does(tmp_path, files, expected):
    """A run drops a STOP it finds at its start and honours a PAUSE: `paused` and `stop
    requested` would say a run is paused or stopping when none is going."""
    tmp_path.joinpath(".ralph").mkdir()
    for name in files:
        (tmp_path / ".ralph" / name).write_text("{}")
    assert ctl(tmp_path / ".ralph", "status") == (0, expected + "\n", "")


@pytest.mark.parametrize("argv,line", [
    ((), "Error: ralph ctl takes one command. Usage: ralph ctl pause|resume|stop|status\n"),
    (("halt",), "Error: Unknown ctl command 'halt'. Usage: ralph ctl pause|resume|stop|status\n"),
    (("pause", "now"),
     "Error: ralph ctl takes one command. Usage: ralph ctl pause|resume|stop|status\n"),
], ids=["no-command", "unknown-command", "extra-argument"])
def test_usage_errors_are_one_line_exit_1_and_write_nothing(tmp_path, argv, line):
    assert ctl(tmp_path / ".ralph", *argv) == (1, "", line)
    assert not (tmp_path / ".ralph").exists()


def test_ctl_as_a_process_uses_the_ralph_dir_of_the_current_directory(tmp_path, running):
    code = "import sys; from ralphpy.commands.ctl import main; sys.exit(main(sys.argv[1:]))"
    run = subprocess.run([sys.executable, "-c", code, "stop"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=30,
                         env={"PYTHONPATH": str(ROOT / "lib"), "PATH": "/usr/bin:/bin"})
    assert (run.returncode, run.stderr) == (0, "")
    assert (tmp_path / ".ralph" / "STOP").is_file()


# --- the loop's side ---------------------------------------------------------------------

def test_without_sentinels_the_loop_continues_at_once(tmp_path):
    waits = []
    assert check_between_sessions(tmp_path, lambda s: waits.append(s)) == CONTINUE
    assert waits == []


def test_a_stop_request_stops_between_sessions_and_is_consumed_at_run_end(running):
    ctl(running, "stop")
    assert check_between_sessions(running, lambda s: False) == STOPPED
    assert consume_stop(running) is True
    assert consume_stop(running) is False
    assert check_between_sessions(running, lambda s: False) == CONTINUE


def test_a_pause_waits_by_polling_logs_once_and_continues_after_resume(tmp_path):
    ctl(tmp_path, "pause")
    waits, lines = [], []

    def wait(seconds):
        waits.append(seconds)
        if len(waits) == 3:
            ctl(tmp_path, "resume")          # the user resumes from another shell
        return False
    assert check_between_sessions(tmp_path, wait, log=lines.append, poll_s=0.5) == CONTINUE
    assert waits == [0.5, 0.5, 0.5]
    assert lines == [f"Paused: {tmp_path / 'PAUSE'} exists; run `ralph ctl resume` to continue",
                     "Resumed"]


def test_a_stop_during_a_pause_ends_the_pause_with_stop(running):
    ctl(running, "pause")
    calls = []

    def wait(seconds):
        calls.append(seconds)
        ctl(running, "stop")
        return False
    assert check_between_sessions(running, wait) == STOPPED and len(calls) == 1


def test_a_signal_during_a_pause_ends_the_pause_with_stop(tmp_path):
    ctl(tmp_path, "pause")
    assert check_between_sessions(tmp_path, lambda s: True) == STOPPED   # Event.wait -> True
