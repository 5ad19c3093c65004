"""Owns where a task is placed among `--parallel N` sessions, the parallel-safety rule of
seed 001: a task whose place overlaps that of an active session is not started alongside it.
A task's place is its component tags when it has any; else its `spec` (a planned backlog's
default component: two tasks of different specs may run at once, two of one spec may not);
a task with neither runs alone (docs/decisions/0036).

Where tags come from (the task store's schema is fixed, docs/contract/task-cli.md s.5), all merged:
- a `components` field (list or comma-separated text), as an extension table
  `task_components` would export it, and a `tags` list (backlogs such as tk's) - only its
  `component:*` entries;
- the `category` field when it starts with `component:` (`-c component:api` or
  `-c component:api,db` in `task create`, `cat` in plan-sync JSONL);
- in the description, `component:NAME` words and lines `components: a, b` (any case).
Names are compared case-insensitively. `a` overlaps `a/b` (one contains the other), and
`component:*` overlaps everything. A spec is compared by its path (case-insensitive, a leading
`./` or `specs/` dropped), never with a component name. A task with neither tags nor spec is
*unknown*: "when unsure, start fewer", so by default it runs alone (never alongside another
session).

Does not own reading tasks from the store, claiming, or the loop.
"""
from __future__ import annotations

import re
from typing import Iterable

_WORD = re.compile(r"(?<![\w:/-])component:([\w*][\w./*-]*)", re.IGNORECASE)
_LINE = re.compile(r"^\s*components?\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)
ALL = "*"
SPEC = "spec:"           # a spec's place: never a component name (those have no `:`)


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


def _spec_key(spec: object) -> str | None:
    """The place a task's `spec` gives it: `specs/auth.md`, `./auth.md` and `auth.md` alike."""
    if not isinstance(spec, str) or not spec.strip():
        return None
    path = spec.strip().replace("\\", "/").lower()
    while path.startswith("./"):
        path = path[2:]
    return SPEC + path.removeprefix("specs/")


def place_of(task: dict) -> set[str]:
    """Where a task runs among sessions: its components; without any, its spec; else
    nothing (it runs alone)."""
    found = components_of(task)
    if found:
        return found
    key = _spec_key(task.get("spec"))
    return {key} if key else set()


def overlaps(a: Iterable[str], b: Iterable[str]) -> bool:
    """True when two component sets share a name, one contains the other (`api` and
    `api/auth`), or either has `*`."""
    a, b = set(a), set(b)
    if ALL in a and b or ALL in b and a:
        return True
    return any(x == y or y.startswith(x + "/") or x.startswith(y + "/") for x in a for y in b)


def pick_compatible(candidates: list[dict], active: list[dict], capacity: int, *,
                    unplaced_alone: bool = True) -> list[dict]:
    """Up to `capacity` candidates, in their order (the store's priority order), that may start
    now: not already active (by `id`), not twice, and whose place (place_of) overlaps neither
    an active task's nor an earlier pick's. With `unplaced_alone`, a task with neither tags
    nor spec starts only when nothing runs and nothing else was picked, and nothing starts
    beside it."""
    if capacity <= 0:
        return []
    taken = [place_of(t) for t in active]
    if unplaced_alone and any(not c for c in taken):
        return []
    seen = {t.get("id") for t in active}
    picks: list[dict] = []
    for task in candidates:
        if len(picks) >= capacity:
            break
        if task.get("id") in seen:
            continue
        mine = place_of(task)
        if not mine and unplaced_alone:
            if taken:
                continue
            return [task]      # nothing runs and nothing was picked yet: it runs alone
        if any(overlaps(mine, other) for other in taken):
            continue
        seen.add(task.get("id"))
        taken.append(mine)
        picks.append(task)
    return picks


def at_once(tasks: list[dict], parallel: int) -> tuple[int, str]:
    """How many of `tasks` (the open ones) can run at once with `parallel` slots, and, when
    that is one, why: the tasks with a place picked as a first fill would pick them (in their
    order, dependencies aside), a task with neither tags nor spec counting one."""
    if not tasks:
        return 0, "no open task"
    placed = [t for t in tasks if place_of(t)]
    count = max(1, len(pick_compatible(placed, [], parallel)))
    if count > 1:
        return count, ""
    if len(tasks) == 1:
        return 1, "one open task"
    if not placed:
        return 1, "every open task is untagged and has no spec"
    if len(placed) < len(tasks):
        return 1, ("the open tasks with a spec or components share them, and those with "
                   "neither run alone")
    return 1, "every open task shares its spec or components with the others"


__all__ = ["components_of", "place_of", "overlaps", "pick_compatible", "at_once"]
