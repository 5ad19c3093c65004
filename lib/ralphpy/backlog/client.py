"""Owns the seam between the assignment modules and the task CLI: the `TaskCall` type (a
callable taking the argv after the task command and returning `(ok, output)`; ralph.py passes
`task_calls.TaskCommand.bound(env)`, the loop's own task call) and reading whole task records
(`_export-json`, else `show`). Knows nothing of the loop, of prompts or of task files; never
writes the backlog itself (every write is a task call made by the caller). Parsing the
answers is answers.py's.

Output follows docs/contract/ralph-cli.md s.1 "Task call": stdout with trailing newlines removed,
stderr discarded, success = exit 0. So the same modules work with the in-process CLI or an external
(ralph.sh) task CLI.
"""
from __future__ import annotations

from typing import Callable

from ralphpy.backlog import answers

TaskCall = Callable[[list[str]], "tuple[bool, str]"]


def export_tasks(task_call: TaskCall) -> list[dict] | None:
    """Every task of the scope via `_export-json`, or None when the call fails (an external
    task CLI without the extension, a locked database)."""
    ok, out = task_call(["_export-json"])
    return answers.parse_export(out) if ok else None


def held_tasks(task_call: TaskCall) -> list[tuple[str, str]]:
    """(id, reason) of the unfinished held tasks, in task order ([] when the export fails)."""
    return [(r["id"], str(r["held"])) for r in export_tasks(task_call) or []
            if r.get("held") and r.get("status") not in ("done", "deleted")]


def task_record(task_call: TaskCall, task_id: str) -> dict | None:
    """One task's full record: from `_export-json` when available, else parsed from `show`.
    None when the task cannot be read."""
    tasks = export_tasks(task_call)
    if tasks is not None:
        return next((t for t in tasks if t.get("id") == task_id), None)
    ok, out = task_call(["show", task_id])
    return answers.parse_show(out) if ok and out else None


__all__ = ["TaskCall", "export_tasks", "task_record"]
