"""Owns the processes a program ralph.py starts leaves running outside its process group
(docs/decisions/0026): an agent session's, or a verify command's. A server started with
`setsid`, a tool that detached itself, a daemon a test suite starts (`pg_ctl start`). The
program's environment carries a tag of its own (`RALPH_SESSION_TAG`), which every process it
starts inherits; once the program has ended and its group is killed, a process that still
carries the tag is one of them and is SIGKILLed. Found through procs.carrying (Linux; elsewhere
none are found); a process that dropped its environment (`env -i`) is not found. Knows nothing
of the groups themselves or of how a kill is reported (the callers')."""
from __future__ import annotations

import os
import signal
from typing import Sequence

from ralphpy import procs

ENV = "RALPH_SESSION_TAG"


def new_tag() -> str:
    """A tag no other program ralph.py starts, in this run or another, carries."""
    return f"{os.getpid()}-{os.urandom(6).hex()}"


def kill(tag: str, group: int) -> list[str]:
    """SIGKILL every process whose environment carries `tag`, except members of the program's
    own process group `group` (killed with it, maybe not gone yet): each one killed as
    `<pid> <command line>`."""
    killed = []
    for pid, pgid, command in procs.carrying(f"{ENV}={tag}") or []:
        if pgid == group:
            continue
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            continue                      # gone meanwhile
        killed.append(f"{pid} {command[:80]}")
    return killed


def line(killed: Sequence[str], who: str = "the agent") -> str:
    """The notice of the kill: `who` left them running."""
    what = "1 process" if len(killed) == 1 else f"{len(killed)} processes"
    return f"killed {what} {who} left running outside its process group: " + "; ".join(killed)


__all__ = ["ENV", "new_tag", "kill", "line"]
