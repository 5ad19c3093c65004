"""Owns the fill-capacity logic of `--parallel N` (seed 001 "Fill capacity") as a pure
state machine over injected callables, so it is tested without processes: up to N sessions at
once; a task is launched at most once per run (a failed one waits for the next run; the run
takes a task whose session hit a usage limit out of `tried` after the wait);
`--max-iterations` counts sessions started across all slots (a failed launch counts, as in the
seed); places (components, else specs) never overlap among active sessions
(components.pick_compatible).

Does not own processes, worktrees, the task store, signals or printing: `peek` gives the
claimable tasks, `claim` takes one for a session (False: lost a race), `launch` starts it
(returns a handle, or None when it could not start), `wait` blocks until at least one active
session ends, and `stopping` says that Ctrl+C/SIGTERM/STOP asked the run to end.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ralphpy.parallel import components


@dataclass
class Active:
    task: dict
    handle: Any


@dataclass
class ParallelRun:
    """State of one parallel run. `reason` is set when `run()` returns: `complete` (nothing
    claimable and nothing active), `max_iterations`, `stopped`, or `blocked` (tasks remain
    but none may start: all were already tried in this run)."""

    parallel: int
    max_iterations: int = 0          # 0: no limit
    unplaced_alone: bool = True
    active: dict[str, Active] = field(default_factory=dict)
    tried: set[str] = field(default_factory=set)
    started: int = 0
    completed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    reason: str | None = None

    def capacity(self) -> int:
        free = self.parallel - len(self.active)
        if self.max_iterations > 0:
            free = min(free, self.max_iterations - self.started)
        return max(free, 0)

    def select(self, candidates: list[dict]) -> list[dict]:
        """The tasks to launch now, among the claimable `candidates`. A task that depends on
        an active one waits even when the store already calls it claimable: its blocker may
        be `done` while its branch is not merged yet, so it would start without that work."""
        fresh, seen = [], set()
        for task in candidates:
            task_id = task.get("id")
            deps = task.get("deps") if isinstance(task.get("deps"), list) else []
            if any(dep in self.active for dep in deps):
                continue
            if task_id and task_id not in self.tried and task_id not in seen:
                seen.add(task_id)
                fresh.append(task)
        return components.pick_compatible(fresh, [a.task for a in self.active.values()],
                                          self.capacity(), unplaced_alone=self.unplaced_alone)

    def launched(self, task: dict, handle: Any) -> None:
        self.started += 1
        self.tried.add(task["id"])
        if handle is None:
            self.failed.append(task["id"])
        else:
            self.active[task["id"]] = Active(task, handle)

    def finished(self, task_id: str, ok: bool) -> Active:
        entry = self.active.pop(task_id)
        (self.completed if ok else self.failed).append(task_id)
        return entry


def run(state: ParallelRun, *, peek: Callable[[], list[dict]],
        claim: Callable[[dict], bool], launch: Callable[[dict], Any],
        wait: Callable[[dict[str, Active]], list[tuple[str, bool]]],
        stopping: Callable[[], bool] = lambda: False) -> ParallelRun:
    """Fill free slots, wait for a session to end, repeat. Returns with `state.reason` set;
    on `stopped`, `state.active` holds the sessions still running (the caller stops them)."""
    while True:
        if stopping():
            state.reason = "stopped"
            return state
        picked = False
        if state.capacity() > 0:
            candidates = peek()
            for task in state.select(candidates):
                if stopping():
                    break
                if not claim(task):      # another agent took it first: not a start, and
                    state.tried.add(task["id"])   # not tried again (the loop ends)
                    continue
                picked = True
                state.launched(task, launch(task))
            if not state.active and not picked:
                if state.max_iterations > 0 and state.started >= state.max_iterations:
                    state.reason = "max_iterations"
                elif any(t.get("id") and t["id"] not in state.tried for t in candidates):
                    continue             # claims were lost: look again among the others
                else:
                    state.reason = "blocked" if candidates else "complete"
                return state
        if not state.active:
            if state.max_iterations > 0 and state.started >= state.max_iterations:
                state.reason = "max_iterations"
                return state
            continue
        for task_id, ok in wait(state.active):
            state.finished(task_id, ok)


__all__ = ["ParallelRun", "Active", "run"]
