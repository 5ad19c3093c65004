"""Owns the record of the pull requests a checkout's runs opened: `.ralph/pulls.json`, one entry
per task (its number, branch, address, state, the reason it is held and the feedback that
reopened it), written atomically. A later run (or a resumed one) settles what an earlier run
left waiting. States: `waiting` (checks or a review), `manual` (green, a person merges),
`reopened` (the next session continues on its branch), `merged`, `closed` (closed by a person
without a merge: its task stays held)."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ralphpy import atomic_file

WAITING, MANUAL, REOPENED, MERGED, CLOSED = "waiting", "manual", "reopened", "merged", "closed"
OPEN_STATES = (WAITING, MANUAL, REOPENED)


@dataclass
class Pull:
    task: str
    number: int
    branch: str
    url: str
    state: str = WAITING
    reason: str = ""                    # why its task is held, as `ralph task show` says it
    feedback: str = ""                  # what reopened it: a failed check's log, a review
    seen_reviews: list[int] = field(default_factory=list)   # reviews already fed back
    checks: str = ""                    # the last check state: pending, success, failure
    issue: str = ""                     # the task's GitHub issue, when it is one


def load(path: Path) -> dict[str, Pull]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    pulls = {}
    for task, fields in data.items() if isinstance(data, dict) else ():
        try:
            pulls[task] = Pull(**fields)
        except TypeError:
            continue                    # a foreign entry is not ours
    return pulls


def save(path: Path, pulls: dict[str, Pull]) -> None:
    atomic_file.write_atomic(path, json.dumps({k: asdict(v) for k, v in pulls.items()},
                                              indent=1).encode())


__all__ = ["Pull", "load", "save", "WAITING", "MANUAL", "REOPENED", "MERGED", "CLOSED",
           "OPEN_STATES"]
