"""Owns stopping for good the agent of a session whose ralph.py died (kill -9, OOM, power
loss), for the single loop's resume and the `--parallel` recovery: the
session's write-ahead pid file is taken (session/pidfile.py: then an agent that has not started
yet never will), and what is left of the agent's process group is SIGKILLed and awaited until
no live process of it is left, so that nothing of it (a `task done` in flight, a commit) can
land after the caller reads the backlog or fails the dead session's tasks; what left the group
is found by the session's tag in the pid file and SIGKILLed too (strays.py).

Does not own the pid file handshake (session/pidfile.py), the run state (which sessions to stop
and where their pid and pid file are recorded) or what is done with their tasks.
"""
from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from pathlib import Path

from ralphpy import procs, strays
from ralphpy.session import group
from ralphpy.session import pidfile as session_pidfile

_GONE_WITHIN_S = 10.0          # a SIGKILLed process only outlives it stuck in the kernel


def _kill_group(pid: int | None, start: int | None) -> int | None:
    """The agent led its group (pgid = its pid): SIGKILL the group when that pid is gone (its
    children may live on: a pid is not reused while it names a live group) or is still the
    same process (same start time), then wait until no live member is left. The pgid when a
    signal was delivered, else None (nothing left, or the pid is another process now)."""
    if not isinstance(pid, int) or pid <= 0:
        return None
    now = procs.start_time(pid)
    if now is not None and start is not None and now != start:
        return None                                  # the pid was reused: not ours
    if not group.signal_group(pid, signal.SIGKILL):
        return None                                  # nothing of the group is left
    # Gone, not merely signalled: a process killed in the middle of `task done`'s commit may
    # still finish that write.
    deadline = time.monotonic() + _GONE_WITHIN_S
    while time.monotonic() < deadline:
        members = procs.group_members(pid)
        if members == [] or (members is None and not procs.group_exists(pid)):
            break
        time.sleep(0.01)
    return pid


@dataclass(frozen=True)
class Stopped:
    group: int | None = None        # the process group SIGKILLed (now gone); None: none was left
    strays: tuple[str, ...] = ()    # what had left it, killed too (strays.kill's)


def stop(pidfile: Path | str | None, pid: int | None, start: int | None) -> Stopped:
    """Stop a dead run's session for good. pidfile: the pid file its state named before the
    agent started (None for a state written before pid files); pid/start: what the state
    saved after the start, if anything. The pid file wins: it is written before exec, so it
    also names an agent started just before ralph.py died, and the session's tag."""
    tag = ""
    if pidfile:
        taken = session_pidfile.take(Path(pidfile))
        if taken is None and not pid:
            return Stopped()                         # its agent never ran and never will
        if taken is not None:
            pid, start, tag = taken
    group = _kill_group(pid, start)
    return Stopped(group, tuple(strays.kill(tag, group or 0)) if tag else ())


__all__ = ["Stopped", "stop"]
