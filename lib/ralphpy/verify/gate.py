"""Owns running one verify command: in the given tree, in a process group of its own (never
the agent's), with a timeout (SIGTERM to the group, then SIGKILL), the result bound to the
commit it ran at. Knows nothing of tasks, of the loop or of tampering."""
from __future__ import annotations

import hashlib
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ralphpy import programs

TAIL_LINES = 40
TAIL_CHARS = 4000
KILL_GRACE_S = 5.0


@dataclass(frozen=True)
class Check:                     # one run of a verify command
    command: str
    exit_code: int | None        # None: it did not run to an end (timeout, cannot start)
    duration_s: float
    tail: str                    # the last TAIL_LINES lines (at most TAIL_CHARS characters)
    tail_sha256: str
    commit: str                  # `git rev-parse HEAD` of the tree it ran in ("" outside git)
    dirty: bool                  # uncommitted changes to tracked files when it ran
    timed_out: bool = False
    timeout_s: float | None = None
    error: str = ""              # why it could not start
    tree_id: str = ""            # the git tree it ran on, uncommitted changes included
    failing: tuple[str, ...] = ()     # the failing tests, named by verify.failures

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def ran_at(self) -> str:
        return f"at {self.commit[:12] or 'no commit'}"

    def summary(self) -> str:
        at = f"{self.ran_at}{' (uncommitted changes)' if self.dirty else ''}"
        if self.timed_out:
            how = f"timed out after {self.timeout_s:g}s"
        elif self.error:
            how = f"could not run: {self.error}"
        else:
            how = f"exited {self.exit_code} in {self.duration_s:.1f}s"
        return f"verify `{self.command}` {how} {at}"


def git(tree: Path, *args: str, env: Mapping[str, str]) -> str:
    """A git answer, stripped; "" when git fails (not a repository, unknown commit)."""
    return git_out(tree, *args, env=env).strip()


def git_out(tree: Path, *args: str, env: Mapping[str, str]) -> str:
    """What a reading git command prints, unstripped, paths unquoted; "" when git fails."""
    try:
        done = programs.run([*programs.GIT, "-c", "core.quotepath=false", *args], cwd=tree,
                            env=env)
    except OSError:
        return ""                                                   # no git: no answer
    return done.stdout.decode("utf-8", "replace") if done.code == 0 else ""


def tree_state(tree: Path, env: Mapping[str, str]) -> tuple[str, bool, str]:
    """(HEAD, has uncommitted changes to tracked files, the id of the git tree those files
    make, uncommitted changes included: two uncommitted states at one HEAD differ by it)."""
    dirty = bool(git(tree, "status", "--porcelain", "--untracked-files=no", env=env))
    head, _, tree_id = git(tree, "rev-parse", "HEAD", "HEAD^{tree}", env=env).partition("\n")
    if dirty and (state := git(tree, "stash", "create", env=env)):     # no ref, no change
        tree_id = git(tree, "rev-parse", f"{state}^{{tree}}", env=env)
    return head, dirty, tree_id if head else ""


def run(command: str, tree: Path, env: Mapping[str, str], timeout_s: float,
        kill_grace_s: float = KILL_GRACE_S, hide: str = "") -> Check:
    """`sh -c command` in tree (the user wrote it), its group stopped after timeout_s; lines
    naming `hide` are left out of the tail (a runner's note of the report ralph asked for)."""
    head, dirty, state = tree_state(tree, env)
    started = time.monotonic()
    with tempfile.TemporaryFile() as out:
        try:
            code = programs.run_group(["sh", "-c", command], cwd=tree, env=env, output=out,
                                      timeout=timeout_s, kill_grace=kill_grace_s)
        except OSError as err:
            return Check(command, None, 0.0, "", hashlib.sha256(b"").hexdigest(), head, dirty,
                         error=err.strerror or str(err), tree_id=state)
        duration = time.monotonic() - started
        out.seek(max(0, out.seek(0, os.SEEK_END) - 16 * TAIL_CHARS))
        lines = [line for line in out.read().decode("utf-8", "replace").rstrip("\n").split("\n")
                 if not hide or hide not in line]
        tail = "\n".join(lines[-TAIL_LINES:])[-TAIL_CHARS:]
    return Check(command, code, round(duration, 3), tail,
                 hashlib.sha256(tail.encode("utf-8")).hexdigest(), head, dirty,
                 timed_out=code is None, timeout_s=timeout_s, tree_id=state)


__all__ = ["Check", "run", "tree_state", "git", "git_out"]
