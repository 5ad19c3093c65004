"""Owns the processes an agent session leaves running outside its process group
(docs/decisions/0026): a server it started with `setsid`, a tool that detached itself, the
detached children of an agent that was itself killed. Each session's environment carries a
tag of its own (`RALPH_SESSION_TAG`), which every process it starts inherits; once the session
has ended and its group is killed, a process that still carries the tag is one of them and is
SIGKILLed. Found through /proc (Linux; elsewhere none are found); a process that dropped its
environment (`env -i`) is not found. Knows nothing of the group itself (group.py) or of how
the kill is reported (the loops')."""
from __future__ import annotations

import os
import signal

ENV = "RALPH_SESSION_TAG"


def new_tag() -> str:
    """A tag no other session, of this run or another, carries."""
    return f"{os.getpid()}-{os.urandom(6).hex()}"


def kill(tag: str, group: int) -> list[str]:
    """SIGKILL every process of this user whose environment carries `tag`, except members of
    the session's own process group `group` (killed with it, maybe not gone yet): each one
    killed as `<pid> <command line>`."""
    needle = f"{ENV}={tag}".encode()
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    killed = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                if needle not in handle.read().split(b"\0") or os.getpgid(pid) == group:
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
            os.kill(pid, signal.SIGKILL)
        except OSError:
            continue                      # gone meanwhile, or another user's
        killed.append(f"{pid} {command.strip()[:80]}")
    return killed


def line(killed: list[str]) -> str:
    """The notice of a session's end that killed them."""
    what = "1 process" if len(killed) == 1 else f"{len(killed)} processes"
    return (f"killed {what} the agent left running outside its process group: "
            + "; ".join(killed))


__all__ = ["ENV", "new_tag", "kill", "line"]
