"""Owns the git questions of the task CLI: the git root (where `.ralph/tasks.db` lives) and the
scope, a (repository, branch) pair (spec/task-cli.md s.3, s.7). Git is run with exactly the
spec's argument vectors. Does not own the database or the commands."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from typing import Mapping

from ralphkit.tasks.errors import TaskError

_NOT_A_REPO = "not inside a git repository. Run: git init"
_NO_ORIGIN = 'no git remote "origin" found. Run: git remote add origin <url>'
_DETACHED = "detached HEAD state. Run: git checkout <branch>"


@dataclass(frozen=True)
class Scope:
    repo: str
    branch: str


@dataclass
class Git:
    """Runs git in cwd with environ; remembers `--is-inside-work-tree` so it runs at most once
    per command (the repo and branch halves both need it, s.7)."""

    cwd: str
    environ: Mapping[str, str]
    _inside: bool | None = field(default=None, repr=False)

    def run(self, *args: str) -> tuple[int, str]:
        try:
            proc = subprocess.run(["git", *args], cwd=self.cwd, env=dict(self.environ),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        except OSError:  # no git at all: same as not being in a repository
            return 127, ""
        return proc.returncode, proc.stdout.decode("utf-8", "surrogateescape").rstrip("\n")

    def require_work_tree(self) -> None:
        if self._inside is None:
            self._inside = self.run("rev-parse", "--is-inside-work-tree")[0] == 0
        if not self._inside:
            raise TaskError(_NOT_A_REPO)

    def toplevel(self) -> str:
        code, out = self.run("rev-parse", "--show-toplevel")
        if code != 0 or not out:
            raise TaskError(_NOT_A_REPO)
        return out


def repo_from_url(url: str) -> str:
    """`https://host/owner/repo.git` and `git@host:owner/repo.git` -> `owner/repo` (s.7)."""
    if url.endswith(".git"):
        url = url[:-4]
    head, sep, rest = url.partition("://")
    if sep and head and head.isascii() and head.isalpha():
        return rest.partition("/")[2]
    return url.rpartition(":")[2]


def resolve_scope(git: Git) -> Scope:
    """Repository first, then branch; each half asks git only when its variable is empty."""
    repo = git.environ.get("RALPH_SCOPE_REPO", "")
    if not repo:
        git.require_work_tree()
        code, url = git.run("remote", "get-url", "origin")
        if code != 0:
            raise TaskError(_NO_ORIGIN)
        repo = repo_from_url(url)
    branch = git.environ.get("RALPH_SCOPE_BRANCH", "")
    if not branch:
        git.require_work_tree()
        code, branch = git.run("branch", "--show-current")
        if code != 0:
            raise TaskError(_NOT_A_REPO)
        if not branch:
            raise TaskError(_DETACHED)
    return Scope(repo, branch)


__all__ = ["Scope", "Git", "repo_from_url", "resolve_scope"]
