"""Owns one session's sandbox: its plan from where the session runs (the checkout, or its
--parallel worktree of the checkout `main`) and the environment its agent gets, then the
sandboxed argv. The files the task CLI writes (the SQLite store's, a fleet's claims file) are
made to exist first and held in place (store_keeper); the checkout's `.git/hooks` is made so
that it can be shown read-only, and the agent's state folders so that what it writes there
outlives the session. Knows nothing of the loop (loop.features.Sandbox calls it)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Mapping, Sequence

from ralphpy.sandbox import backends, plan
from ralphpy.sources import entry
from ralphpy.sandbox.backends import Backend
from ralphpy.sandbox.store_keeper import Keeper


def wrap(backend: Backend, keeper: Keeper, argv: Sequence[str], *, top: Path, main: Path,
         cwd: Path, ralph_cwd: Path, env: Mapping[str, str], state: Sequence[str],
         name: str) -> list[str]:
    """argv run inside `backend`'s sandbox. top: the session's tree; main: the checkout; cwd:
    where the agent starts; ralph_cwd: ralph's own directory (a relative RALPH_TASKS_DB, a
    spilled prompt); state: the agent's files under $HOME (its adapter's); name: the session's
    own (a container's)."""
    home = env.get("HOME", "")
    for name in state:                                  # a folder the CLI writes in: kept
        if name.endswith("/") and home and home != "/":
            os.makedirs(os.path.join(home, name), exist_ok=True)
    if (main / ".git").is_dir():
        (main / ".git" / "hooks").mkdir(exist_ok=True)   # read-only inside, even empty
    db = env.get("RALPH_TASKS_DB")
    if db and "://" not in db:
        db = str(ralph_cwd / db)                        # task-cli.md s.3: relative to cwd
    store = plan.store_files(db, main)
    if store:
        keeper.hold(store[0])
    if claims := env.get("RALPH_CLAIMS_FILE"):          # a fleet store's tokens, appended to
        Path(claims).touch()
        store.append(Path(claims))
    readable = [ralph_cwd / ".ralph" / "prompts"]       # a prompt spilled to a file
    if script := env.get("RALPH_TASK_SCRIPT"):          # the task CLI's launcher, .ralph/bin
        readable.append(Path(script).parent)
    if frozen := env.get("RALPH_FROZEN_IDS_FILE"):      # a frozen scope's ids
        readable.append(Path(frozen))
    program = shutil.which(argv[0], path=env.get("PATH", os.defpath))
    inside = plan.build(plan.Tree(top, main), cwd, env, state=state, program=program,
                        store=store, readable=readable, runs_from=entry.runs_from())
    return backends.wrap(backend, inside, argv, list(env), name)


__all__ = ["wrap"]
