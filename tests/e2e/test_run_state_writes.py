"""How often a build run replaces its run state and progress.md, watched through the real
ralph.py with strace: each session saves the state twice (written ahead before its agent
starts, and its record with the iteration counter after it) and progress.md once (with the
record), whatever features the defaults turn on (the breakers without `-n`)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import RALPH, install_stub

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")


def replaced(git_repo: Path, env: dict[str, str], trace: Path, code: int,
             *args: str) -> dict[str, int]:
    """The files under .ralph/ a run of ralph.py `args` replaced (rename onto them), counted."""
    proc = subprocess.run(["strace", "-f", "-qq", "-e", "trace=rename,renameat,renameat2",
                           "-o", str(trace), sys.executable, str(RALPH), *args],
                          cwd=git_repo, env=env, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 and "ptrace" in proc.stderr:
        pytest.skip("strace cannot trace here (ptrace is not permitted)")
    assert proc.returncode == code, proc.stderr
    counts: dict[str, int] = {}
    for line in trace.read_text().splitlines():
        for target in re.findall(r'"([^"]+)"\)\s*= 0$', line):
            name = Path(target).name
            counts[name] = counts.get(name, 0) + 1
    return counts


@pytest.mark.parametrize("breakers", [False, True], ids=["iteration-limit", "breakers-on"])
def test_each_session_saves_the_run_state_twice_and_progress_once(git_repo, base_env, bin_dir,
                                                                  run_task, tmp_path, breakers):
    """Six tasks stay open (the stub agent does nothing): a run of 4 sessions against one of
    1, in a fresh copy of the repository each. Without `-n` the breakers are on and the idle
    one ends the run (exit 6) after as many sessions as it allows."""
    install_stub(bin_dir)
    lines = "".join(json.dumps({"id": f"t{i}", "t": f"Task {i}"}) + "\n" for i in range(6))
    counts = {}
    for sessions in (1, 4):
        repo = Path(shutil.copytree(git_repo, tmp_path / f"repo{sessions}", symlinks=True))
        assert run_task("plan-sync", input=lines, cwd=repo).returncode == 0
        args = ["build", "--max-idle-sessions", str(sessions)] if breakers else [
            "build", "-n", str(sessions)]
        counts[sessions] = replaced(repo, base_env, tmp_path / f"trace{sessions}",
                                    6 if breakers else 0, *args)
    per = {name: (counts[4].get(name, 0) - counts[1].get(name, 0)) / 3
           for name in ("state.json", "progress.md")}
    assert per == {"state.json": 2, "progress.md": 1}, counts
