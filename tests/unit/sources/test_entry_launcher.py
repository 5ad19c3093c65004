"""sources.entry's launcher for agents: an interpreter that a first line cannot name keeps the
task command (nothing written); what is written runs the task CLI with that interpreter."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ralphpy.sources import entry

LIB = str(Path(__file__).resolve().parents[3] / "lib")


@pytest.mark.parametrize("python", ["/opt/my python/bin/python3", "bin/python3",
                                    "/" + "p" * 130 + "/python3"],
                         ids=["a blank in the path", "relative", "longer than a first line"])
def test_an_interpreter_a_first_line_cannot_name_writes_no_launcher(tmp_path, python):
    ralph_dir = tmp_path / ".ralph"
    assert entry.write_launcher(ralph_dir, python, LIB) is None
    assert not ralph_dir.exists()


def test_the_launcher_runs_the_task_cli_with_the_interpreter_it_names(tmp_path):
    ralph_dir = tmp_path / ".ralph"
    path = entry.write_launcher(ralph_dir, sys.executable, LIB)
    assert path == str(ralph_dir / "bin" / "task")
    assert (ralph_dir / ".gitignore").read_text() == "*\n"
    proc = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/nonexistent"})
    assert proc.returncode == 0 and proc.stdout.startswith("Usage:"), proc.stderr
