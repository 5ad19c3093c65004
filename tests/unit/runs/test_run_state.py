"""run_state: real files, real crashes of the writer, corrupt files, full and read-only disks."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, wait_for
from ralphpy.runs import progress
from ralphpy.runs import lock
from ralphpy.runs import state as run_state
from ralphpy.errors import EXIT_ENVIRONMENT, EnvironmentFailure


@pytest.fixture
def ralph_dir(tmp_path: Path) -> Path:
    return tmp_path / ".ralph"


def make_state(run_id: str = "20260101T000000Z-aaaaaa", mode: str = "build",
               **options) -> run_state.RunState:
    return run_state.RunState(run_id=run_id, mode=mode, max_iterations=5,
                              options={"max_cost": 10.0, **options})


def test_saved_state_loads_back_equal(ralph_dir: Path):
    state = make_state()
    state.begin_session("task-a", 123, ".ralph/logs/1.log")
    state.end_session("task-a", ok=True, exit_code=0, cost_usd=0.5)
    state.iteration = 1
    state.begin_session(None, 124, ".ralph/logs/2.log")
    run_state.save(ralph_dir, state)
    loaded = run_state.load(ralph_dir, state.run_id)
    assert loaded.recovery is None
    assert loaded.state == state
    assert loaded.state.active["n"] == 2 and loaded.state.completed[0]["cost_usd"] == 0.5


def test_state_file_has_the_documented_version_1_schema(ralph_dir: Path):
    state = make_state()
    state.begin_session("task-a", 7, "log")
    state.end_session("task-a", ok=False, reason="timeout")
    state.finish(0, "no tasks")
    run_state.save(ralph_dir, state)
    data = json.loads(run_state.state_path(ralph_dir, state.run_id).read_text())
    assert list(data) == ["version", "runId", "mode", "maxIterations", "options", "iteration",
                          "sessionsStarted", "completed", "failed", "active", "startedAt",
                          "updatedAt", "endedAt", "exitReason", "exitCode", "resumeAt", "extra"]
    assert data["version"] == 1
    assert data["failed"][0]["reason"] == "timeout" and data["failed"][0]["task"] == "task-a"
    assert (data["exitCode"], data["exitReason"], data["active"]) == (0, "no tasks", None)


def test_load_of_a_run_without_state_returns_nothing(ralph_dir: Path):
    loaded = run_state.load(ralph_dir, "no-such-run")
    assert loaded.state is None and loaded.recovery is None


def test_save_leaves_no_temp_file_behind(ralph_dir: Path):
    state = make_state()
    for _ in range(3):
        run_state.save(ralph_dir, state)
    assert os.listdir(ralph_dir / "runs" / state.run_id) == ["state.json"]


VALID = json.dumps(make_state().to_json()).encode()
CORRUPT = {
    "empty": b"",
    "truncated": VALID[: len(VALID) // 2],
    "binary": bytes(range(256)),
    "not-an-object": b"[1, 2, 3]",
    "wrong-version": VALID.replace(b'"version": 1', b'"version": 2'),
    "missing-key": VALID.replace(b'"iteration": 0,', b""),
    "wrong-type": VALID.replace(b'"iteration": 0', b'"iteration": "3"'),
    "boolean-count": VALID.replace(b'"iteration": 0', b'"iteration": true'),
    "negative-count": VALID.replace(b'"iteration": 0', b'"iteration": -1'),
    "bad-mode": VALID.replace(b'"mode": "build"', b'"mode": "walk"'),
    "bad-completed-entry": VALID.replace(b'"completed": []', b'"completed": [3]'),
    "other-run-id": VALID.replace(b"-aaaaaa", b"-bbbbbb"),
}


@pytest.mark.parametrize("content", CORRUPT.values(), ids=CORRUPT.keys())
def test_a_corrupt_state_file_is_moved_aside_and_reported(ralph_dir: Path, content: bytes):
    run_id = "20260101T000000Z-aaaaaa"
    path = run_state.state_path(ralph_dir, run_id)
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    loaded = run_state.load(ralph_dir, run_id)
    assert loaded.state is None
    assert not path.exists()
    assert loaded.backup.parent == path.parent
    assert loaded.backup.name.startswith("state.corrupt.") and loaded.backup.suffix == ".json"
    assert loaded.backup.read_bytes() == content
    assert loaded.recovery.startswith(f"run state {path} was unreadable (")
    assert loaded.recovery.endswith(f"moved it to {loaded.backup.name} and started a fresh state")


def test_two_recoveries_in_the_same_second_keep_both_backups(ralph_dir: Path):
    path = run_state.state_path(ralph_dir, "r")
    path.parent.mkdir(parents=True)
    for content in (b"one", b"two"):
        path.write_bytes(content)
        run_state.load(ralph_dir, "r")
    backups = sorted(p.read_bytes() for p in path.parent.glob("state.corrupt.*.json"))
    assert backups == [b"one", b"two"]


def test_a_writer_killed_mid_save_leaves_the_previous_state_intact(ralph_dir: Path):
    # The child saves in a tight loop and is killed at a random point: state.json must always
    # parse, whatever moment the kill hit (temp file + fsync + rename).
    child = r"""
