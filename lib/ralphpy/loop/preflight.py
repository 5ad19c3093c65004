"""Owns the checks a plan or build run makes before its first write and its first session:
which specs docs/contract/ralph-cli.md s.8's check asks for, then ([SAFER], docs/compatibility.md)
the built-in backlog is readable (a git repository, an `origin` remote or RALPH_SCOPE_REPO, a store
that opens and is a task store) and, when a session will start, the agent's program is found and
executable. Each failure is one line: UsageError (exit 1) for what the user sets up (the
agent, git), EnvironmentFailure (exit 8) for a task store that cannot be read. Under an external RALPH_TASK_CMD, as
ralph.sh's own suite drives it, neither the backlog nor the default agent is checked: that
command owns its backlog, and a missing `claude` stays s.11's error line and a finished
session. `ralph doctor` asks the same checks one by one. Not the store's first connection
(fleet.store), not a task source's own checks (sources.registry), not reading a directory
(workspace)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Mapping

from ralphpy import workspace
from ralphpy.agents import adapters
from ralphpy.backlog import readonly
from ralphpy.config import settings
from ralphpy.errors import EnvironmentFailure, UsageError
from ralphpy.loop.context import RunContext
from ralphpy.sources import registry


def specs_found(ctx: RunContext) -> bool:
    """s.8's `./specs` holds an entry, for the built-in backlog, whose planner writes tasks
    from ./specs; from a subdirectory, the repository's own specs/ counts too. A task source
    keeps its own plan (flowctl's specs are in .flow/specs/, tk's tickets are the plan):
    nothing to check (docs/task-sources.md)."""
    return specs_for(ctx.options.tasks, ctx.cwd)


def specs_for(tasks: str | None, cwd: Path) -> bool:
    """specs_found's answer for the `tasks` setting and a directory, without a run."""
    if tasks and registry.is_source(tasks):
        return True
    return workspace.specs_present(cwd) or workspace.specs_present(settings.find_repo_root(cwd))


def check(ctx: RunContext) -> None:
    """The backlog, then the agent; raises on the first failure. A build run whose backlog
    has nothing claimable starts no session (s.15: `No tasks available`), so its agent is not
    asked for."""
    external = bool(ctx.env.get("RALPH_TASK_CMD"))
    claimable = None
    if not external and ctx.task.embedded:                  # a source: sources.registry checked it
        claimable = backlog(ctx.env, ctx.cwd)
    if external and ctx.adapter.name == "claude" and not ctx.options.agent_cmd:
        return                                              # [SH-COMPAT] s.8: no other preflight
    if ctx.mode == "build" and claimable == "":
        return
    agent_program(ctx.adapter.argv("", model=ctx.model)[0], ctx.env, ctx.cwd)
    for name in ctx.options.agents:                         # agents: a fallback is run too
        program = adapters.get_adapter(name).binary[0]
        if name != ctx.adapter.name and \
                shutil.which(program, path=ctx.env.get("PATH", os.defpath)) is None:
            raise UsageError(f"cannot run the fallback agent {name}: '{program}' is not on "
                             "PATH; install it, or drop it from agents: (--fallback-agent)")


def agent_program(program: str, env: Mapping[str, str], cwd: Path) -> str:
    """The path the agent's program runs from: a name on env's PATH, or a path (relative to
    cwd, where the session starts it); else UsageError naming it and what to do."""
    if "/" in program:
        path = str(cwd / program)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        why = "is not an executable file" if os.path.exists(path) else "does not exist"
        raise UsageError(f"cannot run the agent: '{program}' {why}; fix --agent-cmd")
    found = shutil.which(program, path=env.get("PATH", os.defpath))
    if found is None:
        raise UsageError(f"cannot run the agent: '{program}' is not on PATH; install it, or "
                         "give its path with --agent-cmd")
    return found


def repository(env: Mapping[str, str], cwd: Path) -> str:
    """The top level of the git repository cwd is in, as the task CLI finds it; else
    UsageError with its cause."""
    from ralphpy.tasks.errors import TaskError
    from ralphpy.tasks.git_scope import Git
    try:
        return Git(str(cwd), env).toplevel()
    except TaskError as err:
        raise UsageError(f"cannot read the backlog: {err.message}") from None


def scope(env: Mapping[str, str], cwd: Path) -> tuple[str, str]:
    """(repository, branch) the built-in backlog's tasks are scoped to: a git repository with
    an `origin` remote, or RALPH_SCOPE_REPO; else UsageError with the task CLI's cause."""
    from ralphpy.tasks.errors import TaskError
    from ralphpy.tasks.git_scope import Git, resolve_scope
    try:
        found = resolve_scope(Git(str(cwd), env))
    except TaskError as err:
        raise UsageError(f"cannot read the backlog: {err.message}") from None
    return found.repo, found.branch


def backlog(env: Mapping[str, str], cwd: Path) -> str:
    """The built-in task CLI can name this checkout's scope and read its store, without a
    write (backlog.readonly): the same cause its own `task list` would print, in one line.
    Returns what `task peek -n 1` answers ("": nothing claimable)."""
    scope(env, cwd)                                         # git repo, origin or RALPH_SCOPE_REPO
    read = readonly.call(["peek", "-n", "1"], environ=env, cwd=cwd)
    if not read.ok:
        where = f" {_shown(read.where, cwd)}" if read.where else ""
        raise EnvironmentFailure(f"cannot read the backlog{where}: "
                                 f"{read.output.removeprefix('Error: ')}")
    return read.output


def _shown(where: str, cwd: Path) -> str:
    try:
        return os.path.relpath(where, cwd) if where.startswith("/") else where
    except ValueError:
        return where


__all__ = ["specs_found", "specs_for", "check", "agent_program", "repository", "scope", "backlog"]
