"""session.group.spawn: the agent's process group and its working directory, with real processes."""
from __future__ import annotations

import os
from pathlib import Path

from ralphpy.session import group


def _output(proc) -> str:
    os.set_blocking(proc.stdout.fileno(), True)
    out = proc.stdout.read().decode()
    proc.wait(timeout=10)
    return out


def test_an_agent_started_in_another_directory_sees_it_as_its_pwd(tmp_path: Path):
    # opencode reads its project directory from $PWD, not from getcwd().
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    proc = group.spawn(["printenv", "PWD"], env={**os.environ, "PWD": "/somewhere/else"},
                       cwd=worktree)
    assert _output(proc) == f"{worktree}\n"


def test_an_agent_started_here_keeps_the_pwd_it_was_given(tmp_path: Path):
    proc = group.spawn(["printenv", "PWD"], env={**os.environ, "PWD": "/given"}, cwd=None)
    assert _output(proc) == "/given\n"


def test_the_agent_leads_a_process_group_of_its_own(tmp_path: Path):
    proc = group.spawn(["sh", "-c", "ps -o pgid= -p $$"], env=dict(os.environ), cwd=None)
    assert int(_output(proc).strip()) == proc.pid
