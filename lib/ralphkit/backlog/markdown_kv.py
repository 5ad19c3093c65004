"""Owns reading markdown-KV (task-cli.md section 8) back into task dicts, for task backends
that only offer `list --all --markdown`. Knows nothing of scope freeze or of writing the
format (the task CLI renders it).

    ## Task web/01          ->  {"id": "web/01", "title": "Full task", "priority": 1,
    id: web/01                   "deps": ["dep/01", "dep/02"], "steps": ["first"], ...}
    title: Full task
    priority: 1
    deps: dep/01, dep/02
    steps:
    - first

`priority` and `retry_count` become ints when they are digits; `deps` a list;
`steps:` a list of the `- ` lines below it; `blocker_results:` a dict of slug -> text. A key
the format does not write (e.g. `description`) is simply absent. Lines before the first
section and lines that are not `key: value` are ignored, never an error.
"""
from __future__ import annotations

import re

_HEADING = re.compile(r"^## Task (.+?)\s*$")
_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):(?: (.*))?$")
_INTS = ("priority", "retry_count")


def parse_markdown_kv(text: str) -> list[dict]:
    tasks: list[dict] = []
    task: dict | None = None
    list_key: str | None = None          # key whose `- item` lines follow
    for line in text.splitlines():
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


__all__ = ["parse_markdown_kv"]
