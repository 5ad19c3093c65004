"""Black-box tests of run safety through the real ralph.py: kill -9 and resume, the run
lock under a real race, corrupt state recovery, a full or read-only .ralph/, `ralph status`
while a run is in progress. The dry run and ralph.yml are in test_dry_run_config.py."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import RALPH, install_stub, wait_for
from loophelp import Running, alive, killed_when

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


def _group_members(pgid: int) -> list[int]:
    import psutil
    members = []
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                members.append(proc.pid)
        except (ProcessLookupError, PermissionError):
            pass
    return members


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


def agent_pid_of(run_dir: Path) -> int | None:
    """The active session's agent pid: in the pid file the state names (written ahead), where
    the agent links it before exec; the state does not save it."""
    pidfile = (state_of(run_dir).get("active") or {}).get("pidfile")
    try:
        fields = Path(pidfile).read_text().split() if pidfile else []
    except FileNotFoundError:
        return None
    return int(fields[0]) if fields and fields[0].isdigit() else None


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


def build_until_a_session_hangs(git_repo, base_env, run_task, action) -> tuple[Running, str]:
    """`ralph build` over t1 and t2, its first session hung holding the task it claimed
    (released by touching action["RELEASE"]): the run and that task."""
    sync(run_task, "t1", "t2")
    first = Running(["build"], cwd=git_repo, env={**base_env, **action, "HANG_AT": "1"})
    try:
        mark = Path(action["MARK"])
        return first, wait_for(lambda: mark.exists() and mark.read_text().strip(), timeout=20)
    except BaseException:
        first.kill()
        raise


def test_kill_9_mid_session_then_build_again_takes_over_fails_the_task_and_resumes(
        git_repo, base_env, run_task, run_ralph, action, tmp_path):
    sync(run_task, "t1", "t2", "t3")
    env = {**base_env, **action, "HANG_AT": "2"}
    hook = "http://127.0.0.1:9/hooks/"      # nothing listens: a webhook whose path is a token
    first = Running(["build", "-n", "5", "--notify", hook + "SECRET-ONE"], cwd=git_repo, env=env)
    try:
        mark = Path(action["MARK"])         # the shell creates it before it writes the id
        hung_task = wait_for(lambda: mark.exists() and mark.read_text().strip(), timeout=20)
        run_dir, = runs(git_repo)
        agent_pid = wait_for(lambda: agent_pid_of(run_dir))
        os.kill(first.proc.pid, signal.SIGKILL)              # ralph.py alone, not its agent's group
        first.proc.wait(10)
    finally:
        first.kill()
    before = state_of(run_dir)
    assert before["endedAt"] is None and before["iteration"] == 1
    assert before["sessionsStarted"] == 2

    try:
        second = run_ralph("build", "-n", "1", "--notify", hook + "SECRET-TWO",  # both disagree
                           env={**action, "HANG_AT": "0"})
    finally:
        Path(action["RELEASE"]).touch()                     # never leave the hung action behind

    assert second.returncode == 0, second.stderr
    run_id = run_dir.name
    assert runs(git_repo) == [run_dir]                          # same run, same directory
    assert f"took over stale run lock {git_repo / '.ralph' / 'run.lock'}" in second.stderr
    assert f"Resuming run {run_id} (interrupted at iteration 1, 2 sessions started)" in second.stderr
    assert "max_iterations: this run keeps 5 (asked for 1 now)" in second.stderr
    shown = "webhook http://127.0.0.1:9/..."                  # as the notify_failed lines
    assert f"notify: this run keeps '{shown}' (asked for '{shown}' now)" in second.stderr
    assert "SECRET" not in second.stderr + (run_dir / "events.jsonl").read_text()
    assert "LOOP 1 " not in second.stdout and "LOOP 2 " in second.stdout   # the count goes on
    assert second.stdout.startswith("\u2501")                   # nothing before the banner
    assert not alive(agent_pid)                                 # the dead run's agent is gone
    assert not _group_members(agent_pid)                        # and its children too
    assert f"killed what was left of the dead run's agent (process group {agent_pid})" \
        in second.stderr
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
    # the report tells the killed session's task too: two attempts, the first one's reason
    report = json.loads(run_ralph("report", "--json").stdout)
    [hung_row] = [t for t in report["tasks"] if t["id"] == hung_task]
    assert (hung_row["attempts"], hung_row["outcome"]) == (2, "done")
    assert reason in hung_row["fail_reasons"]
    [killed] = [x for x in report["sessions"] if x["n"] == 2]
    assert (killed["outcome"], killed["tasks"]) == ("interrupted", [hung_task])
    assert not (git_repo / ".ralph" / "run.lock").exists()
    with sqlite3.connect(git_repo / ".ralph" / "tasks.db") as db:
        assert db.execute("SELECT count(*) FROM agents WHERE status = 'active'").fetchone()[0] == 0



@pytest.mark.parametrize("resume", [False, True], ids=["new run", "--resume"])
def test_a_task_left_active_by_a_run_ended_with_sigterm_is_released_by_the_next_run(
        git_repo, base_env, run_task, run_ralph, action, tmp_path, resume):
    """docs/contract/ralph-cli.md s.16: a run ended by SIGTERM (or Ctrl+C) runs no crash-safety
    step, so its agent's claimed task stays active, claimable again only once its lease runs out.
    The next run (a new one, or the stopped one resumed) gives it back to open first, with a reason
    naming the run, and takes it. The person stopped the run, not the task's session: no failure is
    counted (`_release`, retry_count unchanged), so --max-attempts never holds a task for the
    times its runs were stopped."""
    first, hung = build_until_a_session_hangs(git_repo, base_env, run_task, action)
    try:
        os.kill(first.proc.pid, signal.SIGTERM)
        assert first.proc.wait(30) == 130
    finally:
        first.kill()
        Path(action["RELEASE"]).touch()
    run_dir, = runs(git_repo)
    assert {t["id"]: t["status"] for t in export(run_task)}[hung] == "active"
    agent = state_of(run_dir)["extra"]["agentId"]          # a resumed run takes a new one
    second = run_ralph("build", *(["--resume"] if resume else []),
                       env={**action, "HANG_AT": "0"})
    assert second.returncode == 0, second.stderr
    assert "All tasks complete. Exiting loop." in second.stdout
    reason = f"ralph.py was interrupted during the session (run {run_dir.name})"
    assert f"released task {hung} of the interrupted run's agent {agent}: {reason}" in \
        second.stderr
    tasks = {t["id"]: t for t in export(run_task)}
    assert all(t["status"] == "done" for t in tasks.values())
    assert tasks[hung]["retry_count"] == 0 and tasks[hung]["fail_reason"] == reason
    if not resume:
        new_run, = [r for r in runs(git_repo) if r != run_dir]
        assert any(e.get("kind") == "interrupted_run" for e in events_of(new_run))


def test_a_plan_run_after_a_build_killed_with_9_stops_its_agent_and_fails_its_task(
        git_repo, base_env, run_task, run_ralph, action):
    """A run of the other mode takes the dead build's lock over: it cannot resume that run,
    but the dead run's agent must not work on during the plan session, nor its task stay
    claimed until the build run is resumed. Both are settled first, as a resume would."""
    sync(run_task, "t1")
    mark = Path(action["MARK"])

    def agent_pid():                            # its task claimed, its pid in its pid file
        dirs = runs(git_repo) if mark.exists() and mark.read_text().strip() else []
        return dirs and agent_pid_of(dirs[0])
    _, agent_pid = killed_when(["build", "-n", "3"], cwd=git_repo, env={
        **base_env, **action, "HANG_AT": "1"}, ready=agent_pid)   # its agent hangs on
    run_dir, = runs(git_repo)
    try:
        plan = run_ralph("plan", "-n", "1", env={**action, "HANG_AT": "0"})
    finally:
        Path(action["RELEASE"]).touch()
    assert plan.returncode == 0, plan.stderr
    agent = state_of(run_dir)["active"]["agent"]
    reason = f"ralph.py exited during the session (run {run_dir.name})"
    assert f"killed what was left of the dead run's agent (process group {agent_pid})" \
        in plan.stderr
    assert f"failed task t1 of the dead run's agent {agent}: {reason}" in plan.stderr
    assert not alive(agent_pid) and not _group_members(agent_pid)
    [t1] = export(run_task)
    assert (t1["retry_count"], t1["fail_reason"]) == (1, reason)
    resumed = run_ralph("build", env={**action, "HANG_AT": "0"})   # the build run, resumed later
    assert resumed.returncode == 0, resumed.stderr
    assert f"Resuming run {run_dir.name}" in resumed.stderr
    assert "failed task" not in resumed.stderr and "Error" not in resumed.stderr
    assert [t["status"] for t in export(run_task)] == ["done"]


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


def test_a_closed_stdout_ends_the_run_as_ctrl_c_does_and_a_plain_rerun_starts_a_new_run(
        git_repo, base_env, run_task, run_ralph, action, tmp_path):
    """`ralph build -n 3 | head -1`: the reader takes the banner's first line and exits. The
    run's next write finds the pipe closed: one line on stderr, exit 130, the run ended in its
    state and its lock released, so the next plain run is a new one, not a resume."""
    sync(run_task, "t1", "t2", "t3")
    env = {**base_env, **action, "HANG_AT": "1"}
    err = tmp_path / "stderr"
    with err.open("wb") as err_file:
        proc = subprocess.Popen([sys.executable, str(RALPH), "build", "-n", "3"], cwd=git_repo,
                                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=err_file)
    try:
        assert proc.stdout.readline().decode() == "\u2501" * 40 + "\n"    # head -1
        proc.stdout.close()                                              # and the reader is gone
        wait_for(lambda: Path(action["MARK"]).exists(), timeout=20)
        Path(action["RELEASE"]).touch()                                  # the session ends
        assert proc.wait(30) == 130
    finally:
        Path(action["RELEASE"]).touch()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert err.read_text().splitlines() == [
        "Stopped: ralph's stdout was closed (its reader exited); ending the run as Ctrl+C does "
        "(exit 130)"]
    assert not (git_repo / ".ralph" / "run.lock").exists()
    first, = runs(git_repo)
    assert (state_of(first)["exitCode"], state_of(first)["endedAt"] is not None) == (130, True)

    again = run_ralph("build", "-n", "3", env={**action, "HANG_AT": "0"})

    assert again.returncode == 0, again.stderr
    assert "Resuming" not in again.stderr
    assert len(runs(git_repo)) == 2
    assert all(t["status"] == "done" for t in export(run_task))


@pytest.mark.parametrize("how", ["SIGTERM", "kill -9"])
def test_the_task_of_a_dead_run_whose_state_is_corrupt_is_given_back_by_the_next_run(
        git_repo, base_env, run_task, run_ralph, action, how):
    """The run that left a task active (stopped by SIGTERM: no crash-safety step; or killed)
    also left a state.json that cannot be read. Its events still name the agent it registered:
    the next run gives that agent's task back at once (released after a stop, failed after a
    crash), instead of leaving it active until its lease runs out."""
    first, hung = build_until_a_session_hangs(git_repo, base_env, run_task, action)
    try:
        run_dir, = runs(git_repo)
        wait_for(lambda: agent_pid_of(run_dir))
        os.kill(first.proc.pid, signal.SIGTERM if how == "SIGTERM" else signal.SIGKILL)
        first.proc.wait(30)
    finally:
        first.kill()
        if how == "SIGTERM":
            Path(action["RELEASE"]).touch()
    agent = state_of(run_dir)["extra"]["agentId"]
    assert {t["id"]: t["status"] for t in export(run_task)}[hung] == "active"
    (run_dir / "state.json").write_text("{ not json")

    try:
        second = run_ralph("build", env={**action, "HANG_AT": "0"})
    finally:
        Path(action["RELEASE"]).touch()

    assert second.returncode == 0, second.stderr
    assert "All tasks complete. Exiting loop." in second.stdout
    stopped = how == "SIGTERM"
    verb = "released" if stopped else "failed"
    reason = (f"ralph.py {'was interrupted' if stopped else 'exited'} during the session "
              f"(run {run_dir.name})")
    whose = "interrupted" if stopped else "dead"
    assert f"{verb} task {hung} of the {whose} run's agent {agent}: {reason}" in second.stderr
    tasks = {t["id"]: t for t in export(run_task)}
    assert all(t["status"] == "done" for t in tasks.values())
    assert (tasks[hung]["retry_count"], tasks[hung]["fail_reason"]) == (0 if stopped else 1,
                                                                         reason)


def test_a_run_that_ends_after_its_third_session_counts_three_iterations(
        git_repo, run_task, run_ralph, action):
    """`All tasks complete` ends the run right after its last session, before a LOOP
    separator: that session's iteration is counted all the same (status, progress.md)."""
    sync(run_task, "t1", "t2", "t3")
    proc = run_ralph("build", "-n", "3", env=action)
    assert proc.returncode == 0, proc.stderr
    assert "All tasks complete. Exiting loop." in proc.stdout
    run_dir, = runs(git_repo)
    assert (state_of(run_dir)["iteration"], state_of(run_dir)["sessionsStarted"]) == (3, 3)
    status = run_ralph("status").stdout
    assert "Iteration:  3 of 3, sessions started: 3\n" in status


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



