"""nohup-friendliness (issue 7): colour and in-place progress only on a terminal."""
from __future__ import annotations

import io
import os
import pty

import pytest

from ralphkit.tty import is_interactive, use_colour


def test_a_pseudo_terminal_is_interactive_and_a_pipe_or_file_is_not(tmp_path):
    master, slave = pty.openpty()
    read_end, write_end = os.pipe()
    try:
        with open(slave, "w", closefd=False) as term, open(write_end, "w", closefd=False) as pipe, \
                open(tmp_path / "nohup.out", "w") as log:
            assert is_interactive(term) is True
            assert is_interactive(pipe) is False
            assert is_interactive(log) is False
    finally:
        for fd in (master, slave, read_end, write_end):
            os.close(fd)


@pytest.mark.parametrize("stream", [None, io.StringIO(), object()],
                         ids=["none", "stringio", "no-isatty"])
def test_streams_without_a_terminal_are_not_interactive(stream):
    assert is_interactive(stream) is False


def test_a_closed_stream_is_not_interactive():
    stream = io.StringIO()
    stream.close()
    assert is_interactive(stream) is False


def test_no_color_and_dumb_terminals_turn_colour_off_even_on_a_terminal():
    master, slave = pty.openpty()
    try:
        with open(slave, "w", closefd=False) as term:
            assert use_colour(term, {}) is True
            assert use_colour(term, {"NO_COLOR": "1"}) is False
            assert use_colour(term, {"TERM": "dumb"}) is False
            assert use_colour(io.StringIO(), {}) is False
    finally:
        os.close(master)
        os.close(slave)
