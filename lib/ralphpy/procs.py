"""Owns what ralph.py asks of the process table: whether a pid or a process group still
exists, a process's start time (tells it from a later process that reused its pid), the boot
id (start times count from boot), the live members of a process group, and the processes
whose environment holds a given entry. The only reader of
/proc; Linux answers fully, elsewhere the /proc answers are None. Knows nothing of sessions,
locks or what the processes are; never sends a signal that changes a process."""
from __future__ import annotations

import os
from pathlib import Path

_PROC = Path("/proc")


def _stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of /proc/<pid>/stat from field 3 (state) on; None when unreadable.
    comm (field 2) may hold spaces and ')': the fields after the last ')' start at field 3."""
    try:
        raw = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    return raw[raw.rindex(b")") + 2:].split()


def pid_alive(pid: int) -> bool:
    """True while pid names a process (a zombie included), owned by us or not."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True                     # exists, owned by another user
    return True


def group_exists(pgid: int) -> bool:
    """True while process group pgid has a member (a zombie leader included)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True                     # EPERM: it exists, it is someone else's
    return True


def start_time(pid: int) -> int | None:
    """pid's start time (/proc/<pid>/stat field 22, clock ticks since boot); None when unknown."""
    fields = _stat_fields(pid)
    try:
        return int(fields[22 - 3]) if fields is not None else None
    except (IndexError, ValueError):
        return None


def boot_id() -> str | None:
    """This boot's id (/proc/sys/kernel/random/boot_id); None when unknown."""
    try:
        return (_PROC / "sys" / "kernel" / "random" / "boot_id").read_text().strip() or None
    except OSError:
        return None


def group_members(pgid: int) -> list[int] | None:
    """The live (not zombie) processes of group pgid; None where /proc cannot tell."""
    try:
        names = os.listdir(_PROC)
    except OSError:
        return None
    wanted = str(pgid).encode()
    live = []
    for name in names:
        if not name.isdigit():
            continue
        fields = _stat_fields(name)     # state is field 3, pgrp field 5
        if fields is not None and len(fields) > 2 and fields[2] == wanted \
                and fields[0] not in (b"Z", b"X"):
            live.append(int(name))
    return live


def carrying(entry: str) -> list[tuple[int, int, str]] | None:
    """The processes whose environment holds `entry` (`NAME=value`), as (pid, process group,
    command line); only this user's can be read (root's: all). None where /proc cannot tell."""
    try:
        names = os.listdir(_PROC)
    except OSError:
        return None
    needle = entry.encode()
    found = []
    for name in names:
        if not name.isdigit():
            continue
        # Every process is read after every session: raw reads, and the split into entries
        # only where the bytes hold the entry at all (a Path per process cost 2.5x as much).
        environ = _read(f"{_PROC}/{name}/environ")
        if environ is None or needle not in environ or needle not in environ.split(b"\0"):
            continue                    # gone meanwhile, another user's, or not tagged
        command = _read(f"{_PROC}/{name}/cmdline")
        try:
            pgid = os.getpgid(int(name))
        except OSError:
            continue
        found.append((int(name), pgid, (command or b"").replace(b"\0", b" ")
                      .decode("utf-8", "replace").strip()))
    return found


def _read(path: str) -> bytes | None:
    """A /proc file's bytes, or None when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


__all__ = ["pid_alive", "group_exists", "start_time", "boot_id", "group_members", "carrying"]