def test_an_agent_that_deletes_ralph_dir_stops_the_run_with_exit_8_not_all_tasks_complete(
        git_repo, run_ralph, run_task, action, tmp_path):
    """`git clean -fdx` by the agent takes .ralph/ and the task database with it; the store
    would answer from a new empty one and the loop say "All tasks complete"."""
    sync(run_task, "t1", "t2")
    script = Path(action["STUB_ACTION"])
    script.write_text('#!/bin/sh\n"$RALPH_TASK_SCRIPT" claim > /dev/null\ngit clean -fdxq\n')
    result = run_ralph("build", "-n", "3", env=action)
    assert result.returncode == 8, (result.stdout, result.stderr)
    assert "All tasks complete" not in result.stdout and "LOOP 1" not in result.stdout
    line = result.stderr.strip().splitlines()[-1]
    assert line == (f"Error: {git_repo / '.ralph'} was deleted during session 1 (its run lock is "
                    "gone; did the agent run `git clean -x`?): the run's record and a task "
                    "database kept there went with it, stopping")

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


def test_resume_flag_continues_a_run_stopped_by_ctrl_c_and_a_plain_run_does_not(
        git_repo, base_env, run_task, run_ralph, bin_dir, tmp_path):
    install_stub(bin_dir, stub="claude_signals")
    sync(run_task, "t1")
    pidfile = tmp_path / "agent.pid"
    first = Running(["build", "-n", "3"], cwd=git_repo, env={**base_env,
                                                             "STUB_PIDFILE": str(pidfile)})
    try:
        wait_for(pidfile.exists, timeout=20)
        os.kill(first.proc.pid, signal.SIGINT)
        assert first.wait() == 130
    finally:
        first.kill()
    run_dir, = runs(git_repo)
    assert state_of(run_dir)["exitCode"] == 130
    preview = run_ralph("build", "--resume", "--dry-run")
    assert (f"Run: would resume run {run_dir.name} (stopped by a signal at iteration 0, "
            "1 sessions started)") in preview.stdout

    nothing = run_ralph("build", "--resume", "-n", "1", env={"STUB_EXIT_AT_ONCE": "1"})
    assert nothing.returncode == 0, nothing.stderr
    assert (f"Resuming run {run_dir.name} (stopped by a signal at iteration 0, "
            "1 sessions started)") in nothing.stderr
    assert "max_iterations: this run keeps 3 (asked for 1 now)" in nothing.stderr
    assert "Max:    3 iterations" in nothing.stdout
    assert runs(git_repo) == [run_dir] and state_of(run_dir)["sessionsStarted"] == 4

    plain = run_ralph("build", "-n", "1", env={"STUB_EXIT_AT_ONCE": "1"})
    assert plain.returncode == 0 and "Resuming" not in plain.stderr
    assert len(runs(git_repo)) == 2