import sys
from pathlib import Path
from ralphpy.runs import state as run_state
state = run_state.RunState(run_id="r", mode="build", max_iterations=0, options={"pad": "x" * 50000})
print("ready", flush=True)
while True:
    state.iteration += 1
    run_state.save(Path(sys.argv[1]), state)
"""
    for target in (1, 7, 23, 60, 150):
        proc = subprocess.Popen([sys.executable, "-c", child, str(ralph_dir)],
                                stdout=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONPATH": str(ROOT / "lib")})
        try:
            proc.stdout.readline()
            wait_for(lambda: (run_state.read(ralph_dir, "r") or make_state()).iteration >= target)
        finally:
            proc.kill()
            proc.wait(timeout=10)
        loaded = run_state.load(ralph_dir, "r")
        assert loaded.recovery is None and loaded.state.iteration >= 1


def test_find_resumable_picks_the_most_recent_unfinished_run_of_the_mode(ralph_dir: Path):
    finished = make_state("run-finished")
    finished.finish(0, "done")
    older, newer, plan = make_state("run-older"), make_state("run-newer"), make_state(
        "run-plan", mode="plan")
    for state in (older, newer, finished, plan):
        run_state.save(ralph_dir, state)
    os.utime(run_state.state_path(ralph_dir, "run-older"), (1, 1))
    assert run_state.find_resumable(ralph_dir, "build") == "run-newer"
    assert run_state.find_resumable(ralph_dir, "plan") == "run-plan"


def test_find_resumable_returns_nothing_when_every_run_ended(ralph_dir: Path):
    assert run_state.find_resumable(ralph_dir, "build") is None
    state = make_state()
    state.finish(0, "done")
    run_state.save(ralph_dir, state)
    assert run_state.find_resumable(ralph_dir, "build") is None


def test_find_resumable_offers_a_run_whose_state_is_corrupt(ralph_dir: Path):
    path = run_state.state_path(ralph_dir, "run-broken")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x00garbage")
    assert run_state.find_resumable(ralph_dir, "build") == "run-broken"
    assert path.read_bytes() == b"\x00garbage"     # finding is read-only


def test_resumed_run_keeps_its_persisted_options_and_lists_the_mismatches():
    state = make_state(model="opus")
    mismatches = run_state.merge_options(
        state, 9, {"max_cost": 20.0, "model": "opus", "freeze_scope": True, "agent": None})
    assert state.max_iterations == 5 and state.options["max_cost"] == 10.0
    assert state.options["freeze_scope"] is True
    assert mismatches == ["max_iterations: this run keeps 5 (asked for 9 now)",
                          "max_cost: this run keeps 10.0 (asked for 20.0 now)"]


def test_a_list_setting_given_again_on_resume_is_no_mismatch():
    """state.json holds a list setting (protect:, agents:) as a list; the settings, as a tuple."""
    state = make_state()
    assert run_state.merge_options(state, None, {"agents": ("claude", "codex")}) == []
    assert run_state.merge_options(state, None, {"agents": ("claude", "codex")}) == []
    assert run_state.merge_options(state, None, {"agents": ("claude",)}) == [
        "agents: this run keeps ['claude', 'codex'] (asked for ['claude'] now)"]


def test_flags_not_given_on_resume_are_not_mismatches():
    state = make_state()
    assert run_state.merge_options(state, None, {"max_cost": None}) == []


def test_new_run_ids_are_unique_and_sort_by_start_time():
    ids = {run_state.new_run_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) == len("20261122T004512Z-3f9a1c") and i[8] == "T" for i in ids)


def _write_blocker(ralph_dir: Path, how: str) -> None:
    ralph_dir.mkdir()
    if how == "runs-is-a-file":
        (ralph_dir / "runs").write_text("")
    else:
        ralph_dir.chmod(0o500)


BLOCKERS = ["runs-is-a-file"] + (["read-only-dir"] if os.geteuid() != 0 else [])


@pytest.mark.parametrize("how", BLOCKERS, ids=BLOCKERS)
def test_an_unwritable_ralph_dir_gives_one_environment_error(ralph_dir: Path, how: str):
    # As root chmod does not stop writes, so root runs only the file-in-the-way case.
    _write_blocker(ralph_dir, how)
    try:
        with pytest.raises(EnvironmentFailure) as err:
            run_state.save(ralph_dir, make_state())
    finally:
        ralph_dir.chmod(0o700)
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"cannot create directory {ralph_dir / 'runs'}")
    assert err.value.exit_code == EXIT_ENVIRONMENT == 8


def test_a_full_disk_gives_one_environment_error_and_keeps_the_old_state(ralph_dir: Path):
    # A real child with a file-size limit: its writes fail like on a full disk (EFBIG).
    state = make_state()
    run_state.save(ralph_dir, state)
    before = run_state.state_path(ralph_dir, state.run_id).read_bytes()
    child = r"""
