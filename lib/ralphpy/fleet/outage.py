"""Owns waiting out a lost task store (a PostgreSQL server that went away or restarts): once
the task CLI has spent its own retry budget (`RALPH_STORE_RETRY`) on one of the run's calls,
the run waits, 5 s at first and doubling up to 60 s, with one stderr line and one `store_wait`
event per wait, then makes the call again, for as long as it takes: a lost store never reads
as an empty or finished backlog, and a call is never given up half way. A signal ends the wait
(outside a session SIGINT and SIGTERM interrupt the run as anywhere else; inside the
`--parallel` pump they are queued and the pump acts on them), and the exit cleanup never waits.
Knows nothing of which call it was (backlog.calls makes it again)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from ralphpy.backlog.calls import STORE_LOST, TaskResult
from ralphpy.signals import Guard

PAUSES_S = (5, 10, 20, 40, 60)
_STEP_S = 0.2


@dataclass
class Waiter:
    """TaskCommand.store_lost for a run: waits, then says "call again"."""
    guard: Guard
    warn: Callable[[str], None]
    record: Callable[..., None]               # one events.jsonl line (RunContext.record)
    pauses_s: tuple[float, ...] = PAUSES_S    # the n-th wait's pause (the last one repeats)

    def __call__(self, result: TaskResult, attempt: int) -> bool:
        if self.guard.closing or self.guard.pending:
            return False                      # stopping: the call's failure stands
        pause = self.pauses_s[min(attempt, len(self.pauses_s)) - 1]
        detail = result.error[len(STORE_LOST):].lstrip(": ")
        line = (f"Task store unreachable ({detail}); waiting {pause:g}s before trying again "
                f"(wait {attempt})")
        self.warn(line)
        self.record("log", kind="store_wait", message=line, attempt=attempt, pause_s=pause)
        end = time.monotonic() + pause
        while (left := end - time.monotonic()) > 0:
            if self.guard.closing or self.guard.pending:
                return False                  # queued in a session: the pump handles it
            time.sleep(min(_STEP_S, left))    # outside one, a signal raises Interrupted here
        return True


__all__ = ["Waiter", "PAUSES_S"]