def test_resume_flag_with_nothing_to_resume_starts_a_new_run_and_says_so(git_repo, run_ralph):
    result = run_ralph("build", "--resume", env={"RALPH_TASK_CMD": "true"})   # peek: empty
    run_dir, = runs(git_repo)
    assert result.returncode == 0 and "No tasks available. Exiting loop." in result.stdout
    assert f"Nothing to resume: starting run {run_dir.name}\n" == result.stderr


def test_events_and_progress_record_each_session_with_its_task_cost_and_turns(
        git_repo, run_ralph, run_task, action, tmp_path):
    sync(run_task, "t1")
    stream = tmp_path / "stream"
    stream.write_text(json.dumps({"type": "result", "subtype": "success", "result": "ok",
                                  "total_cost_usd": 0.25, "num_turns": 3}) + "\n")
    result = run_ralph("build", env={**action, "STUB_STREAM": str(stream)})
    assert result.returncode == 0, result.stderr
    run_dir, = runs(git_repo)
    events = events_of(run_dir)
    assert [e["event"] for e in events] == ["run_start", "session_start", "session_end", "run_end"]
    start, end = events[1], events[2]
    assert start["n"] == 1 and start["task"] is None and start["log"].endswith("-001.jsonl")
    assert {k: end[k] for k in ("n", "task", "exit_code", "cost_usd", "turns", "outcome")} == {
        "n": 1, "task": "t1", "exit_code": 0, "cost_usd": 0.25, "turns": 3,
        "outcome": "completed"}
    assert events[3]["exit_code"] == 0
    assert events[3]["reason"] == "All tasks complete. Exiting loop."
    progress = (git_repo / ".ralph" / "progress.md").read_text()
    assert f"# ralph run {run_dir.name}\n" in progress and "- Completed: 1\n" in progress
    assert "| t1 | completed |" in progress


