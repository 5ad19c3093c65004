"""The one /proc reader, against real processes: alive or gone, start times that tell a
process from its successor, the live members of a process group."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import wait_for
from ralphpy import procs

needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="no /proc")


def test_a_reaped_process_is_gone_and_a_live_one_is_alive():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert procs.pid_alive(os.getpid())
    assert not procs.pid_alive(proc.pid) and not procs.pid_alive(0)
    assert procs.start_time(proc.pid) is None


@needs_proc
def test_start_times_and_boot_id_are_read():
    assert isinstance(procs.start_time(os.getpid()), int)
    assert procs.start_time(os.getpid()) == procs.start_time(os.getpid())
    assert procs.boot_id() == Path("/proc/sys/kernel/random/boot_id").read_text().strip()


@needs_proc
def test_group_members_are_the_live_processes_of_the_group(tmp_path):
    code = ("import subprocess, sys, time\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            "time.sleep(60)\n")
    leader = subprocess.Popen([sys.executable, "-c", code], process_group=0)
    try:
        members = wait_for(lambda: len(procs.group_members(leader.pid)) == 2
                           and procs.group_members(leader.pid))
        assert leader.pid in members and procs.group_exists(leader.pid)
    finally:
        os.killpg(leader.pid, signal.SIGKILL)
    # The unreaped leader is a zombie: the group exists for kill(2), but has no live member.
    assert wait_for(lambda: procs.group_members(leader.pid) == [])
    leader.wait()
    assert wait_for(lambda: not procs.group_exists(leader.pid))
