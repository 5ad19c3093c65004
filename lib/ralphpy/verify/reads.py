"""Owns what the verify gate reads of the backlog: a part of it by an index where the store
is the embedded one (tasks.views.SELECTIONS), else the whole of it; each task's `verify:`
line; whether the loop could still start a task. Knows nothing of judging or recording."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from ralphpy.backlog import client as task_client
from ralphpy.backlog import readonly as backlog_readonly
from ralphpy.backlog.calls import TaskCommand
from ralphpy.verify import options as verify_options


def tasks(task: TaskCommand, armed: bool, env: Mapping[str, str], cwd: Path,
          selection: str = "", **params: Any) -> list[dict]:
    """The tasks of `selection` by index with the embedded task CLI, else the whole backlog (a
    superset every caller filters); another task CLI is asked only when `armed`, so a run
    without the gate makes the task calls it always made."""
    if not (task.embedded or armed):
        return []
    found = _by_index(task, env, cwd, selection, **params) if selection else None
    return found if found is not None else task_client.export_tasks(task.bound(env)) or []


def at_start(task: TaskCommand, armed: bool, env: Mapping[str, str], cwd: Path,
             since: str) -> list[dict]:
    """The tasks whose `verify:` line the run keeps from its start: those with one, and those
    created in the second of `since` (created_at cannot tell if they were there)."""
    with_line = _by_index(task, env, cwd, "verify_line")
    if with_line is None:
        return tasks(task, armed, env, cwd)
    return with_line + (_by_index(task, env, cwd, "touched", since=since) or [])


def _by_index(task: TaskCommand, env: Mapping[str, str], cwd: Path, selection: str,
              **params: Any) -> list[dict] | None:
    return backlog_readonly.export_records(selection, environ=env, cwd=cwd, **params) \
        if task.embedded else None


def task_lines(records: list[dict], known: Callable[[dict], str | None] = lambda t: None
               ) -> dict[str, str]:
    """Each task's `verify:` command, "" for none (a line added later is a change, never the
    judge); known: the line the run already knows a task by, which stays."""
    return {t["id"]: (verify_options.task_command(t.get("description")) or ""
                      if (line := known(t)) is None else line) for t in records}


def settled(task: TaskCommand, armed: bool, env: Mapping[str, str], cwd: Path,
            verified: list[str], records: list[dict] | None = None
            ) -> tuple[bool, list[dict]]:
    """(whether the loop could still start a task, the records of the `verified` tasks).
    Asked by index where the store allows; else from `records` or the whole backlog."""
    if records is None and task.embedded:
        pending = backlog_readonly.any_pending(environ=env, cwd=cwd)
        if pending is not None:
            return pending, ([] if pending else tasks(task, armed, env, cwd, "slugs",
                                                      slugs=verified))
    records = tasks(task, armed, env, cwd) if records is None else records
    done = {t["id"] for t in records if t.get("status") == "done"}
    # work the loop could still start: open or active, not held, its blockers done
    return any(t.get("status") in ("open", "active") and not t.get("held")
               and all(dep in done for dep in t.get("deps") or []) for t in records), records


__all__ = ["tasks", "at_start", "task_lines", "settled"]