def test_a_run_started_in_a_subdirectory_shares_the_lock_of_the_checkout(
        git_repo, base_env, run_task, run_ralph, bin_dir, tmp_path):
    install_stub(bin_dir, stub="claude_signals")
    sync(run_task, "t1")
    release, pidfile = tmp_path / "release", tmp_path / "agent.pid"
    env = {**base_env, "STUB_RELEASE": str(release), "STUB_PIDFILE": str(pidfile)}
    sub = git_repo / "pkg"
    (sub / "specs").mkdir(parents=True)
    (sub / "specs" / "a.md").write_text("a\n")
    run = Running(["build", "-n", "1"], cwd=git_repo, env=env)
    try:
        wait_for(pidfile.exists, timeout=20)
        second = run_ralph("plan", cwd=sub)
        release.touch()
        assert run.wait() == 0, run.stderr
    finally:
        run.kill()
    assert second.returncode == 3 and second.stdout == ""
    assert second.stderr.startswith(f"Error: run lock {git_repo / '.ralph' / 'run.lock'} is held")
    assert not (sub / ".ralph").exists()


def test_kill_9_of_a_plan_run_is_resumed_by_the_next_plan_run(
        git_repo, base_env, run_ralph, bin_dir, tmp_path):
    install_stub(bin_dir, stub="claude_signals")
    pidfile = tmp_path / "agent.pid"
    first = Running(["plan", "-n", "2"], cwd=git_repo,
                    env={**base_env, "STUB_PIDFILE": str(pidfile)})
    try:
        wait_for(pidfile.exists, timeout=20)
        os.kill(first.proc.pid, signal.SIGKILL)
        first.proc.wait(10)
    finally:
        first.kill()
    run_dir, = runs(git_repo)
    build = run_ralph("build", env={"RALPH_TASK_CMD": "true"})       # a build run leaves it alone
    assert build.returncode == 0 and "Resuming" not in build.stderr
    again = run_ralph("plan", env={"STUB_EXIT_AT_ONCE": "1"})
    assert again.returncode == 0, again.stderr
    assert f"Resuming run {run_dir.name} (interrupted at iteration 0, 1 sessions started)" \
        in again.stderr
    assert "Max:    2 iterations" in again.stdout and "Reached max iterations: 2" in again.stdout
    assert state_of(run_dir)["sessionsStarted"] == 3 and state_of(run_dir)["iteration"] == 2


