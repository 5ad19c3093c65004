"""Owns the git calls of `--parallel N` and `--sync`: each one runs with the run's environment
(docs/contract/ralph-cli.md s.9 exports included), never waits for an editor, and waits out git's
short-lived lock files; a network call may be given a timeout. Plus the few questions and steps both
ask for (top level, ref exists, ancestry, registered worktrees, uncommitted changes with a task
source's own files left out, a rebase that is aborted when it fails, the commit a rebase made
of a given one, setting a branch aside).
Knows nothing of tasks, branches' names or merging."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Mapping

from ralphpy import programs
from ralphpy.errors import EnvironmentFailure
from ralphpy.sources import registry as sources

_TOPLEVELS: dict[Path, Path] = {}


class Git:
    """git over one environment: `git(cwd, *args)` -> (exit code, stdout, stderr)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        # GIT_EDITOR: a rebase must never wait for an editor (unattended runs).
        self.env = {**env, "GIT_EDITOR": "true"}

    def __call__(self, cwd: Path, *args: str, check: bool = True,
                 timeout: float | None = None) -> tuple[int, str, str]:
        """Raises EnvironmentFailure when git cannot run, or (check) exits non-zero. A call
        that outlives `timeout` is killed and answers exit 124 (a fetch from a hung server)."""
        for pause in (0.05, 0.2, 0.5, None):
            try:
                done = programs.run([*programs.GIT, *args], cwd=cwd, env=self.env, timeout=timeout)
            except programs.TimeoutExpired:
                done = programs.Result(124, b"", f"timed out after {timeout:g}s".encode())
            except OSError as err:
                raise EnvironmentFailure(f"cannot run git in {cwd}: {err}") from err
            code, out, err = done.code, done.out, done.err
            # Sessions commit in their worktrees while we add or remove one: git's ref and
            # index locks (`….lock': File exists`) are held for milliseconds; wait them out.
            if code == 0 or pause is None or ".lock': File exists" not in err:
                break
            time.sleep(pause)
        if check and code != 0:
            last = ((err or out).strip().splitlines() or [f"exit {code}"])[-1]
            raise EnvironmentFailure(f"git {' '.join(args)} failed in {cwd}: {last}")
        return code, out, err

    def toplevel(self, repo: Path) -> Path:
        key = Path(repo).absolute()
        if key not in _TOPLEVELS:      # asked once per task: the checkout does not move in a run
            _TOPLEVELS[key] = Path(self(key, "rev-parse", "--show-toplevel")[1].strip()).resolve()
        return _TOPLEVELS[key]

    def ref_exists(self, repo: Path, branch: str) -> bool:
        return self(repo, "show-ref", "--verify", "--quiet", f"refs/heads/{branch}",
                    check=False)[0] == 0

    def is_ancestor(self, repo: Path, older: str, newer: str) -> bool:
        """False too when either does not exist."""
        return self(repo, "merge-base", "--is-ancestor", older, newer, check=False)[0] == 0

    def worktrees(self, repo: Path) -> list[tuple[Path, str | None]]:
        """(path, branch or None) of every registered worktree."""
        entries: list[tuple[Path, str | None]] = []
        for block in self(repo, "worktree", "list", "--porcelain")[1].split("\n\n"):
            fields = dict(line.partition(" ")[::2] for line in block.splitlines() if line)
            if "worktree" in fields:
                ref = fields.get("branch", "")
                branch = ref[len("refs/heads/"):] if ref.startswith("refs/heads/") else None
                entries.append((Path(fields["worktree"]).resolve(), branch))
        return entries

    def dirty(self, checkout: Path) -> bool:
        """Uncommitted changes to tracked files. A task source's own files (tk's .tickets/)
        change status during the run: the tracker's, not the user's edits."""
        own = [f":(exclude){path}" for path in sources.own_paths(self.env)]
        return bool(self(checkout, "status", "--porcelain", "--untracked-files=no",
                         *(["--", ".", *own] if own else []))[1].strip())

    def unmerged(self, checkout: Path) -> list[str]:
        """The files a merge, rebase or stash left in conflict."""
        return self(checkout, "diff", "--name-only", "--diff-filter=U", check=False)[1].split()

    def rebase(self, checkout: Path, upstream: str, *options: str) -> tuple[list[str], str] | None:
        """`git rebase <options> <upstream>` of the branch checked out in `checkout`. None when
        it worked; else the rebase is aborted (the branch and, with --autostash, the
        uncommitted changes as they were) and the answer is (the conflicting files, git's
        message)."""
        code, out, err = self(checkout, "rebase", "-q", *options, upstream, check=False)
        if code == 0:
            return None
        files = self.unmerged(checkout)
        self(checkout, "rebase", "--abort", check=False)  # none in progress: git says so, fine
        return files, (err or out).strip()

    def rebased_as(self, repo: Path, commit: str, since: str | None,
                   head: str) -> tuple[str, str] | None:
        """(its full id, its id now) of a commit an agent recorded (a full id or an
        abbreviation) that a rebase replaced by a commit of since..head: the one commit there
        with its author, author date and message, which a rebase keeps. None when the commit is
        in `head` as it is, unknown here, or not matched by exactly one commit."""
        code, out, _ = self(repo, "rev-parse", "-q", "--verify", f"{commit}^{{commit}}",
                            check=False)
        full = out.strip()
        if code != 0 or not full or self.is_ancestor(repo, full, head):
            return None
        key = "%an%x00%ae%x00%at%x00%B"
        wanted = self(repo, "show", "-s", f"--format={key}", full, check=False)[1]
        span = f"{since}..{head}" if since else head
        found = [sha for sha, _, rest in (entry.partition("\x00") for entry in self(
            repo, "log", f"--format=%H%x00{key}%x1e", span, check=False)[1].split("\x1e"))
            if sha.strip() and rest.strip("\n") == wanted.strip("\n")]
        return (full, found[0].strip()) if len(found) == 1 else None

    def set_aside(self, repo: Path, branch: str) -> str | None:
        """An existing `branch` is renamed to the first free `<branch>@<n>` (n from 2), so
        the name can be reused without losing its commits; the new name, or None."""
        if not self.ref_exists(repo, branch):
            return None
        n = 2
        while self.ref_exists(repo, f"{branch}@{n}"):
            n += 1
        self(repo, "branch", "-m", branch, f"{branch}@{n}")
        return f"{branch}@{n}"


__all__ = ["Git"]
