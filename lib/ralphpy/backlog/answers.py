"""Owns reading the task CLI's answers (docs/contract/ralph-cli.md s.9, s.15;
docs/contract/task-cli.md s.8, s.9.9): the scope lines of `_get-scope`, the slugs of
`list --markdown`, the open/active counts of `plan-status`, whole task records from `_export-json`,
`show` and markdown-KV; the one reason the loop gives `task fail` for a session that did not finish
its task, the call that gives such a task back (give_back), and the notice for a task the session's
agent deleted instead (both loops). Pure functions
over text, which is split on "\n" only (never splitlines(): a title or description may hold
U+2028 and other characters splitlines() breaks on). Knows nothing of how the calls are made.

Markdown-KV (docs/contract/task-cli.md s.8), for task backends that only offer
`list --all --markdown`:

    ## Task web/01          ->  {"id": "web/01", "title": "Full task", "priority": 1,
    id: web/01                   "deps": ["dep/01", "dep/02"], "steps": ["first"], ...}
    title: Full task
    priority: 1
    deps: dep/01, dep/02
    steps:
    - first

`priority` and `retry_count` become ints when they are digits; `deps` a list; `steps:` a list
of the `- ` lines below it; `blocker_results:` a dict of slug -> text. A key the format does
not write (e.g. `description`) is simply absent. Lines before the first section and lines that
are not `key: value` are ignored, never an error.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

FAIL_REASON = "session exited without completing task"     # docs/contract/ralph-cli.md s.15.5
DELETED_NOTICE = "task {}: deleted by the session's agent, not finished (nothing verified it)"
# A task nobody in the session held, deleted during it: the backlog shrank without the work.
DELETED_UNHELD_NOTICE = ("task {}: deleted during the session, not done (it was not the "
                         "session's task)")

_INTS = ("priority", "retry_count")


def give_back(slug: str, reason: str, *, attempt: bool, ours: bool) -> list[str]:
    """The task call (argv) that puts back a task a session left active: `fail` after an
    attempt at it (s.15.5: its retry_count grows, which --max-attempts counts in later runs
    too); after a session that was no attempt (a usage limit, a stop of the whole run, the
    run's own Ctrl+C) `_release`, which leaves retry_count, when the task command is ours
    (`ours`): an external RALPH_TASK_CMD or a task source has no `_release` and keeps `fail`."""
    return ["fail" if attempt or not ours else "_release", slug, "--reason", reason]


@dataclass(frozen=True)
class Scope:
    repo: str
    branch: str


def scope(output: str) -> Scope:
    """s.9.3: the text after `repo:` / `branch:` on the first line starting with it, else ""."""
    def first(prefix: str) -> str:
        for line in output.split("\n"):
            if line.startswith(prefix):
                return line[len(prefix):]
        return ""
    return Scope(first("repo:"), first("branch:"))


def slugs(markdown: str) -> list[str]:
    """s.15.5: the rest of every line that starts with `id: `, in output order."""
    return [line[4:] for line in markdown.split("\n") if line.startswith("id: ")]


def result_commit(result: object) -> str | None:
    """The commit a task's result names (the text `done --result` stored), if any."""
    try:
        value = json.loads(result) if isinstance(result, str) else None
    except ValueError:
        return None
    commit = value.get("commit") if isinstance(value, dict) else None
    return commit if isinstance(commit, str) and commit.strip() else None


def all_done(output: str) -> bool:
    """s.15.6: true only when the open count (the digits opening the first line that starts
    with a digit) and the active count (the number before ` active`) are both found and 0."""
    open_count = next((m.group() for line in output.split("\n")
                       if (m := re.match(r"[0-9]+", line))), None)
    # [SH-COMPAT] ralph.sh: grep -oE '[0-9]+ active' over the whole output; more than one
    # match made its `-eq 0` test fail, i.e. "tasks remain".
    actives = re.findall(r"([0-9]+) active", output)
    if open_count is None or len(actives) != 1:
        return False
    return int(open_count) == 0 and int(actives[0]) == 0


# show's labels (docs/contract/task-cli.md s.9.9), padded to 13 characters; mapped onto _export-json
# keys.
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
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()                      # a final newline ends the last line, starts none
    for line in lines:
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
    for key in _INTS:
        if isinstance(record.get(key), str) and record[key].isdigit():
            record[key] = int(record[key])
    return record


def parse_export(text: str) -> list[dict] | None:
    """The task dicts of `_export-json` output (JSON Lines), or None when a line is not JSON."""
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


_HEADING = re.compile(r"^## Task (.+?)\s*$")
_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):(?: (.*))?$")


def parse_markdown_kv(text: str) -> list[dict]:
    """The tasks of markdown-KV text (see the module docstring), in output order."""
    tasks: list[dict] = []
    task: dict | None = None
    list_key: str | None = None          # key whose `- item` lines follow
    for line in text.split("\n"):
        heading = _HEADING.match(line)
        if heading:
            task = {"id": heading.group(1)}
            tasks.append(task)
            list_key = None
            continue
        if task is None:
            continue
        if list_key and line.startswith("- "):
            item = line[2:]
            if list_key == "blocker_results":
                slug, _, result = item.partition(": ")
                task[list_key][slug] = result
            else:
                task[list_key].append(item)
            continue
        match = _KEY.match(line)
        if not match:
            list_key = None
            continue
        key, value = match.group(1), match.group(2)
        if not value:
            list_key = key
            task[key] = {} if key == "blocker_results" else []
        else:
            list_key = None
            if key == "deps":
                task[key] = [d.strip() for d in value.split(",") if d.strip()]
            elif key in _INTS and value.strip().isdigit():
                task[key] = int(value)
            else:
                task[key] = value
    return tasks


__all__ = ["Scope", "scope", "slugs", "all_done", "parse_show", "parse_export",
           "parse_markdown_kv", "result_commit", "give_back", "FAIL_REASON"]