def test_ralph_ctl_and_status_use_the_checkouts_ralph_dir_from_a_subdirectory(git_repo,
                                                                              run_ralph):
    sub = git_repo / "pkg" / "deep"
    sub.mkdir(parents=True)
    assert not (git_repo / ".ralph").exists()
    assert run_ralph("ctl", "pause", cwd=sub).returncode == 0
    assert (git_repo / ".ralph" / "PAUSE").exists() and not (sub / ".ralph").exists()
    assert (git_repo / ".ralph" / ".gitignore").read_text() == "*\n"     # git status stays clean
    status = run_ralph("status", cwd=sub)
    assert status.returncode == 0
    assert status.stdout == f"No ralph run found in {os.path.relpath(git_repo / '.ralph', sub)}.\n"


def test_a_directory_where_the_stop_file_goes_is_exit_8_and_the_lock_is_released(
        git_repo, run_ralph, run_task, bin_dir):
    """`.ralph/STOP` made a directory: one line naming it, exit 8, and the run's end still
    releases its lock (the end's own removal of STOP must not stop it), never a traceback."""
    install_stub(bin_dir)
    run_task("create", "t1", "One")
    (git_repo / ".ralph" / "STOP").mkdir()
    proc = run_ralph("build", "-n", "1")
    assert proc.returncode == 8, proc.stderr
    assert proc.stderr.splitlines()[-1] == (
        f"Error: cannot remove {git_repo}/.ralph/STOP: Is a directory; a directory stands "
        "where a file is expected; move it away")
    assert "Traceback" not in proc.stderr
    assert not (git_repo / ".ralph" / "run.lock").exists()


