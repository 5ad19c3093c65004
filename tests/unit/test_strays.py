"""strays.kill over real processes: a process carrying the session's tag outside its group
is killed and named; one of the group, one of another session and one without a tag are
left alone."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import _clean_environ
from loophelp import alive
from ralphpy import strays

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(),
                                reason="processes are found in /proc")


def sleeper(tag: str | None, *, group: int | None = None) -> subprocess.Popen:
    env = _clean_environ()
    if tag is not None:
        env[strays.ENV] = tag
    return subprocess.Popen(["sleep", "600"], env=env, process_group=group or 0)


def test_only_the_tagged_processes_outside_the_group_are_killed():
    tag, other = strays.new_tag(), strays.new_tag()
    assert tag != other and tag.startswith(f"{os.getpid()}-")
    leader = sleeper(tag)                                   # the session's group
    member = sleeper(tag, group=leader.pid)
    escaped = sleeper(tag)                                  # setsid: a group of its own
    others = [sleeper(other), sleeper(None)]
    try:
        killed = strays.kill(tag, leader.pid)
        assert killed == [f"{escaped.pid} sleep 600"]
        assert escaped.wait(10) == -9
        assert all(alive(p.pid) for p in (leader, member, *others))
        assert strays.kill(tag, leader.pid) == []
    finally:
        for proc in (leader, member, escaped, *others):
            proc.kill()
            proc.wait()


def test_the_notice_names_each_process_and_who_left_them():
    assert strays.line(["12 sleep 600"]) == (
        "killed 1 process the agent left running outside its process group: 12 sleep 600")
    assert strays.line(["12 x"], "the command").startswith("killed 1 process the command left ")
    assert strays.line(["12 a", "13 b"]).startswith("killed 2 processes the agent left ")
    assert strays.line(["12 a", "13 b"]).endswith(": 12 a; 13 b")
