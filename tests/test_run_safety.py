"""Black-box tests of issue 4 (run safety) through the real ralph.py: kill -9 and resume, the run
lock under a real race, corrupt state recovery, a full or read-only .ralph/, `ralph status`
while a run is in progress. The dry run and ralph.yml are in test_dry_run_config.py."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import RALPH, STUBS, install_stub, wait_for
from loophelp import Running, alive

SCRIPT = """\
#!/bin/sh
# A stub agent's action: claim a task, maybe hang in session HANG_AT, then finish the task.
n=$(cat "$COUNT" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$COUNT"
id=$("$RALPH_TASK_SCRIPT" claim | sed -n 's/^id: //p')
[ -z "$id" ] && exit 0
if [ "$n" = "${HANG_AT:-0}" ]; then
    echo "$id" > "$MARK"
    while [ ! -f "$RELEASE" ]; do sleep 0.02; done
fi
"$RALPH_TASK_SCRIPT" done "$id" --result '{"commit":"abc"}' > /dev/null
"""


def sync(run_task, *slugs: str) -> None:
    lines = "".join(json.dumps({"id": s, "t": f"Task {s}"}) + "\n" for s in slugs)
    assert run_task("plan-sync", input=lines).returncode == 0


def export(run_task) -> list[dict]:
    out = run_task("_export-json").stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def runs(repo: Path) -> list[Path]:
    return sorted((repo / ".ralph" / "runs").iterdir())


def state_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "state.json").read_text())


def events_of(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


@pytest.fixture
def action(tmp_path: Path, bin_dir: Path) -> dict[str, str]:
    """tests/stubs/claude running SCRIPT; returns the env that drives it."""
    install_stub(bin_dir)
    script = tmp_path / "action.sh"
    script.write_text(SCRIPT)
    script.chmod(0o755)
    return {"STUB_ACTION": str(script), "COUNT": str(tmp_path / "count"),
            "MARK": str(tmp_path / "claimed"), "RELEASE": str(tmp_path / "release")}


def test_kill_9_mid_session_then_build_again_takes_over_fails_the_task_and_resumes(
        git_repo, base_env, run_task, run_ralph, action, tmp_path):
    sync(run_task, "t1", "t2", "t3")
    env = {**base_env, **action, "HANG_AT": "2"}
    first = Running(["build", "-n", "5"], cwd=git_repo, env=env)
    try:
        wait_for(lambda: Path(action["MARK"]).exists(), timeout=20)
        hung_task = Path(action["MARK"]).read_text().strip()
        run_dir, = runs(git_repo)
        wait_for(lambda: (state_of(run_dir).get("active") or {}).get("pid"))
        agent_pid = state_of(run_dir)["active"]["pid"]
        os.kill(first.proc.pid, signal.SIGKILL)              # ralph.py alone, not its agent's group
        first.proc.wait(10)
    finally:
        first.kill()
    before = state_of(run_dir)
    assert before["endedAt"] is None and before["iteration"] == 1
    assert before["sessionsStarted"] == 2

    second = run_ralph("build", "-n", "1", env={**action, "HANG_AT": "0"})   # -n disagrees: 5 wins

    assert second.returncode == 0, second.stderr
    run_id = run_dir.name
    assert runs(git_repo) == [run_dir]                          # same run, same directory
    assert f"took over stale run lock {git_repo / '.ralph' / 'run.lock'}" in second.stderr
    assert f"Resuming run {run_id} (interrupted at iteration 1, 2 sessions started)" in second.stderr
    assert "max_iterations: this run keeps 5 (asked for 1 now)" in second.stderr
    assert "LOOP 1 " not in second.stdout and "LOOP 2 " in second.stdout   # the count goes on
    assert second.stdout.startswith("\u2501")                   # nothing before the banner
    assert not alive(agent_pid)                                 # the dead run's agent is gone
    reason = f"ralph.py exited during the session (run {run_id})"
    tasks = {t["id"]: t for t in export(run_task)}
    assert sorted(tasks) == ["t1", "t2", "t3"]                  # nothing lost or duplicated
    assert all(t["status"] == "done" for t in tasks.values())
    assert tasks[hung_task]["retry_count"] == 1 and tasks[hung_task]["fail_reason"] == reason
    after = state_of(run_dir)
    assert after["exitCode"] == 0 and after["iteration"] >= 2 and after["sessionsStarted"] >= 3
    assert {"task": hung_task, "reason": reason} in [
        {"task": e["task"], "reason": e.get("reason")} for e in after["failed"]]
    kinds = [e.get("kind") for e in events_of(run_dir) if e["event"] == "log"]
    assert "lock_takeover" in kinds and "resume" in kinds
    assert not (git_repo / ".ralph" / "run.lock").exists()
    with sqlite3.connect(git_repo / ".ralph" / "tasks.db") as db:
        assert db.execute("SELECT count(*) FROM agents WHERE status = 'active'").fetchone()[0] == 0


def test_two_builds_started_together_exactly_one_runs_in_20_trials(
        git_repo, base_env, run_task, bin_dir, tmp_path):
    install_stub(bin_dir, stub="claude_signals")
    sync(run_task, "only")
    for trial in range(20):
        release = tmp_path / f"release-{trial}"
        env = {**base_env, "STUB_RELEASE": str(release)}
        pair = [Running(["build", "-n", "1"], cwd=git_repo, env=env) for _ in range(2)]
        try:
            loser = wait_for(lambda: next((r for r in pair if r.proc.poll() is not None), None),
                             timeout=20)
            assert loser.wait() == 3, (trial, loser.stdout, loser.stderr)
            line, = loser.stderr.splitlines()
            assert line.startswith(f"Error: run lock {git_repo / '.ralph' / 'run.lock'} is held "
                                   "by pid "), line
            assert " on host " in line and "(run 2" in line and ", started 20" in line
            assert loser.stdout == ""
            release.touch()
            winner, = [r for r in pair if r is not loser]
            assert winner.wait() == 0, (trial, winner.stderr)
        finally:
            for r in pair:
                r.kill()
    with sqlite3.connect(git_repo / ".ralph" / "tasks.db") as db:      # losers registered nothing
        assert db.execute("SELECT count(*) FROM agents").fetchone()[0] == 20
    assert len(runs(git_repo)) == 20


CORRUPT = {
    "truncated": b'{"version": 1, "runId": "x", "mode": "bu',
    "empty": b"",
    "binary": bytes(range(256)),
    "schema-invalid": b'{"version": 1, "mode": "build", "iteration": -3}',
}


@pytest.mark.parametrize("content", CORRUPT.values(), ids=CORRUPT.keys())
def test_a_corrupt_state_file_is_backed_up_and_the_run_goes_on(git_repo, run_ralph, run_task,
                                                                content):
    sync(run_task, "t1")
    run_task("delete", "t1")
    run_dir = git_repo / ".ralph" / "runs" / "20260101T000000Z-abcdef"
    run_dir.mkdir(parents=True)
    (run_dir / "state.json").write_bytes(content)

    result = run_ralph("build")

    assert result.returncode == 0, result.stderr
    assert "No tasks available. Exiting loop." in result.stdout
    backups = list(run_dir.glob("state.corrupt.*.json"))
    assert len(backups) == 1 and backups[0].read_bytes() == content
    assert f"run state {run_dir / 'state.json'} was unreadable (" in result.stderr
    assert f"moved it to {backups[0].name} and started a fresh state" in result.stderr
    state = state_of(run_dir)
    assert state["runId"] == run_dir.name and state["exitCode"] == 0
    assert "state_recovery" in [e.get("kind") for e in events_of(run_dir)]


def _mount_tmpfs(path: Path, options: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    path.mkdir(exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")


@pytest.mark.parametrize("options, reason", [
    ("size=16k", "No space left on device"),
    ("size=64k,ro", "Read-only file system"),
], ids=["full-disk", "read-only"])
def test_a_full_or_read_only_ralph_dir_gives_one_error_line_and_exit_8(
        git_repo, run_ralph, base_env, tmp_path, options, reason):
    ralph_dir = git_repo / ".ralph"
    _mount_tmpfs(ralph_dir, options)
    try:
        if "ro" not in options.split(","):
            (ralph_dir / "runs").mkdir()
            fd = os.open(ralph_dir / "filler", os.O_WRONLY | os.O_CREAT)
            try:                                                            # fill it up
                while os.write(fd, b"x" * 1024):
                    pass
            except OSError:
                pass
            finally:
                os.close(fd)
        result = run_ralph("build", env={"RALPH_TASKS_DB": str(tmp_path / "tasks.db")})
    finally:
        subprocess.run(["umount", "-l", str(ralph_dir)], check=False)
    assert result.returncode == 8, (result.stdout, result.stderr)
    line, = result.stderr.splitlines()
    assert line.startswith("Error: cannot ") and reason in line
    assert "Traceback" not in result.stdout + result.stderr


def test_a_file_where_ralph_runs_should_be_gives_one_error_line_and_exit_8(git_repo, run_ralph):
    (git_repo / ".ralph").mkdir()
    (git_repo / ".ralph" / "runs").write_text("not a directory\n")
    result = run_ralph("build")
    assert result.returncode == 8, result.stderr
    line, = result.stderr.splitlines()
    assert line.startswith("Error: cannot ") and "move it away" in line
    assert not (git_repo / ".ralph" / "run.lock").exists()         # released on the way out


def test_ralph_status_shows_the_run_while_it_runs_and_after_it_ended(
        git_repo, base_env, run_task, bin_dir, tmp_path):
    install_stub(bin_dir, stub="claude_signals")
    sync(run_task, "t1")
    release, pidfile = tmp_path / "release", tmp_path / "agent.pid"
    env = {**base_env, "STUB_RELEASE": str(release), "STUB_PIDFILE": str(pidfile)}
    sub = git_repo / "specs"                                    # another shell, a subdirectory
    status = [sys.executable, str(RALPH), "status"]
    run = Running(["build", "-n", "1"], cwd=git_repo, env=env)
    try:
        wait_for(pidfile.exists, timeout=20)
        live = json.loads(subprocess.run([*status, "--json"], cwd=sub, env=base_env,
                                         capture_output=True, text=True, check=True).stdout)
        text = subprocess.run(status, cwd=sub, env=base_env, capture_output=True, text=True,
                              check=True).stdout
        release.touch()
        assert run.wait() == 0, run.stderr
    finally:
        run.kill()
    assert live["alive"] is True and live["pid"] == run.proc.pid and live["mode"] == "build"
    assert live["runId"] == runs(git_repo)[0].name and live["iteration"] == 0
    assert live["active"]["n"] == 1 and live["active"]["pid"] == int(pidfile.read_text())
    assert f"Run:        {live['runId']} (build)" in text
    assert "Status:     running, held by pid" in text and "Current:    (agent picks)" in text
    after = json.loads(subprocess.run([*status, "--json"], cwd=git_repo, env=base_env,
                                      capture_output=True, text=True, check=True).stdout)
    assert after["alive"] is False and after["exitCode"] == 0 and after["active"] is None
    assert after["exitReason"] == "Reached max iterations: 1"
    assert after["lastOutcomes"][0]["n"] == 1 and after["lastOutcomes"][0]["exit_code"] == 0
    assert after["lastOutcomes"][0]["outcome"] == "no task"
