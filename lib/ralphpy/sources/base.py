"""Owns what every task source shares: the `Task` record the contract is answered from, the
`Source` protocol a source module implements, its errors, where its backlog lives (the root,
pinned by RALPH_TASKS_ROOT so sessions in git worktrees reach the main checkout's backlog) and
running its tool. Does not own leases (leases.py) or the contract's commands (contract_cmds.py)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Mapping, Protocol, Sequence

from ralphpy.errors import RalphError

# Contract statuses a source maps its own onto (docs/contract/task-cli.md s.5); "held" is open but
# not claimable until a human releases it (a flowctl task blocked with a reason).
OPEN, ACTIVE, DONE, HELD = "open", "active", "done", "held"


class SourceError(RalphError):
    """The source's tool failed or is missing; the message is one line."""


class ClaimedElsewhere(SourceError):
    """Another claimer (another machine) holds the task: the claim goes on to the next one."""


class Task:
    """One task as a source's tool has it. A plain class, as Listing and leases.Lease: the
    `dataclasses` import (with `inspect`, `ast`, `dis`) was a fifth of every task command's
    start over a source (bench/github.py)."""

    def __init__(self, id: str, title: str, status: str, tool_status: str, priority: int = 2,
                 deps: list[str] | None = None, tags: list[str] | None = None,
                 category: str | None = None, spec: str | None = None,
                 description: str | None = None, fail_reason: str | None = None,
                 retry_count: int = 0, created: str | None = None, extra: dict | None = None):
        self.id, self.title = id, title
        self.status = status                # OPEN, ACTIVE, DONE or HELD
        self.tool_status = tool_status      # as the tool says it (tk: in_progress, flowctl: todo)
        self.priority, self.deps, self.tags = priority, deps or [], tags or []
        self.category, self.spec, self.description = category, spec, description
        self.fail_reason, self.retry_count, self.created = fail_reason, retry_count, created
        self.extra = extra or {}            # source-specific fields for `show`

    def __repr__(self) -> str:
        return f"Task({vars(self)!r})"


class Listing:
    """Every task of the backlog in the source's order, and the files it could not read
    (each a one-line problem naming the file; such a file is skipped, never rewritten)."""

    def __init__(self, tasks: Mapping[str, Task], problems: list[str] | None = None):
        self.tasks = tasks          # a dict, or made on demand (the GitHub source's cache)
        self.problems = problems or []


class Source(Protocol):
    name: str
    root: Path
    calls: int                         # tool processes started so far (bench/sources.py)

    def load(self) -> Listing: ...
    def start(self, task_id: str) -> None: ...
    def finish(self, task_id: str, result: dict | None, summary: str) -> None: ...
    def release(self, task_id: str, reason: str) -> None: ...
    def reopen(self, task_id: str, reason: str) -> None: ...


def find_root(marker: str, environ: Mapping[str, str], cwd: Path) -> Path:
    """RALPH_TASKS_ROOT when set; else the nearest directory holding `marker` (as the tools
    search), else the git top level, else cwd."""
    pinned = environ.get("RALPH_TASKS_ROOT", "")
    if pinned:
        return Path(pinned)
    cwd = Path(cwd).absolute()
    for directory in (cwd, *cwd.parents):
        if (directory / marker).is_dir():
            return directory
    for directory in (cwd, *cwd.parents):
        if (directory / ".git").exists():
            return directory
    return cwd


def find_tool(variable: str, name: str, environ: Mapping[str, str]) -> str | None:
    """The tool's path: $<variable> when set (a path or a name on PATH), else `name` on PATH."""
    given = environ.get(variable, "") or name
    if "/" in given:
        return given if os.path.isfile(given) and os.access(given, os.X_OK) else None
    return shutil.which(given, path=environ.get("PATH", os.defpath))


def run_tool(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> tuple[int, str, str]:
    """Run the tool without a shell; (exit status, stdout, stderr). OSError: it cannot start."""
    from ralphpy import programs        # subprocess: not for a source that runs no tool (GitHub)
    done = programs.run(argv, cwd=cwd, env=env)
    return done.code, done.out, done.err


def first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else ""


__all__ = ["Task", "Listing", "Source", "SourceError", "ClaimedElsewhere", "OPEN", "ACTIVE",
           "DONE", "HELD", "find_root", "find_tool", "run_tool", "first_line"]
