"""Owns the git questions of the task CLI: the git root (where `.ralph/tasks.db` lives) and the
scope, a (repository, branch) pair (docs/contract/task-cli.md s.3, s.7). Git is run with exactly the
spec's argument vectors, and only when the repository's files do not give git's answer
(git_files). Does not own the database or the commands."""
from __future__ import annotations

import os

from ralphpy.tasks.errors import TaskError

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs start-up time ("starts fast")
    from typing import Mapping

    from ralphpy.git_files import Layout

_NOT_A_REPO = "not inside a git repository. Run: git init"
_NO_ORIGIN = 'no git remote "origin" found. Run: git remote add origin <url>'
_DETACHED = "detached HEAD state. Run: git checkout <branch>"
_UNSET = object()


class Scope:
    """A (repository, branch) pair; every row the CLI touches belongs to exactly one."""

    __slots__ = ("repo", "branch")

    def __init__(self, repo: str, branch: str) -> None:
        self.repo, self.branch = repo, branch

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scope) and (self.repo, self.branch) == (other.repo, other.branch)

    def __repr__(self) -> str:
        return f"Scope({self.repo!r}, {self.branch!r})"


def _which(name: str, environ: Mapping[str, str]) -> str | None:
    """`name` on environ's PATH (posix_spawnp would search this process's PATH instead)."""
    for folder in environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or ".", name)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    return None


def _spawn(program: str | None, args: list[str], environ: Mapping[str, str]) -> tuple[int, bytes]:
    """Run program with argv in the current directory, stdout captured, stdin and stderr on
    /dev/null. posix_spawn instead of subprocess: same result, a fraction of the import cost."""
    if program is None:  # no git at all: same as not being in a repository
        return 127, b""
    read_end, write_end = os.pipe()
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        pid = os.posix_spawn(program, args, dict(environ), file_actions=[
            (os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, write_end, 1),
            (os.POSIX_SPAWN_DUP2, devnull, 2)])
    except OSError:  # no git at all: same as not being in a repository
        os.close(read_end)
        return 127, b""
    finally:
        os.close(write_end)
        os.close(devnull)
    with os.fdopen(read_end, "rb") as pipe:
        output = pipe.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), output


class Git:
    """Answers the git questions of one command for the current directory and environ: from
    the repository's files when they are plain (git_files), else by running git, with
    `--is-inside-work-tree` run at most once (both halves of the scope need it, s.7).
    Without a `git` on environ's PATH it is not a repository, whatever the files say."""

    def __init__(self, cwd: str, environ: Mapping[str, str]) -> None:
        self.cwd, self.environ = cwd, environ
        self._inside: bool | None = None
        self._program: str | None = None
        self._layout: object = _UNSET

    def program(self) -> str | None:
        if self._program is None:
            self._program = _which("git", self.environ) or ""
        return self._program or None

    def layout(self) -> Layout | None:
        """The repository read from its files, or None when git itself must be asked."""
        if self._layout is _UNSET:
            from ralphpy import git_files
            program = self.program()
            self._layout = program and git_files.discover(self.environ, program)
        return self._layout or None

    def run(self, *args: str) -> tuple[int, str]:
        code, out = _spawn(self.program(), ["git", *args], self.environ)
        return code, out.decode("utf-8", "surrogateescape").rstrip("\n")

    def require_work_tree(self) -> None:
        if self._inside is None:
            self._inside = (self.layout() is not None
                            or self.run("rev-parse", "--is-inside-work-tree")[0] == 0)
        if not self._inside:
            raise TaskError(_NOT_A_REPO)

    def toplevel(self) -> str:
        layout = self.layout()
        if layout is not None:
            return layout.toplevel
        code, out = self.run("rev-parse", "--show-toplevel")
        if code != 0 or not out:
            raise TaskError(_NOT_A_REPO)
        return out

    def origin_url(self) -> tuple[int, str]:
        """(exit status, output) of `git remote get-url origin`."""
        layout = self.layout()
        if layout is not None and layout.url is not None:
            return 0, layout.url
        return self.run("remote", "get-url", "origin")

    def current_branch(self) -> tuple[int, str]:
        """(exit status, output) of `git branch --show-current`."""
        layout = self.layout()
        if layout is not None:
            from ralphpy import git_files
            branch = git_files.current_branch(layout)
            if branch is not None:
                return 0, branch
        return self.run("branch", "--show-current")


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
        code, url = git.origin_url()
        if code != 0:
            raise TaskError(_NO_ORIGIN)
        repo = repo_from_url(url)
    branch = git.environ.get("RALPH_SCOPE_BRANCH", "")
    if not branch:
        git.require_work_tree()
        code, branch = git.current_branch()
        if code != 0:
            raise TaskError(_NOT_A_REPO)
        if not branch:
            raise TaskError(_DETACHED)
    return Scope(repo, branch)


__all__ = ["Scope", "Git", "repo_from_url", "resolve_scope"]
