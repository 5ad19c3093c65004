"""Owns the two session deadlines of issue 7 (a session timeout, default 60 min, and an idle
timeout, default 15 min, without agent output) as a pure policy over monotonic times, and
ending an agent's process group: SIGTERM, a grace period spent polling, then SIGKILL. Knows
nothing of reading the agent's output or of signal handlers; the session runner owns those."""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

TIMEOUT = "timeout"
IDLE = "idle"


@dataclass(frozen=True)
class SessionTimeouts:
    """Deadlines in seconds; 0 or None turns one off."""

    session_s: float | None = 3600.0
    idle_s: float | None = 900.0

    def check(self, started: float, last_output: float, now: float) -> str | None:
        """TIMEOUT, IDLE or None for times from time.monotonic(). The session timeout wins
        when both are due: it is the harder limit."""
        if self.session_s and now - started >= self.session_s:
            return TIMEOUT
        if self.idle_s and now - last_output >= self.idle_s:
            return IDLE
        return None

    def next_deadline(self, started: float, last_output: float) -> float | None:
        """The monotonic time of the earliest deadline (a select/poll timeout for the runner)."""
        due = [t for t in (started + self.session_s if self.session_s else None,
                           last_output + self.idle_s if self.idle_s else None) if t is not None]
        return min(due) if due else None


@dataclass(frozen=True)
class TerminateResult:
    term_sent: bool     # SIGTERM reached at least one process of the group
    kill_sent: bool     # the grace period ran out and SIGKILL was sent
    gone: bool          # no live (non-zombie) process was left in the group at the end
    waited_s: float


def _live_members(pgid: int) -> bool:
    """True while the group has a member that is not a zombie. killpg(pgid, 0) alone counts
    zombies (an unreaped leader) as alive; /proc tells them apart on Linux."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


def terminate_group(pgid: int, grace_s: float = 10.0, *,
                    reap: Callable[[], object] | None = None,
                    poll_s: float = 0.02) -> TerminateResult:
    """SIGTERM to process group pgid, then poll up to grace_s until no live member is left,
    then SIGKILL. reap (e.g. popen.poll) is called on every poll so the runner's own child
    does not linger as a zombie and keeps its exit status for the runner."""
    start = time.monotonic()

    def settled() -> bool:
        if reap is not None:
            reap()
        if _live_members(pgid):
            return False
        if reap is not None:
            reap()      # it may have turned zombie since the first reap: collect its status
        return True

    try:
        os.killpg(pgid, signal.SIGTERM)
        term_sent = True
    except ProcessLookupError:
        return TerminateResult(False, False, True, 0.0)
    except PermissionError:     # the group is someone else's now (pid reuse): not ours to end
        return TerminateResult(False, False, False, 0.0)
    deadline = start + grace_s
    while True:
        if settled():
            return TerminateResult(term_sent, False, True, time.monotonic() - start)
        if time.monotonic() >= deadline:
            break
        time.sleep(poll_s)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return TerminateResult(term_sent, False, True, time.monotonic() - start)
    # SIGKILL cannot be ignored; give the kernel a moment to tear the group down.
    kill_deadline = time.monotonic() + 5.0
    gone = False
    while time.monotonic() < kill_deadline:
        if settled():
            gone = True
            break
        time.sleep(poll_s)
    return TerminateResult(term_sent, True, gone, time.monotonic() - start)


__all__ = ["SessionTimeouts", "TerminateResult", "terminate_group", "TIMEOUT", "IDLE"]
