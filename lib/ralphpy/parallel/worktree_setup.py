"""Owns making a new `--parallel` worktree ready before its agent starts: the ignored files
Claude Code's `.worktreeinclude` convention names are copied in from the main checkout (a
file of gitignore patterns at the repository root; a file is copied when it matches one AND
git ignores it there, so a tracked file is never copied, and nothing in the worktree is
overwritten), then the `worktree_setup` command runs there (`sh -c`, in a process group of
its own, bounded by `worktree_setup_timeout`). A command that fails or runs out of time
raises `SessionNotStarted` with the reason.

Does not own creating or removing worktrees (parallel.worktrees), the agent's environment
(the caller passes it) or when this runs (the session lifecycle's `prepare` hook,
loop.features)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Mapping

from ralphpy import programs
from ralphpy.errors import SessionNotStarted
from ralphpy.parallel.git import Git

FILE = ".worktreeinclude"
# ralph's own directory (its worktrees among them) and git's are never copied.
_NEVER = (".ralph/", ".git/")
_BATCH = 500             # paths per check-ignore call: an argv well below the system's limit


def included(repo: Path, env: Mapping[str, str]) -> list[str]:
    """The paths (relative to `repo`) `.worktreeinclude` names that git ignores in `repo`:
    git answers both questions, with the patterns' full gitignore syntax (`!`, `/`, `**`)."""
    patterns = repo / FILE
    if not patterns.is_file():
        return []
    git = Git(env)
    # Untracked files matching the patterns (as exclude patterns), then which of them the
    # repository's own ignore rules ignore.
    code, out, _ = git(repo, "ls-files", "-z", "--others", "--ignored",
                       f"--exclude-from={patterns}", "--", ":(exclude).ralph", ":(exclude).git",
                       check=False)                 # not a walk of the run's logs, each session
    matched = [p for p in out.split("\0") if p and not p.startswith(_NEVER)]
    if code != 0:
        return []
    ignored: set[str] = set()
    for at in range(0, len(matched), _BATCH):
        # One path a line (-z needs --stdin, which programs.run does not feed); a name git
        # quotes (a control character in it) comes back unlike itself and is not copied.
        code, out, _ = git(repo, "-c", "core.quotePath=false", "check-ignore", "--",
                           *matched[at:at + _BATCH], check=False)
        ignored.update(out.splitlines() if code == 0 else ())   # exit 1: none is ignored
    return sorted(ignored.intersection(matched))


def copy_included(repo: Path, worktree: Path, env: Mapping[str, str]) -> list[str]:
    """Copy the included files from `repo` into `worktree` at the same paths (a symlink as a
    symlink; a path the worktree has already is left as it is). The paths copied."""
    copied = []
    for rel in included(repo, env):
        source, target = repo / rel, worktree / rel
        if target.exists() or target.is_symlink() or not (source.is_file() or
                                                          source.is_symlink()):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
        copied.append(rel)
    return copied


# What tests need and no `.worktreeinclude` usually names, being too big to copy: the
# project's dependencies, linked in when git ignores them.
DEPENDENCIES = (".venv", "venv", "node_modules", ".env")


def link_dependencies(source: Path, worktree: Path, env: Mapping[str, str]) -> list[str]:
    """Link `source`'s ignored dependency folders (DEPENDENCIES, at its top) into `worktree`
    where it has none: the verify gate's scratch worktree runs the tests with them. The
    names linked."""
    present = [name for name in DEPENDENCIES if (source / name).exists()
               and not (worktree / name).exists() and not (worktree / name).is_symlink()]
    if not present:
        return []
    code, out, _ = Git(env)(source, "check-ignore", "--", *present, check=False)
    linked = out.split() if code == 0 else []
    for name in linked:
        (worktree / name).symlink_to((source / name).resolve())
    return linked


def run_command(command: str, worktree: Path, env: Mapping[str, str], *, timeout: float,
                kill_grace: float) -> None:
    """Run the set-up command in `worktree` with the agent's environment; raises
    SessionNotStarted naming the exit status (or the timeout) and its last line of output."""
    with tempfile.TemporaryFile() as output:
        try:
            code = programs.run_group(["sh", "-c", command], cwd=worktree, env=env,
                                      output=output, timeout=timeout, kill_grace=kill_grace)
        except OSError as err:
            raise SessionNotStarted(f"worktree set-up could not run: {err}") from None
        if code == 0:
            return
        output.seek(max(0, output.seek(0, os.SEEK_END) - 4096))
        lines = output.read().decode("utf-8", "replace").strip().splitlines()
    how = f"timed out after {timeout:g}s" if code is None else f"exited {code}"
    last = f": {lines[-1].strip()}" if lines else ""
    raise SessionNotStarted(f"worktree set-up `{command}` {how}{last}")


__all__ = ["link_dependencies", "DEPENDENCIES", "FILE", "included", "copy_included", "run_command"]
