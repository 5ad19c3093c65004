"""The one atomic writer: whole-file replacement with one file mode (or the caller's), the
file's times when asked, nothing left behind on failure, and the EnvironmentFailure line."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ralphpy import atomic_file
from ralphpy.errors import EnvironmentFailure


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_file_is_replaced_whole_with_mode_0644(tmp_path):
    path = tmp_path / "state.json"
    path.write_bytes(b"old contents, longer than the new ones\n")
    path.chmod(0o600)
    atomic_file.replace(path, b"new\n")
    assert path.read_bytes() == b"new\n"
    assert _mode(path) == 0o644 & ~_umask()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_an_explicit_mode_is_set_exactly(tmp_path):
    path = tmp_path / "hook"
    atomic_file.replace(path, b"#!/bin/sh\n", mode=0o755)
    assert _mode(path) == 0o755


def test_times_are_set_on_the_new_file(tmp_path):
    path = tmp_path / "old.log"
    atomic_file.replace(path, b"tail\n", times_ns=(1_000_000_000, 2_000_000_000))
    assert path.stat().st_mtime_ns == 2_000_000_000


def test_write_atomic_creates_the_directory(tmp_path):
    path = tmp_path / "a" / "b" / "f"
    atomic_file.write_atomic(path, b"x")
    assert path.read_bytes() == b"x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "f"
    path.write_bytes(b"old")
    folder.chmod(0o500)
    try:
        with pytest.raises(OSError):
            atomic_file.replace(path, b"new")
        with pytest.raises(EnvironmentFailure, match=rf"^cannot write {path}: Permission denied;"):
            atomic_file.write_atomic(path, b"new")
    finally:
        folder.chmod(0o700)
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in folder.iterdir()) == ["f"]
