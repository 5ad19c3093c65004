"""run_lock: real processes hold, race for and abandon .ralph/run.lock."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from ralphpy.runs import lock as run_lock
from ralphpy.errors import EXIT_LOCKED, EnvironmentFailure, RunLocked

# A child that waits on fd <barrier> (EOF = go), acquires, reports, and holds until stdin closes.
CHILD = r"""
import json, os, sys
from pathlib import Path
from ralphpy.runs import lock as run_lock
from ralphpy.errors import RalphError
path, run_id, barrier = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
if barrier >= 0:
    os.read(barrier, 1)
try:
    lock = run_lock.acquire(path, run_id)
except RalphError as err:
    print(json.dumps({"won": False, "error": str(err), "code": err.exit_code}), flush=True)
    sys.exit(0)
print(json.dumps({"won": True, "note": lock.takeover_note}), flush=True)
sys.stdin.read()
run_lock.release(lock)
"""


def _child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "lib")}


def start_holder(path: Path, run_id: str, barrier: int = -1) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CHILD, str(path), run_id, str(barrier)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=_child_env(), pass_fds=(barrier,) if barrier >= 0 else ())


def report(proc: subprocess.Popen) -> dict:
    return json.loads(proc.stdout.readline())


@pytest.fixture
def procs():
    started: list[subprocess.Popen] = []
    yield started
    for proc in started:            # reap children whatever happened (filelock's cleanup)
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def lock_path(tmp_path: Path) -> Path:
    return tmp_path / ".ralph" / "run.lock"


def write_lock(path: Path, **fields) -> None:
    record = {"runId": "old-run", "pid": os.getpid(), "pidStartTime": None, "bootId": None,
              "host": socket.gethostname(), "startedAt": "2026-01-01T00:00:00Z", **fields}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_acquire_creates_a_lock_file_naming_this_process(lock_path: Path):
    lock = run_lock.acquire(lock_path, "run-1")
    record = json.loads(lock_path.read_text())
    assert record["runId"] == "run-1"
    assert record["pid"] == os.getpid()
    assert record["host"] == socket.gethostname()
    assert isinstance(record["pidStartTime"], int)
    assert record["startedAt"].endswith("Z")
    assert lock.took_over_from is None and not lock.reentrant


def test_second_acquire_refuses_while_a_live_process_holds_the_lock(lock_path, procs):
    holder = start_holder(lock_path, "run-A")
    procs.append(holder)
    assert report(holder)["won"]
    record = json.loads(lock_path.read_text())
    with pytest.raises(RunLocked) as err:
        run_lock.acquire(lock_path, "run-B")
    assert str(err.value) == (
        f"run lock {lock_path} is held by pid {holder.pid} on host {socket.gethostname()} "
        f"(run run-A, started {record['startedAt']}); wait for it or stop it")
    assert err.value.exit_code == EXIT_LOCKED == 3


def test_a_live_holder_of_the_same_run_id_in_another_process_still_refuses(lock_path, procs):
    holder = start_holder(lock_path, "run-A")
    procs.append(holder)
    assert report(holder)["won"]
    with pytest.raises(RunLocked, match=f"held by pid {holder.pid} "):
        run_lock.acquire(lock_path, "run-A")


def test_stale_lock_is_taken_over_after_its_holder_is_killed_with_sigkill(lock_path, procs):
    holder = start_holder(lock_path, "run-A")
    procs.append(holder)
    assert report(holder)["won"]
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=10)
    lock = run_lock.acquire(lock_path, "run-B")
    assert lock.took_over_from is not None and lock.took_over_from.pid == holder.pid
    assert lock.takeover_note.startswith(f"took over stale run lock {lock_path}: pid {holder.pid}")
    assert lock.takeover_note.endswith("is gone")
    assert json.loads(lock_path.read_text())["pid"] == os.getpid()


def test_stale_lock_is_taken_over_when_its_pid_is_gone(lock_path):
    write_lock(lock_path, pid=dead_pid())
    lock = run_lock.acquire(lock_path, "run-new")
    assert lock.took_over_from.run_id == "old-run"
    assert json.loads(lock_path.read_text())["runId"] == "run-new"


def test_a_reused_pid_is_detected_by_its_start_time(lock_path):
    # Our own pid is alive, but the lock claims another start time: another process had it.
    write_lock(lock_path, pid=os.getpid(), pidStartTime=1)
    lock = run_lock.acquire(lock_path, "run-new")
    assert "pid reused" in lock.takeover_note


def test_a_lock_from_before_a_reboot_is_stale(lock_path):
    write_lock(lock_path, pid=1, bootId="00000000-dead-beef-0000-000000000000")
    lock = run_lock.acquire(lock_path, "run-new")
    assert "predates a reboot" in lock.takeover_note


def test_a_lock_held_on_another_host_is_treated_as_held(lock_path):
    write_lock(lock_path, pid=dead_pid(), host="elsewhere.example")
    with pytest.raises(RunLocked) as err:
        run_lock.acquire(lock_path, "run-new")
    assert "on host elsewhere.example" in str(err.value)
    assert str(err.value).endswith("wait for it, or remove the file if that run is gone")


def test_reacquiring_the_same_run_in_the_same_process_is_reentrant(lock_path):
    first = run_lock.acquire(lock_path, "run-1")
    again = run_lock.acquire(lock_path, "run-1")
    assert again.reentrant and again.holder == first.holder


def test_the_same_process_cannot_lock_a_second_run(lock_path):
    run_lock.acquire(lock_path, "run-1")
    with pytest.raises(RunLocked, match="held by this process for run run-1"):
        run_lock.acquire(lock_path, "run-2")


@pytest.mark.parametrize("content", [b"", b"{\"runId\": ", b"\x00\xff\xfe", b"[1, 2]"],
                         ids=["empty", "truncated", "binary", "not-an-object"])
def test_an_unreadable_lock_is_respected_while_young_and_taken_over_when_old(lock_path, content):
    lock_path.parent.mkdir(parents=True)
    lock_path.write_bytes(content)
    with pytest.raises(RunLocked, match="unreadable"):
        run_lock.acquire(lock_path, "run-new")
    old = os.stat(lock_path).st_mtime - 60
    os.utime(lock_path, (old, old))
    lock = run_lock.acquire(lock_path, "run-new")
    assert lock.took_over_from is None
    assert lock.takeover_note.startswith(f"took over unreadable run lock {lock_path}")


def test_release_removes_our_own_lock(lock_path):
    lock = run_lock.acquire(lock_path, "run-1")
    run_lock.release(lock)
    assert not lock_path.exists()
    run_lock.release(lock)              # twice is harmless


def test_release_never_removes_a_lock_that_another_run_took_over(lock_path):
    ours = run_lock.acquire(lock_path, "run-1")
    write_lock(lock_path, runId="run-2", pid=1)
    before = lock_path.read_bytes()
    run_lock.release(ours)
    assert lock_path.read_bytes() == before


def test_the_lock_is_a_context_manager_that_releases_on_exit(lock_path):
    with run_lock.acquire(lock_path, "run-1"):
        assert lock_path.exists()
    assert not lock_path.exists()


def test_a_released_lock_can_be_acquired_by_the_next_process(lock_path, procs):
    holder = start_holder(lock_path, "run-A")
    procs.append(holder)
    assert report(holder)["won"]
    holder.communicate("", timeout=10)
    assert not lock_path.exists()
    assert run_lock.acquire(lock_path, "run-B").took_over_from is None


# Two long-lived racers: in round i each blocks on barrier pipe i, and both wake up when the
# parent closes its write end; they acquire at that same moment, report, and release on "next".
RACER = r"""
import json, os, sys
from pathlib import Path
from ralphpy.runs import lock as run_lock
from ralphpy.errors import RalphError
path, name, delay, barriers = (Path(sys.argv[1]), sys.argv[2], float(sys.argv[3]),
                               [int(fd) for fd in sys.argv[4:]])