import resource, signal, sys
from pathlib import Path
from ralphpy.runs import state as run_state
from ralphpy.errors import RalphError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))
state = run_state.load(Path(sys.argv[1]), sys.argv[2]).state
state.options["pad"] = "x" * 1000
try:
    run_state.save(Path(sys.argv[1]), state)
except RalphError as err:
    print(err, file=sys.stderr)
    sys.exit(err.exit_code)
"""
    proc = subprocess.run([sys.executable, "-c", child, str(ralph_dir), state.run_id],
                          capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "lib")})
    path = run_state.state_path(ralph_dir, state.run_id)
    assert proc.returncode == EXIT_ENVIRONMENT
    assert proc.stderr == (f"cannot write {path}: File too large; "
                           "free some disk space and run again\n")
    assert path.read_bytes() == before
    assert os.listdir(path.parent) == ["state.json"]


def test_read_is_read_only_and_tolerates_corruption(ralph_dir: Path):
    path = run_state.state_path(ralph_dir, "r")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"{")
    assert run_state.read(ralph_dir, "r") is None
    assert path.read_bytes() == b"{"


# The start-up sequence the integration plan gives for ralph.py, run by a real process that is
# then killed with SIGKILL in the middle of a session.
MINI_RUN = r"""
import sys
from pathlib import Path
from ralphpy.runs import progress
from ralphpy.runs import lock as run_lock
from ralphpy.runs import state as run_state
ralph_dir = Path(sys.argv[1])
run_id = run_state.find_resumable(ralph_dir, "build") or run_state.new_run_id()
lock = run_lock.acquire(ralph_dir / "run.lock", run_id)
loaded = run_state.load(ralph_dir, run_id)
state = loaded.state or run_state.RunState(run_id=run_id, mode="build", max_iterations=10,
                                           options={"max_cost": 5.0})
resumed = loaded.state is not None
mismatches = run_state.merge_options(state, 3, {"max_cost": 9.0}) if resumed else []
interrupted = state.take_interrupted()
progress.append_event(ralph_dir, run_id, "run_start", mode="build", resumed=resumed,
                      options=state.options)
for line in [lock.takeover_note, loaded.recovery, *mismatches]:
    if line:
        progress.append_event(ralph_dir, run_id, "log", kind="start", message=line)
while True:
    n = state.sessions_started + 1
    state.begin_session(f"t-{n}", None, f".ralph/logs/{n}.log")
    run_state.save(ralph_dir, state)
    progress.append_event(ralph_dir, run_id, "session_start", n=n, task=f"t-{n}")
    if n == int(sys.argv[2]):
        print(f"in session {n}", flush=True)
        sys.stdin.read()                        # "the agent runs" until we are killed
    state.end_session(f"t-{n}", ok=True)
    state.iteration += 1
    run_state.save(ralph_dir, state)
    progress.write_progress(ralph_dir, state)
    progress.append_event(ralph_dir, run_id, "session_end", n=n, task=f"t-{n}", outcome="completed")
