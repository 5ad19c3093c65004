"""Black-box with real signals and real process groups (docs/contract/ralph-cli.md s.16, s.17):
ralph.py runs in a session of its own, as a terminal's foreground job would; the stub agent records
the signals it gets; no process started by ralph.py may outlive it."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from conftest import install_stub, wait_for
from loophelp import Running, alive, tasks  # noqa: F401  (fixtures)

WAITING = "\nWaiting for claude to finish cleanup... Press Ctrl+C again to force quit.\n"
REMAIN = {"out": "1 open, 0 active, 0 done, 0 blocked, 0 deleted\n"}
TERMINATED = "Terminated: SIGTERM stopped the run (exit 130); 'ralph build --resume' continues it"


@pytest.fixture
def stub(tmp_path: Path, bin_dir: Path) -> dict[str, str]:
    install_stub(bin_dir, "claude", "claude_signals")
    return {"STUB_PIDFILE": str(tmp_path / "agent.pid"), "STUB_SIGLOG": str(tmp_path / "signals"),
            "STUB_CHILD_PIDFILE": str(tmp_path / "child.pid")}


def start(args, *, git_repo, base_env, tasks, stub, **extra) -> Running:
    tasks.script(peek={"out": "## Task t\nid: t\n"}, plan_status=REMAIN)
    return Running(args, cwd=git_repo, env={**base_env, **tasks.env, **stub, **extra})


def pid(path: str) -> int:
    return int(wait_for(lambda: Path(path).exists() and Path(path).read_text()))


def signals_seen(stub) -> list[str]:
    path = Path(stub["STUB_SIGLOG"])
    return path.read_text().split() if path.exists() else []


def after_session_calls(tasks) -> list[list[str]]:
    calls = tasks.calls()
    return calls[calls.index(["peek", "-n", "10"]) + 1:]


@pytest.mark.parametrize("target", ["ralph-alone", "ralph-group"])
def test_first_sigint_lets_the_agent_finish_with_one_sigint_then_exits_130(
        git_repo, base_env, tasks, stub, target):
    run = start(["build"], git_repo=git_repo, base_env=base_env, tasks=tasks, stub=stub)
    try:
        agent_pid, child_pid = pid(stub["STUB_PIDFILE"]), pid(stub["STUB_CHILD_PIDFILE"])
        if target == "ralph-alone":
            os.kill(run.proc.pid, signal.SIGINT)
        else:
            os.killpg(run.proc.pid, signal.SIGINT)   # what Ctrl+C at a terminal does
        assert run.wait() == 130
        assert signals_seen(stub) == ["SIGINT"]
        assert run.stdout.endswith("started\n" + WAITING + "bye\nderegistered ab12\n")
        assert after_session_calls(tasks) == [["agent", "deregister", "ab12"]]
        wait_for(lambda: not alive(agent_pid) and not alive(child_pid))
    finally:
        run.kill()


def test_second_sigint_kills_the_agent_group_and_exits_130(git_repo, base_env, tasks, stub):
    run = start(["build"], git_repo=git_repo, base_env=base_env, tasks=tasks, stub=stub,
                STUB_ON_INT="ignore")
    try:
        agent_pid, child_pid = pid(stub["STUB_PIDFILE"]), pid(stub["STUB_CHILD_PIDFILE"])
        os.kill(run.proc.pid, signal.SIGINT)
        wait_for(lambda: signals_seen(stub) == ["SIGINT"] and WAITING in run.stdout)
        assert run.proc.poll() is None                   # still waiting for the agent
        os.kill(run.proc.pid, signal.SIGINT)
        assert run.wait() == 130
        assert signals_seen(stub) == ["SIGINT"]
        assert not alive(agent_pid) and not alive(child_pid)
        assert run.stdout.endswith(WAITING + "deregistered ab12\n")
        assert after_session_calls(tasks) == [["agent", "deregister", "ab12"]]
    finally:
        run.kill()


# SIGHUP is not a SIGTERM here: it is a graceful stop (docs/decisions/0004), tested in
# test_unattended_e2e.py (test_sighup_finishes_the_session_then_exits_0).
@pytest.mark.parametrize("signum", [signal.SIGTERM], ids=["SIGTERM"])
def test_sigterm_during_a_session_kills_the_group_at_once_without_the_message(
        git_repo, base_env, tasks, stub, signum):
    run = start(["build"], git_repo=git_repo, base_env=base_env, tasks=tasks, stub=stub,
                STUB_ON_INT="ignore")
    try:
        agent_pid, child_pid = pid(stub["STUB_PIDFILE"]), pid(stub["STUB_CHILD_PIDFILE"])
        wait_for(lambda: "started" in run.stdout)
        sent = time.monotonic()
        os.kill(run.proc.pid, signum)
        assert run.wait() == 130
        assert time.monotonic() - sent < 3
        assert signals_seen(stub) == []
        assert "Waiting for claude" not in run.stdout
        assert not alive(agent_pid) and not alive(child_pid)
        assert run.stdout.endswith("started\nderegistered ab12\n")
        assert run.stderr.splitlines() == [TERMINATED]         # one line, as Ctrl+C's notice
    finally:
        run.kill()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_between_sessions_exits_130_without_another_session(
        git_repo, base_env, tasks, stub, tmp_path, signum):
    block = tmp_path / "plan-status-released"
    run = start(["build"], git_repo=git_repo, base_env=base_env, tasks=tasks, stub=stub,
                STUB_EXIT_AT_ONCE="1", STUB_CHILD_QUIET="1")
    tasks.script(plan_status={"block": str(block), **REMAIN})
    try:
        task_pid = pid(str(block) + ".ready")
        os.kill(run.proc.pid, signum)
        assert run.wait() == 130
        assert run.stdout.count("started\n") == 1 and "LOOP" not in run.stdout
        assert run.stdout.endswith("deregistered ab12\n")
        assert tasks.calls()[-1] == ["agent", "deregister", "ab12"]
        assert tasks.calls().count(["peek", "-n", "10"]) == 1
        wait_for(lambda: not alive(task_pid))   # the task call was not left behind
    finally:
        block.write_text("")
        run.kill()


def test_a_signal_during_setup_exits_130_before_the_banner(git_repo, base_env, tasks, stub, tmp_path):
    block = tmp_path / "scope-released"
    tasks.script(_get_scope={"block": str(block), "out": "repo:a/b\nbranch:main\n"})
    run = Running(["build"], cwd=git_repo, env={**base_env, **tasks.env, **stub})
    try:
        pid(str(block) + ".ready")
        os.kill(run.proc.pid, signal.SIGTERM)
        assert run.wait() == 130
        assert run.stdout == "" and run.stderr.splitlines() == [TERMINATED]
        assert not Path(stub["STUB_PIDFILE"]).exists()
    finally:
        block.write_text("")
        run.kill()


def test_a_child_that_keeps_the_agents_stdout_open_does_not_hang_or_outlive_ralph(
        git_repo, base_env, tasks, stub):
    run = start(["build", "-n", "1"], git_repo=git_repo, base_env=base_env, tasks=tasks, stub=stub,
                STUB_EXIT_AT_ONCE="1")
    try:
        child_pid = pid(stub["STUB_CHILD_PIDFILE"])
        assert run.wait(timeout=10) == 0
        assert run.stdout.endswith("Reached max iterations: 1\nderegistered ab12\n")
        assert not alive(child_pid)
    finally:
        run.kill()


def test_a_quiet_child_left_running_by_the_agent_is_killed_after_the_session(
        git_repo, base_env, tasks, stub, tmp_path):
    release = tmp_path / "release"
    release.write_text("")
    run = start(["build", "-n", "2"], git_repo=git_repo, base_env=base_env, tasks=tasks, stub=stub,
                STUB_CHILD_QUIET="1", STUB_RELEASE=str(release))
    try:
        first_child = pid(stub["STUB_CHILD_PIDFILE"])
        assert run.wait(timeout=10) == 0
        assert run.stdout.count("released\n") == 2
        assert not alive(first_child) and not alive(pid(stub["STUB_CHILD_PIDFILE"]))
    finally:
        run.kill()


def test_the_agent_starts_with_sigttou_ignored_so_terminal_access_cannot_stop_it(
        git_repo, base_env, tasks, stub, tmp_path):
    ttou = tmp_path / "ttou"
    release = tmp_path / "release"
    release.write_text("")
    run = start(["build", "-n", "1"], git_repo=git_repo, base_env=base_env, tasks=tasks, stub=stub,
                STUB_RELEASE=str(release), STUB_TTOU_FILE=str(ttou), STUB_CHILD_QUIET="1")
    try:
        assert run.wait() == 0
        assert ttou.read_text() == "ignored"
    finally:
        run.kill()


def test_ctrl_c_at_a_real_terminal_reaches_the_agent_once_and_exits_130(
        git_repo, base_env, tasks, stub):
    import pty
    import sys
    import threading
    from conftest import RALPH
    tasks.script(peek={"out": "## Task t\nid: t\n"}, plan_status=REMAIN)
    env = {**base_env, **tasks.env, **stub}
    child, master = pty.fork()
    if child == 0:                                     # ralph.py, foreground job of a terminal
        os.chdir(git_repo)
        os.execve(sys.executable, [sys.executable, str(RALPH), "build"], env)
    output = bytearray()

    def read() -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                return
            if not chunk:
                return
            output.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_for(lambda: b"started" in output)
        os.write(master, b"\x03")                      # Ctrl+C
        _, status = os.waitpid(child, 0)
        reader.join(5)
        assert os.waitstatus_to_exitcode(status) == 130
        assert signals_seen(stub) == ["SIGINT"]
        text = output.decode("utf-8", "replace").replace("\r\n", "\n")
        assert "Waiting for claude to finish cleanup... Press Ctrl+C again to force quit.\n" in text
        assert text.endswith("bye\nderegistered ab12\n")
    finally:
        try:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(master)


def test_a_signal_during_an_in_process_task_write_waits_for_its_transaction(
        git_repo, base_env, run_task, tmp_path):
    import sqlite3
    import psutil
    assert run_task("agent", "list").returncode == 0          # creates .ralph/tasks.db
    db = git_repo / ".ralph" / "tasks.db"
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")                          # `agent register` must wait
    run = Running(["build"], cwd=git_repo, env=base_env)
    try:
        proc = psutil.Process(run.proc.pid)
        # opened for writing: the register's own connection, waiting for the holder (the
        # reads before it open the store read-only, and a signal then would come too early)
        wait_for(lambda: any(f.path == str(db) and f.mode != "r" for f in proc.open_files()))
        os.kill(run.proc.pid, signal.SIGTERM)
        holder.execute("ROLLBACK")                             # the register can now commit
        assert run.wait(timeout=30) == 130
        agents = sqlite3.connect(db).execute("SELECT id, status FROM agents").fetchall()
        assert len(agents) == 1 and agents[0][1] == "stopped"  # registered whole, then deregistered
        assert run.stdout == f"deregistered {agents[0][0]}\n"
    finally:
        holder.close()
        run.kill()
