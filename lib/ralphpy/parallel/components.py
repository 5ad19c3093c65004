"""Owns component tags, the parallel-safety rule of seed 001: with `--parallel N`, a
task whose components overlap those of an active session is not started alongside it.

Where tags come from (the task store's schema is fixed, docs/contract/task-cli.md s.5), all merged:
- a `components` field (list or comma-separated text), as an extension table
  `task_components` would export it, and a `tags` list (backlogs such as tk's) - only its
  `component:*` entries;
- the `category` field when it starts with `component:` (`-c component:api` or
  `-c component:api,db` in `task create`, `cat` in plan-sync JSONL);
- in the description, `component:NAME` words and lines `components: a, b` (any case).
Names are compared case-insensitively. `a` overlaps `a/b` (one contains the other), and
`component:*` overlaps everything. A task without any tag is *unknown*: "when unsure, start
fewer", so by default it runs alone (never alongside another session).

Does not own reading tasks from the store, claiming, or the loop.
"""
from __future__ import annotations

import re
from typing import Iterable

_WORD = re.compile(r"(?<![\w:/-])component:([\w*][\w./*-]*)", re.IGNORECASE)
_LINE = re.compile(r"^\s*components?\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
ALL = "*"


def _names(text: str) -> set[str]:
    return {n.strip().strip(".").lower() for n in re.split(r"[,\s]+", text)
            if n.strip().strip(".")}


def components_of(task: dict) -> set[str]:
    """The component names of one task (a dict as `_export-json` or a backlog gives it)."""
    found: set[str] = set()
    listed = task.get("components")
    if isinstance(listed, str):
        found |= _names(listed.replace("component:", ""))
    elif isinstance(listed, (list, tuple)):
        found |= _names(",".join(str(x).removeprefix("component:") for x in listed))
    tags = task.get("tags")
    if isinstance(tags, (list, tuple)):
        found |= {t[len("component:"):].lower() for t in tags
                  if isinstance(t, str) and t.lower().startswith("component:")
                  and t[len("component:"):].strip()}
    category = task.get("category")
    if isinstance(category, str) and category.lower().startswith("component:"):
        found |= _names(category[len("component:"):].replace("component:", ""))
    description = task.get("description")
    if isinstance(description, str):
        found |= {m.lower().rstrip(".") for m in _WORD.findall(description)}
        for line in _LINE.findall(description):
            found |= _names(line.replace("component:", ""))
    return {name for name in found if name}


def overlaps(a: Iterable[str], b: Iterable[str]) -> bool:
    """True when two component sets share a name, one contains the other (`api` and
    `api/auth`), or either has `*`."""
    a, b = set(a), set(b)
    if ALL in a and b or ALL in b and a:
        return True
    return any(x == y or y.startswith(x + "/") or x.startswith(y + "/") for x in a for y in b)


def pick_compatible(candidates: list[dict], active: list[dict], capacity: int, *,
                    untagged_alone: bool = True) -> list[dict]:
    """Up to `capacity` candidates, in their order (the store's priority order), that may start
    now: not already active (by `id`), not twice, and whose components overlap neither an
    active task's nor an earlier pick's. With `untagged_alone`, a task without tags starts
    only when nothing runs and nothing else was picked, and nothing starts beside it."""
    if capacity <= 0:
        return []
    taken = [components_of(t) for t in active]
    if untagged_alone and any(not c for c in taken):
        return []
    seen = {t.get("id") for t in active}
    picks: list[dict] = []
    for task in candidates:
        if len(picks) >= capacity:
            break
        if task.get("id") in seen:
            continue
        mine = components_of(task)
        if not mine and untagged_alone:
            if taken:
                continue
            return [task]      # nothing runs and nothing was picked yet: it runs alone
        if any(overlaps(mine, other) for other in taken):
            continue
        seen.add(task.get("id"))
        taken.append(mine)
        picks.append(task)
    return picks


__all__ = ["components_of", "overlaps", "pick_compatible"]