if delay:
    # Widen the race window: both racers judge the lock stale before either takes it over,
    # so only the takeover guard keeps them from both winning.
    import time
    judge = run_lock._judge
    def slow_judge(holder):
        verdict = judge(holder)
        if verdict[0] == "stale":
            time.sleep(delay)
        return verdict
    run_lock._judge = slow_judge
for n, fd in enumerate(barriers):
    os.read(fd, 1)
    try:
        lock = run_lock.acquire(path, f"run-{n}-{name}")
        print(json.dumps({"won": True}), flush=True)
    except RalphError as err:
        lock = None
        print(json.dumps({"won": False, "error": str(err), "code": err.exit_code}), flush=True)
    sys.stdin.readline()
    if lock:
        run_lock.release(lock)
    print(json.dumps({"released": n}), flush=True)
"""
TRIALS = 20


@pytest.mark.parametrize("stale", [False, True], ids=["no-lock", "stale-lock"])
def test_two_processes_acquiring_at_the_same_moment_exactly_one_wins(lock_path, procs, stale):
    pipes = [os.pipe() for _ in range(TRIALS)]
    reads = [r for r, _ in pipes]
    delay = "0.05" if stale else "0"
    pair = [subprocess.Popen([sys.executable, "-c", RACER, str(lock_path), name, delay,
                              *map(str, reads)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env=_child_env(), pass_fds=reads) for name in ("a", "b")]
    procs.extend(pair)
    for fd in reads:
        os.close(fd)
    dead = dead_pid()
    for trial, (_, write_end) in enumerate(pipes):
        if stale:
            write_lock(lock_path, pid=dead)
        os.close(write_end)             # both racers wake up now
        results = [report(proc) for proc in pair]
        assert sorted(r["won"] for r in results) == [False, True], (trial, results)
        loser = next(r for r in results if not r["won"])
        assert loser["code"] == EXIT_LOCKED and "is held by pid" in loser["error"]
        for proc in pair:
            proc.stdin.write("next\n")
            proc.stdin.flush()
        assert [report(proc) for proc in pair] == [{"released": trial}] * 2
        assert not lock_path.exists()


def test_inspect_reports_a_live_holder_a_stale_one_and_no_lock(lock_path, procs):
    assert run_lock.inspect(lock_path).state == "free"
    holder = start_holder(lock_path, "run-A")
    procs.append(holder)
    assert report(holder)["won"]
    live = run_lock.inspect(lock_path)
    assert (live.state, live.holder.pid) == ("alive", holder.pid)
    holder.kill()
    holder.wait(timeout=10)
    assert run_lock.inspect(lock_path).state == "stale"


def test_a_file_where_the_ralph_directory_should_be_is_an_environment_failure(tmp_path):
    (tmp_path / ".ralph").write_text("not a directory")
    with pytest.raises(EnvironmentFailure) as err:
        run_lock.acquire(tmp_path / ".ralph" / "run.lock", "run-1")
    assert str(err.value).startswith(f"cannot create directory {tmp_path / '.ralph'}: ")
