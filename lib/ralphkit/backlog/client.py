"""Owns the seam between the assignment modules and the task CLI: the `TaskCall` type (a
callable taking the argv after the task command and returning `(ok, output)`; ralph.py passes
`task_calls.TaskCommand.bound(env)`, the loop's own task call) and reading whole task records
(`_export-json`, else `show`). Knows nothing of the loop, of prompts or of task files; never
writes the backlog itself (every write is a task call made by the caller). Markdown-KV is
read by `markdown_kv.parse_markdown_kv`.

Output follows ralph-cli.md s.1 "Task call": stdout with trailing newlines removed, stderr
discarded, success = exit 0. So the same modules work with the in-process CLI or an external
(ralph.sh) task CLI.
"""
from __future__ import annotations

import json
from typing import Callable

TaskCall = Callable[[list[str]], "tuple[bool, str]"]

# show's labels (task-cli.md s.9.9), padded to 13 characters; mapped onto _export-json keys.
_SHOW_LABELS = {
    "ID": "id", "Title": "title", "Status": "status", "Priority": "priority",
    "Category": "category", "Description": "description", "Spec": "spec", "Ref": "ref",
    "Assignee": "assignee", "Lease": "lease_expires_at", "Retries": "retry_count",
    "Fail reason": "fail_reason", "Result": "result", "Created": "created_at",
    "Updated": "updated_at", "Deleted": "deleted_at",
}


def parse_show(text: str) -> dict:
    """Parse `show <id>` output into a dict with _export-json's keys. A multi-line
    description runs until the next known label line."""
    record: dict = {}
    key = None
    section = None
    for line in text.splitlines():
        label, sep, value = line.partition(":")
        if sep and label in _SHOW_LABELS and line[:13].rstrip().endswith(":") and section is None:
            key = _SHOW_LABELS[label]
            record[key] = line[13:] if len(line) > 13 else value.strip()
            continue
        if line in ("Steps:", "Dependencies:", "Blocker Results:"):
            section, key = line[:-1], None
            continue
        if section == "Steps" and line.startswith("  "):
            record.setdefault("steps", []).append(line.strip().partition(". ")[2])
        elif section == "Dependencies" and line.startswith("  "):
            record.setdefault("deps", []).append(line.strip().rsplit(" (", 1)[0])
        elif key == "description" and section is None:
            record["description"] += "\n" + line
    for key in ("priority", "retry_count"):
        if isinstance(record.get(key), str) and record[key].isdigit():
            record[key] = int(record[key])
    return record


def parse_export(text: str) -> list[dict] | None:
    """The task dicts of `_export-json` output (JSON Lines), or None when a line is not JSON.
    Split on "\n" only, not splitlines(): JSON keeps U+2028 raw inside a string."""
    tasks = []
    for line in text.split("\n"):
        if line.strip():
            try:
                item = json.loads(line)
            except ValueError:
                return None
            if isinstance(item, dict):
                tasks.append(item)
    return tasks


def export_tasks(task_call: TaskCall) -> list[dict] | None:
    """Every task of the scope via `_export-json`, or None when the call fails (an external
    task CLI without the extension, a locked database)."""
    ok, out = task_call(["_export-json"])
    return parse_export(out) if ok else None


def task_record(task_call: TaskCall, task_id: str) -> dict | None:
    """One task's full record: from `_export-json` when available, else parsed from `show`.
    None when the task cannot be read."""
    tasks = export_tasks(task_call)
    if tasks is not None:
        return next((t for t in tasks if t.get("id") == task_id), None)
    ok, out = task_call(["show", task_id])
    return parse_show(out) if ok and out else None


__all__ = ["TaskCall", "parse_show", "parse_export", "export_tasks", "task_record"]
