"""Black-box: how ralph.py runs the programs that are not agents (git, an external task
command). Each call gets the run's environment, docs/contract/ralph-cli.md s.9's exports included,
and a start that runs no such program costs no import of a process library."""
from __future__ import annotations

import shutil
import sys

from conftest import RALPH, git, ignore_ralph_dir, install_stub, run_process

# Commits its task's file in its worktree and completes the task.
ACTION = r"""
tid=$(cat "$RALPH_FROZEN_IDS_FILE")
echo "$tid" > "out-$tid.txt"
git add -A >/dev/null && git commit -qm "work on $tid" >/dev/null
"$RALPH_TASK_SCRIPT" done "$tid" >/dev/null
"""

# A git first on PATH: each of ralph.py's own git calls (they start with the options that turn
# hooks off, programs.GIT) records what ralph.py exported before the sessions; the agents' calls
# (their own agent ids) are not recorded.
GIT = """\
#!/bin/sh
if [ "$1 $2 $3 $4" = "-c core.hooksPath=/dev/null -c core.fsmonitor=false" ]; then
    echo "$5 ${{RALPH_TASK_SCRIPT:-unset}} ${{RALPH_AGENT_ID:-unset}}" >> "$GIT_LOG"
fi
exec {git} "$@"
"""


def test_the_git_calls_of_a_parallel_run_see_what_ralph_exported(
        run_ralph, run_task, git_repo, base_env, bin_dir, tmp_path):
    install_stub(bin_dir)
    (bin_dir / "git").write_text(GIT.format(git=shutil.which("git")))
    (bin_dir / "git").chmod(0o755)
    ignore_ralph_dir(git_repo, base_env)
    for tid in ("t1", "t2"):
        assert run_task("create", tid, f"Task {tid}", "-c", f"component:{tid}").returncode == 0
    log = tmp_path / "git.log"
    proc = run_ralph("build", "--parallel", "2",
                     env={"STUB_ACTION": ACTION, "GIT_LOG": str(log)}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    seen = [line for line in log.read_text().splitlines()       # a worktree's add, its
            if line.split()[0] in ("worktree", "rebase", "merge")]  # merge back: in the sessions
    assert {"worktree", "rebase"} <= {line.split()[0] for line in seen}
    exported = {tuple(line.split()[1:]) for line in seen}
    assert len(exported) == 1, seen
    ((script, agent),) = exported
    assert script == str(git_repo / ".ralph" / "bin" / "task")   # s.9: export RALPH_TASK_SCRIPT
    assert agent != "unset"                       # s.9: export RALPH_AGENT_ID (the first agent)


def test_a_start_imports_no_process_library_it_does_not_use(git_repo, base_env, bin_dir):
    install_stub(bin_dir)
    for argv in (["build", "--help"], ["plan"]):
        proc = run_process([sys.executable, "-X", "importtime", str(RALPH), *argv],
                           cwd=git_repo, env=base_env)
        assert proc.returncode == 0, proc.stderr
        assert "import time:" in proc.stderr                  # -X importtime did report
        assert "plumbum" not in proc.stderr, argv
