"""Owns the respawn guard of assignment mode (seed 000 "respawn guard"): it stops a task from
being respawned for the same status without progress. Knows nothing of the loop or of the task
CLI: the caller holds the task (`task _hold`) when a Verdict says so. Neutralising a leftover
ralph-loop file before every launch is session.respawn's.

The guard's state is `.ralph/spawns.json` (no schema change, works with any task backend):
`{"<task id>": {"status": s, "count": n, "spawnedAt": iso, "history": [...]}}`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ralphpy.assign.task_files import now_iso, read_json, write_json

DEFAULT_LIMIT = 3


@dataclass
class Verdict:
    """What a finished session did to its task's status."""
    progressed: bool
    hold: bool
    count: int
    message: str
    reason: str = ""        # the `task _hold --reason` text when hold is True


class RespawnGuard:
    """Counts consecutive spawns of a task for the same status (seed 000 "respawn guard").
    A spawn count that reaches limit without progress means: hold the task."""

    def __init__(self, path: Path, limit: int = DEFAULT_LIMIT) -> None:
        if limit < 1:
            raise ValueError(f"respawn limit must be at least 1, got: {limit}")
        self.path = Path(path)
        self.limit = limit

    def before_spawn(self, task_id: str, status: str) -> int:
        """Record that an agent is spawned for task_id at status; returns the number of
        consecutive spawns for that status, this one included."""
        state = read_json(self.path) or {}
        entry = state.get(task_id) if isinstance(state.get(task_id), dict) else None
        count = 1
        # A count already at the limit means the task was held and someone released it
        # (`task _unhold`): it starts over rather than being held after one more try.
        if entry and entry.get("status") == status and 0 < int(entry.get("count", 0)) < self.limit:
            count = int(entry["count"]) + 1
        history = (entry or {}).get("history", []) if count > 1 else []
        state[task_id] = {"status": status, "count": count, "spawnedAt": now_iso(),
                          "history": [*history, now_iso()][-self.limit:]}
        write_json(self.path, state)
        return count

    def take_back(self, task_id: str) -> None:
        """The last spawn of task_id was no attempt at it (it hit a usage limit): it does not
        count toward the limit (docs/unattended.md: a usage limit is waited out, never held
        against the task)."""
        state = read_json(self.path) or {}
        entry = state.get(task_id)
        if isinstance(entry, dict) and int(entry.get("count", 0)) > 0:
            entry["count"] = int(entry["count"]) - 1
            entry["history"] = list(entry.get("history", []))[:-1]
            write_json(self.path, state)

    def after_session(self, task_id: str, status_now: str) -> Verdict:
        """Compare the task's status now with its status at spawn."""
        state = read_json(self.path) or {}
        entry = state.get(task_id)
        if not isinstance(entry, dict):
            return Verdict(True, False, 0, f"task {task_id}: no spawn recorded")
        spawned, count = entry.get("status"), int(entry.get("count", 0))
        if status_now != spawned:
            del state[task_id]
            write_json(self.path, state)
            return Verdict(True, False, count,
                           f"task {task_id}: status {spawned} -> {status_now}: "
                           "the session completed its stage")
        if count >= self.limit:
            reason = f"respawned {count} times for status {spawned} without progress"
            return Verdict(False, True, count,
                           f"task {task_id}: {reason}; holding it and moving on", reason)
        return Verdict(False, False, count,
                       f"task {task_id}: still {spawned} after the session "
                       f"({count} of {self.limit} spawns without progress)")


__all__ = ["RespawnGuard", "Verdict", "DEFAULT_LIMIT"]
