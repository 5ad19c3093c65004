"""Owns the write-ahead handshake between a session's agent process and the recovery of its run
(the single loop's resume, the `--parallel` recovery): ralph.py names a pid file in the run
state BEFORE it starts the agent; the agent's child process, between fork and exec (so before
the agent can start anything of its own), links "<pid> <start time or -> <tag>" there; the
recovery of a dead run links "recovered" there. Whoever links first wins (a hard link never
replaces a file): when the recovery wins, the agent never runs (its child exits before exec);
when the agent won, the recovery knows the process group to kill even if ralph.py died before
it saved the pid, and the session's tag (strays.py), which finds what left the group.
Without this, a session started in the milliseconds before its ralph.py was killed was nowhere
in the state, and its leftover shell finished its task unwatched (flaky kill-and-resume test).

Does not own starting processes (session/group.py), killing them (session/dead.py) or the
run state. Linux and other POSIX systems; the start time is Linux-only (None elsewhere).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from ralphpy import procs

_RECOVERED = "recovered\n"


def _link(path: Path, text: str) -> bool:
    """Write text into a private file, then hard-link it at path: True when it is ours."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)


def child_claim(path: Path, tag: str = "") -> Callable[[], None]:
    """A preexec_fn part: the agent's child records its pid (its process group: the pool
    starts every agent as a group leader) and its session's tag, or exits at once when the
    recovery came first."""
    path = Path(path)

    def claim() -> None:
        pid = os.getpid()
        try:
            ours = _link(path, f"{pid} {procs.start_time(pid) or '-'} {tag}".rstrip() + "\n")
        except OSError:
            os._exit(1)                    # cannot record it: never run an unrecorded agent
        if not ours:
            os._exit(1)                    # its run was recovered: this session never starts
    return claim


def read(path: Path) -> tuple[int, int | None] | None:
    """Read-only (`ralph status`): (pid, start time or None) of the agent that linked its pid
    at path; None when none did (yet), or the recovery did."""
    try:
        fields = Path(path).read_text(encoding="utf-8").split()
    except (OSError, UnicodeDecodeError):
        return None
    if not fields or not fields[0].isdigit():
        return None
    return int(fields[0]), int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


def take(path: Path) -> tuple[int, int | None, str] | None:
    """For the recovery: None when no agent was (or ever will be) started for this pid file;
    else (pid, start time or None, its session's tag or "") of the agent that was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if _link(path, _RECOVERED):
        return None
    fields = path.read_text(encoding="utf-8").split()
    if not fields or not fields[0].isdigit():
        return None                        # "recovered" by an earlier recovery
    start = int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None
    return int(fields[0]), start, fields[2] if len(fields) > 2 else ""


__all__ = ["child_claim", "read", "take"]