"""


def test_a_run_killed_mid_session_is_resumed_with_its_counters_and_run_dir(ralph_dir: Path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib")}

    def run_until(session: int) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", MINI_RUN, str(ralph_dir), str(session)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        assert proc.stdout.readline() == f"in session {session}\n"
        return proc

    first = run_until(3)
    first.kill()
    first.wait(timeout=10)
    run_id = run_state.find_resumable(ralph_dir, "build")
    second = run_until(5)
    try:
        state = run_state.read(ralph_dir, run_id)
        # sessions 1, 2 completed; 3 was killed and is failed with a reason; 4 completed.
        assert (state.iteration, state.sessions_started, state.active["task"]) == (3, 5, "t-5")
        assert [e["task"] for e in state.completed] == ["t-1", "t-2", "t-4"]
        assert [(e["task"], e["reason"]) for e in state.failed] == [
            ("t-3", "ralph.py died during this session")]
        assert len(list((ralph_dir / "runs").iterdir())) == 1       # same run directory
        logs = [e["message"] for e in progress.read_events(ralph_dir, run_id)
                if e["event"] == "log"]
        assert logs[0].startswith(f"took over stale run lock {ralph_dir / 'run.lock'}: pid "
                                  f"{first.pid} ")
        assert logs[1:] == ["max_iterations: this run keeps 10 (asked for 3 now)",
                            "max_cost: this run keeps 5.0 (asked for 9.0 now)"]
    finally:
        second.kill()
        second.wait(timeout=10)


@pytest.mark.parametrize("task,failed", [("t-1", ["t-1"]), (None, [])],
                         ids=["task-known", "agent-picks"])
def test_take_interrupted_fails_the_dead_session_task_when_known(task, failed):
    state = make_state()
    state.begin_session(task, 99, "log", agent="agent-7")
    interrupted = state.take_interrupted()
    assert interrupted["agent"] == "agent-7" and state.active is None
    assert [e["task"] for e in state.failed] == failed
    assert make_state().take_interrupted() is None


@pytest.fixture
def small_fs(tmp_path: Path):
    """A real 64 KiB tmpfs at tmp_path/.ralph (root with CAP_SYS_ADMIN only), unmounted after."""
    mount_point = tmp_path / ".ralph"
    mount_point.mkdir()

    def mount(*options: str) -> Path:
        opts = ",".join(("size=64k", *options))
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(mount_point)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(mount_point)
        return mount_point

    mounted: list[Path] = []
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    yield mount
    for point in mounted:
        subprocess.run(["umount", "-l", str(point)], check=False)


def test_a_really_full_disk_gives_one_environment_error(small_fs):
    ralph_dir = small_fs()
    state = make_state()
    run_state.save(ralph_dir, state)
    fd = os.open(ralph_dir / "filler", os.O_WRONLY | os.O_CREAT)    # fill the file system
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    state.options["pad"] = "x" * 20000
    with pytest.raises(EnvironmentFailure) as err:
        run_state.save(ralph_dir, state)
    path = run_state.state_path(ralph_dir, state.run_id)
    assert str(err.value) == (f"cannot write {path}: No space left on device; "
                              "free some disk space and run again")
    assert run_state.load(ralph_dir, state.run_id).state.options == {"max_cost": 10.0}


def test_a_read_only_file_system_gives_one_environment_error(small_fs):
    ralph_dir = small_fs("ro")
    with pytest.raises(EnvironmentFailure) as err:
        run_state.save(ralph_dir, make_state())
    run_dir = run_state.state_path(ralph_dir, "20260101T000000Z-aaaaaa").parent
    assert str(err.value) == (f"cannot create directory {run_dir}: Read-only file system; "
                              "remount it read-write or run from a writable checkout")
    # The lock and the progress record meet the same wall with the same kind of line.
    with pytest.raises(EnvironmentFailure, match=r"^cannot create .*run\.lock: Read-only"):
        lock.acquire(ralph_dir / "run.lock", "r")
    with pytest.raises(EnvironmentFailure, match=r"^cannot write .*progress\.md: Read-only"):
        progress.write_progress(ralph_dir, make_state())
