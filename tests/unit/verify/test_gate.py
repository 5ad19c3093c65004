"""gate.run: a real shell command in a real tree: exit status, output tail and its sha256,
HEAD, and the timeout that stops the command's whole process group."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import psutil
import pytest

from conftest import _clean_environ, git, wait_for
from ralphpy.verify import gate


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    env = _clean_environ()
    git(tmp_path, "init", "-q", "-b", "main", env=env)
    (tmp_path / "f").write_text("1\n")
    git(tmp_path, "add", "-A", env=env)
    git(tmp_path, "commit", "-qm", "one", env=env)
    return tmp_path


def test_a_failing_command_is_bound_to_the_commit_with_its_tail(tree):
    check = gate.run("seq 1 100; echo boom >&2; exit 3", tree, _clean_environ(), 30)
    head = git(tree, "rev-parse", "HEAD").strip()
    assert (check.exit_code, check.passed, check.timed_out, check.commit, check.dirty) == (
        3, False, False, head, False)
    lines = check.tail.split("\n")
    assert len(lines) == gate.TAIL_LINES and lines[0] == "62" and lines[-1] == "boom"
    assert check.tail_sha256 == hashlib.sha256(check.tail.encode()).hexdigest()
    assert check.summary().startswith("verify `seq 1 100; echo boom >&2; exit 3` exited 3")


def test_a_passing_command_in_a_dirty_tree_says_so(tree):
    (tree / "f").write_text("2\n")
    check = gate.run("true", tree, _clean_environ(), 30)
    assert check.passed and check.dirty and check.tail == ""


def test_a_hanging_command_and_its_children_are_stopped_at_the_timeout(tree, tmp_path):
    pids = tmp_path / "pids"
    command = f"sleep 300 & echo $! > {pids}; echo waiting; wait"
    check = gate.run(command, tree, _clean_environ(), 0.5, kill_grace_s=1)
    assert check.timed_out and check.exit_code is None and not check.passed
    assert check.tail == "waiting"
    child = int(pids.read_text())
    wait_for(lambda: not psutil.pid_exists(child)
             or psutil.Process(child).status() == psutil.STATUS_ZOMBIE)


def test_the_command_runs_in_a_process_group_of_its_own(tree):
    check = gate.run("ps -o pgid= -p $$", tree, _clean_environ(), 30)
    assert int(check.tail.strip()) != os.getpgid(0)


def test_what_a_passing_command_leaves_running_in_its_group_is_stopped(tree, tmp_path):
    pids = tmp_path / "pids"
    check = gate.run(f"sleep 300 > /dev/null 2>&1 & echo $! > {pids}", tree, _clean_environ(), 30)
    assert check.passed
    child = int(pids.read_text())
    wait_for(lambda: not psutil.pid_exists(child)
             or psutil.Process(child).status() == psutil.STATUS_ZOMBIE)
