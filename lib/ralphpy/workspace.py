"""Owns the facts ralph.py reads from the working directory before a run
(docs/contract/ralph-cli.md s.8, s.9.1, s.20.3): whether ./specs holds anything, the current git
branch, where the run's own .ralph/ is (lock, state, progress, control files), and creating ralph's
own directories under ./.ralph/. Knows nothing of tasks or agents; never prints."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from ralphpy import atomic_file, programs


def specs_present(cwd: Path) -> bool:
    """s.8: ./specs is a directory with at least one entry, hidden names included."""
    try:
        with os.scandir(cwd / "specs") as entries:
            return any(True for _ in entries)
    except OSError:                 # missing, not a directory, unreadable
        return False


def current_branch(env: Mapping[str, str], cwd: Path | None = None) -> str:
    """s.9.1: `git branch --show-current` in cwd (default: the current directory) minus its
    trailing newline; "" when git fails."""
    try:
        done = programs.run([*programs.GIT, "branch", "--show-current"], cwd=cwd or Path.cwd(), env=env,
                            stderr=programs.DISCARD)
    except OSError:
        return ""
    return done.out.rstrip("\n") if done.code == 0 else ""


def ralph_dir(cwd: Path) -> Path:
    """The .ralph/ of the run lock, run state, progress record and ctl sentinels: the one next
    to the task database, <git top level>/.ralph, so that two runs started from different
    subdirectories of one checkout share one lock; ./.ralph outside git. Found by
    walking up to the nearest .git entry (no git call, worktrees included); never created here.
    Session logs stay under ./.ralph/logs of the current directory (s.20.3): ralph_subdir."""
    cwd = Path(cwd).absolute()
    for directory in (cwd, *cwd.parents):
        if (directory / ".git").exists():
            return directory / ".ralph"
    return cwd / ".ralph"


def ralph_subdir(cwd: Path, name: str = "") -> Path:
    """.ralph/<name> (without a name, .ralph/ itself), created when missing, with the
    `.gitignore` holding `*` that .ralph/ gets from its first write (atomic_file), so an
    agent's `git add -A` never commits logs. EnvironmentFailure (exit 8) when it cannot be."""
    path = cwd / ".ralph" / name
    atomic_file.ensure_dir(path)
    return path


__all__ = ["specs_present", "current_branch", "ralph_dir", "ralph_subdir"]
