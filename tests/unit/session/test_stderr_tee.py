"""An agent's stderr when its adapter reads it (session/stderr_tee.py, through the pool): passed
on to ralph's stderr byte for byte as it comes, only its last lines kept, and the session still
ends when a process that left the group holds the pipe. Real processes and pipes."""
from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

from ralphpy.agents.summary import PlainRenderer
from ralphpy.session import pool as session_pool
from ralphpy.session.stderr_tee import StderrTee
from ralphpy.signals import Guard


@pytest.fixture
def sink():
    """A pipe standing for ralph's stderr: (its write end, a function reading all it got)."""
    r, w = os.pipe()
    os.set_blocking(r, False)
    got = bytearray()

    def read() -> bytes:
        while True:
            try:
                chunk = os.read(r, 65536)
            except BlockingIOError:
                return bytes(got)
            if not chunk:
                return bytes(got)
            got.extend(chunk)
    yield w, read
    os.close(r)
    os.close(w)


def run_one(tmp_path: Path, script: str, sink_fd: int, read_stderr: bool = True):
    with session_pool.Pool(Guard(), lambda: None, stderr_to=sink_fd) as pool:
        assert pool.start("s", [sys.executable, "-c", script], env={"PATH": os.environ["PATH"]},
                          cwd=tmp_path, log_path=tmp_path / "s.log",
                          renderer=PlainRenderer(io.BytesIO()), read_stderr=read_stderr) is None
        ((_, result),) = pool.wait()
    return result


def test_the_agents_stderr_goes_on_unchanged_and_its_tail_is_kept(tmp_path, sink):
    fd, read = sink
    script = ("import sys, time\nsys.stdout.write('out\\n'); sys.stdout.flush()\n"
              "sys.stderr.buffer.write(b'warn \\xff\\n'); sys.stderr.flush(); time.sleep(0.05)\n"
              "sys.stderr.write('Error: Out of credits\\n'); sys.exit(1)")
    result = run_one(tmp_path, script, fd)
    assert read() == b"warn \xff\nError: Out of credits\n"                   # byte for byte
    assert result.stderr_tail == "warn \ufffd\nError: Out of credits\n"
    assert (result.returncode, (tmp_path / "s.log").read_bytes()) == (1, b"out\n")


def test_a_stderr_that_is_not_read_is_inherited_and_leaves_no_tail(tmp_path, sink):
    fd, read = sink
    result = run_one(tmp_path, "import sys; sys.stderr.write('x\\n')", fd, read_stderr=False)
    assert (read(), result.stderr_tail) == (b"", "")


def test_only_the_last_lines_are_kept_from_a_whole_line(tmp_path, sink):
    fd, read = sink
    script = ("import sys\nfor i in range(3000): sys.stderr.write(f'line {i}\\n')\n"
              "sys.stderr.write('Error: last words\\n')")
    result = run_one(tmp_path, script, fd)
    assert read().count(b"\n") == 3001                          # all of it passed on
    tail = result.stderr_tail
    assert len(tail.encode()) <= 8192 and tail.startswith("line ")
    assert tail.endswith("line 2999\nError: last words\n")


def test_a_process_that_left_the_group_holding_stderr_does_not_hold_the_session(tmp_path, sink):
    fd, read = sink
    script = ("import subprocess, sys\n"
              "subprocess.Popen(['sleep', '30'], start_new_session=True,\n"
              "                 stdout=subprocess.DEVNULL)\n"
              "sys.stderr.write('Error: gone\\n')")
    result = run_one(tmp_path, script, fd)
    assert result.returncode == 0 and result.stderr_tail == "Error: gone\n"


def test_a_closed_ralph_stderr_loses_the_copy_not_the_tail():
    r, w = os.pipe()
    os.close(r)                                                 # EPIPE on every write
    tee = StderrTee(-1, w, keep_bytes=16)
    tee.feed(b"first line\nsecond line\n")
    os.close(w)
    assert tee.tail() == "second line\n"
