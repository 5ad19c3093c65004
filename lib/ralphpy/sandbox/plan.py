"""Owns what a sandboxed session may see and write, as data (docs/sandbox.md): an allow list of
mounts, in order, each later one covering what an earlier one showed. The rest of the file
system read-only; a private /tmp; $HOME an empty tmpfs but for the agent's own state; the
task's tree read-write but for its git hooks and config; of the main checkout's `.git` what a
commit needs; of `.ralph/` only the task store's files and what the task CLI reads. Knows
nothing of a backend's options (bwrap, oci) or of the session's loop."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

RW, RO, TMPFS = "rw", "ro", "tmpfs"
# SQLite in WAL mode reads and writes the database and two files beside it; the main one
# alone would be a store the agent cannot commit to (docs/sandbox.md, "The task store").
STORE_SUFFIXES = ("", "-wal", "-shm")


@dataclass(frozen=True)
class Mount:
    kind: str                    # RW, RO or TMPFS
    path: str                    # the same path inside as outside


@dataclass(frozen=True)
class Plan:
    mounts: tuple[Mount, ...]    # in order: a later mount covers an earlier one
    cwd: str                     # where the agent starts
    env: Mapping[str, str] = field(default_factory=dict)   # set inside the sandbox only
    home: str = ""

    def paths(self, kind: str) -> list[str]:
        return [m.path for m in self.mounts if m.kind == kind]


@dataclass(frozen=True)
class Tree:
    """The task's tree and where its git data is: the checkout (`main` is `top`), or a
    `--parallel` worktree of the checkout `main`."""
    top: Path
    main: Path

    @property
    def is_worktree(self) -> bool:
        return self.top != self.main


def git_dirs(top: Path) -> tuple[Path, Path | None]:
    """(the repository's common `.git`, a linked worktree's own git dir or None): read from
    the worktree's `.git` file and its `commondir`, not asked of git (a session's start stays
    cheap)."""
    dot_git = top / ".git"
    if not dot_git.is_file():
        return dot_git, None
    try:
        own = Path(dot_git.read_text(encoding="utf-8").removeprefix("gitdir:").strip())
        own = own if own.is_absolute() else (top / own).resolve()
        common = (own / (own / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except OSError:
        return dot_git, None
    return common, own


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _program_folders(program: str) -> list[str]:
    """The folders of each step from the program's path to its file: a PATH entry's link
    (`node_modules/.bin/claude` -> `../@anthropic-ai/claude-code/cli.js`) is followed inside
    the sandbox by its path as written, which a folder shown by its resolved path alone
    would not hold."""
    folders, path = [], program
    for _ in range(40):                                 # as the kernel's bound on a chain
        folders.append(os.path.dirname(path))
        if not os.path.islink(path):
            break
        path = os.path.normpath(os.path.join(os.path.dirname(path), os.readlink(path)))
    return folders + [os.path.dirname(os.path.realpath(program))]


def build(tree: Tree, cwd: Path, env: Mapping[str, str], *, state: Iterable[str] = (),
          program: str | None = None, store: Iterable[Path] = (),
          readable: Iterable[Path] = (), runs_from: Iterable[str] = ()) -> Plan:
    """The plan of one session. state: the agent's state under $HOME (adapter-declared names,
    read-write, those that exist); program: the agent's resolved path (its folder read-only);
    store: files the task CLI writes (the SQLite files, a claims file); readable: files it
    reads (a frozen scope's ids); runs_from: the folders the task CLI runs from (ralph's
    package and interpreter, wherever they are installed). Those and $PATH's folders the
    tmpfs mounts would hide: read-only."""
    home = env.get("HOME", "")
    hidden = ["/tmp"] + ([home] if home and home != "/" else [])
    mounts = [Mount(TMPFS, p) for p in hidden]
    if tree.is_worktree:
        hidden.append(str(tree.main))
        mounts.append(Mount(TMPFS, str(tree.main)))   # other worktrees, the checkout's files
    shown = [str(tree.top)]
    folders = [p for p in env.get("PATH", "").split(os.pathsep) if p] + list(runs_from)
    if program:
        folders += _program_folders(program)
    for folder in dict.fromkeys(folders):
        if _under(folder, hidden) and not _under(folder, shown) and os.path.isdir(folder):
            mounts.append(Mount(RO, folder))
    if home and home != "/":
        for name in state:
            path = os.path.join(home, name.rstrip("/"))
            if os.path.exists(path):
                mounts.append(Mount(RW, path))
    mounts.append(Mount(RW, str(tree.top)))
    common, own = git_dirs(tree.top)
    if own is not None:
        mounts.append(Mount(RW, str(common)))          # objects, refs: what a commit writes
        if (common / "worktrees").is_dir():
            mounts.append(Mount(RO, str(common / "worktrees")))   # the other sessions'
        if own is not None and own.is_dir():
            mounts.append(Mount(RW, str(own)))          # its index and HEAD
    for name in ("hooks", "config"):                    # nothing a session writes runs on the host
        if (common / name).exists():
            mounts.append(Mount(RO, str(common / name)))
    ralph = tree.main / ".ralph"
    if not tree.is_worktree and ralph.is_dir():
        mounts.append(Mount(RO, str(ralph)))            # run state, STOP/PAUSE, claims, verify
    elif (ralph / "prompts").is_dir():
        mounts.append(Mount(RO, str(ralph / "prompts")))
    for path in readable:
        if path.exists():
            mounts.append(Mount(RO, str(path)))
    for path in store:
        if path.exists():
            mounts.append(Mount(RW, str(path)))
    inside = {"IS_SANDBOX": "1", "TMPDIR": "/tmp"}      # claude's check for --danger as root
    return Plan(tuple(mounts), str(cwd), inside, home)


def store_files(db: str | None, main: Path) -> list[Path]:
    """The SQLite store's files the task CLI writes: RALPH_TASKS_DB (a path) or the checkout's
    `.ralph/tasks.db`, with its -wal and -shm; none for a server's URL."""
    if db and "://" in db:
        return []
    base = Path(db) if db else main / ".ralph" / "tasks.db"
    return [Path(f"{base}{suffix}") for suffix in STORE_SUFFIXES]


__all__ = ["Mount", "Plan", "Tree", "build", "store_files", "git_dirs", "RW", "RO", "TMPFS"]
