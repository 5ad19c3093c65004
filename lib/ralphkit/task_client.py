"""Owns the seam between the assignment modules and the task CLI: the `TaskCall` type (a
callable taking the argv after the task command and returning `(ok, output)`), a subprocess
implementation of it, and parsing of what the task CLI prints (markdown-KV, `_export-json`,
`show`). Knows nothing of the loop, of prompts or of task files; never writes the backlog
itself (every write is a task call made by the caller).

Output follows ralph-cli.md s.1 "Task call": stdout with trailing newlines removed, stderr
discarded, success = exit 0. So the same modules work with ralph.py's own task call, the
in-process CLI or an external (ralph.sh) task CLI.
"""
from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Callable, Mapping, Sequence

TaskCall = Callable[[list[str]], "tuple[bool, str]"]

# show's labels (task-cli.md s.9.9), padded to 13 characters; mapped onto _export-json keys.
_SHOW_LABELS = {
    "ID": "id", "Title": "title", "Status": "status", "Priority": "priority",
    "Category": "category", "Description": "description", "Spec": "spec", "Ref": "ref",
    "Assignee": "assignee", "Lease": "lease_expires_at", "Retries": "retry_count",
    "Fail reason": "fail_reason", "Result": "result", "Created": "created_at",
    "Updated": "updated_at", "Deleted": "deleted_at",
}


def subprocess_task_call(command: str | Sequence[str], *, cwd: Path | None = None,
                         env: Mapping[str, str] | None = None,
                         timeout: float = 60) -> TaskCall:
    """A TaskCall that runs `command argv...` as a process (no shell), stdin /dev/null."""
    base = [command] if isinstance(command, str) else list(command)

    def call(argv: list[str]) -> tuple[bool, str]:
        try:
            proc = subprocess.run([*base, *argv], cwd=cwd, env=dict(env) if env else None,
                                  stdin=subprocess.DEVNULL, capture_output=True,
                                  encoding="utf-8", errors="replace", timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            # A missing or hanging task command counts as a failed call with empty output
            # (ralph-cli.md s.1), never as an exception in the loop.
            return False, ""
        return proc.returncode == 0, proc.stdout.rstrip("\n")

    return call


def inprocess_task_call(environ: Mapping[str, str] | None = None) -> TaskCall:
    """A TaskCall running ralph.py's own task CLI in this process (`ralphkit.tasks.cli.main`,
    which works in os.getcwd()); environ defaults to os.environ at call time."""
    def call(argv: list[str]) -> tuple[bool, str]:
        from ralphkit.tasks import cli      # imported on first use: no cost when unused
        out = io.StringIO()
        code = cli.main(list(argv), stdin=io.StringIO(""), stdout=out, stderr=io.StringIO(),
                        environ=environ)
        return code == 0, out.getvalue().rstrip("\n")

    return call


def parse_markdown_kv(text: str) -> list[dict]:
    """Parse markdown-KV sections (task-cli.md s.8) into dicts with _export-json's keys:
    `priority`/`retry_count` as int, `deps` and `steps` as lists, `blocker_results` as a dict
    of slug -> result text."""
    tasks: list[dict] = []
    current: dict | None = None
    list_key: str | None = None
    for line in text.splitlines():
        if line.startswith("## Task "):
            current = {"id": line[len("## Task "):]}
            tasks.append(current)
            list_key = None
            continue
        if current is None or not line.strip():
            continue
        if list_key and line.startswith("- "):
            item = line[2:]
            if list_key == "steps":
                current["steps"].append(item)
            else:
                slug, _, result = item.partition(": ")
                current["blocker_results"][slug] = result
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        value = value[1:] if value.startswith(" ") else value
        list_key = None
        if key in ("steps", "blocker_results") and not value:
            list_key = key
            current[key] = [] if key == "steps" else {}
        elif key in ("priority", "retry_count"):
            current[key] = int(value) if value.isdigit() else value
        elif key == "deps":
            current[key] = [d for d in value.split(", ") if d]
        else:
            current[key] = value
    return tasks


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


def export_tasks(task_call: TaskCall) -> list[dict] | None:
    """Every task of the scope via `_export-json`, or None when the call fails (an external
    task CLI without the extension, a locked database)."""
    ok, out = task_call(["_export-json"])
    if not ok:
        return None
    tasks = []
    for line in out.splitlines():
        if line.strip():
            try:
                item = json.loads(line)
            except ValueError:
                return None
            if isinstance(item, dict):
                tasks.append(item)
    return tasks


def task_record(task_call: TaskCall, task_id: str) -> dict | None:
    """One task's full record: from `_export-json` when available, else parsed from `show`.
    None when the task cannot be read."""
    tasks = export_tasks(task_call)
    if tasks is not None:
        return next((t for t in tasks if t.get("id") == task_id), None)
    ok, out = task_call(["show", task_id])
    return parse_show(out) if ok and out else None


__all__ = ["TaskCall", "subprocess_task_call", "inprocess_task_call", "parse_markdown_kv", "export_tasks",
           "task_record"]