@pytest.mark.parametrize("make", ["pause-directory", "ralph-dir-a-file"])
def test_ctl_resume_over_a_file_in_the_way_is_one_line_exit_8(git_repo, run_ralph, make):
    if make == "pause-directory":
        (git_repo / ".ralph" / "PAUSE").mkdir(parents=True)
        why = "Is a directory; a directory stands where a file is expected; move it away"
    else:
        (git_repo / ".ralph").write_text("")
        why = "Not a directory; a file stands where a directory is expected; move it away"
    proc = run_ralph("ctl", "resume")
    assert (proc.returncode, proc.stdout) == (8, "")
    assert proc.stderr == f"Error: cannot remove {git_repo}/.ralph/PAUSE: {why}\n"


GIT_HOLD = """\
#!/bin/sh
# git, held at the breaker's read of HEAD after a session while $HOLD_MARK exists
if [ -e "$HOLD_MARK" ] && [ "$*" = "-c core.hooksPath=/dev/null -c core.fsmonitor=false rev-parse -q --verify HEAD" ]; then
    touch "$HELD"
    while [ -e "$HOLD_MARK" ]; do sleep 0.02; done
fi
exec {git} "$@"
"""


def test_a_kill_9_after_a_session_ended_before_its_record_is_resumed_as_a_crash(
        git_repo, base_env, bin_dir, run_task, run_ralph, tmp_path):
    """The session's record is saved with the iteration counter after plan-status and the
    breakers: ralph.py killed in between (here while the breaker reads HEAD) leaves the state
    naming the session active; the next run resumes the run, settles that session as one
    ralph.py died in, and finishes the backlog."""
    import shutil
    sync(run_task, "t1", "t2")
    install_stub(bin_dir)
    (bin_dir / "git").write_text(GIT_HOLD.format(git=shutil.which("git")))
    (bin_dir / "git").chmod(0o755)
    mark, held = tmp_path / "hold", tmp_path / "held"
    action = tmp_path / "action.sh"          # claim and finish one task, then hold git
    action.write_text('#!/bin/sh\nid=$("$RALPH_TASK_SCRIPT" claim | sed -n "s/^id: //p")\n'
                      '[ -n "$id" ] && "$RALPH_TASK_SCRIPT" done "$id" >/dev/null\n'
                      f'touch "{mark}"\n')
    action.chmod(0o755)
    env = {**base_env, "STUB_ACTION": str(action), "HOLD_MARK": str(mark), "HELD": str(held)}
    try:
        killed_when(["build"], cwd=git_repo, env=env, ready=held.exists)
    finally:
        mark.unlink(missing_ok=True)
    run_dir, = runs(git_repo)
    before = state_of(run_dir)
    assert before["active"]["n"] == 1 and before["iteration"] == 0    # no record saved yet
    assert [e["outcome"] for e in events_of(run_dir) if e["event"] == "session_end"] == [
        "completed"]

    again = run_ralph("build", env={"STUB_ACTION": str(action), "HOLD_MARK": str(mark),
                                    "HELD": str(held)})
    assert again.returncode == 0, again.stderr
    assert (f"Resuming run {run_dir.name} (interrupted at iteration 0, 1 sessions started)"
            in again.stderr)
    assert "All tasks complete. Exiting loop." in again.stdout
    assert {t["id"]: t["status"] for t in export(run_task)} == {"t1": "done", "t2": "done"}
    after = state_of(run_dir)
    assert after["active"] is None and after["exitCode"] == 0 and after["sessionsStarted"] == 2
    assert not (run_dir / "session-002.pid").exists()        # it went with its record
