"""Owns keeping `.ralph/logs/` bounded: one pass, run by the loop before each
session, that trims any log file over a per-file cap to its tail, then deletes the oldest
files beyond keep-N and beyond a total size cap. Knows nothing of how logs are named or
written (the session runner) and never touches a file it was told to protect."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ralphpy import atomic_file

DEFAULT_KEEP = 100
DEFAULT_MAX_FILE_BYTES = 25 * 1024 * 1024
DEFAULT_MAX_TOTAL_BYTES = 250 * 1024 * 1024
_MARK = b"[ralph: log trimmed to its last %d bytes by log rotation]\n"


@dataclass
class RotateReport:
    deleted: list[Path] = field(default_factory=list)
    trimmed: list[Path] = field(default_factory=list)


def _trim(path: Path, keep_bytes: int) -> None:
    """Keep the last keep_bytes of path, from a line start, behind a one-line marker; replaced
    atomically, so a crash leaves the old file or the new one."""
    before = path.stat()
    with path.open("rb") as fh:
        fh.seek(-keep_bytes, os.SEEK_END)
        tail = fh.read()
    newline = tail.find(b"\n")
    if 0 <= newline < len(tail) - 1:
        tail = tail[newline + 1:]
    # Keep the file's age: trimming must not make an old log look like the newest.
    atomic_file.replace(path, (_MARK % keep_bytes) + tail,
                        times_ns=(before.st_atime_ns, before.st_mtime_ns))


def rotate(log_dir: Path, *, keep: int = DEFAULT_KEEP,
           max_file_bytes: int | None = DEFAULT_MAX_FILE_BYTES,
           max_total_bytes: int | None = DEFAULT_MAX_TOTAL_BYTES,
           protect: Iterable[Path] = ()) -> RotateReport:
    """Bound log_dir: regular files directly inside it (no recursion, symlinks and hidden
    temp files ignored), newest first by modification time then name. 0/None turns a limit
    off. The newest file and protected ones are never deleted; protected ones never trimmed.
    A missing log_dir is nothing to do."""
    report = RotateReport()
    log_dir = Path(log_dir)
    if not log_dir.is_dir():
        return report
    protected = {Path(p).resolve() for p in protect}
    files = []
    # Run before every session: plain tuples, a Path only for a file to trim or delete.
    for entry in os.scandir(log_dir):
        if entry.name.startswith(".") or not entry.is_file(follow_symlinks=False):
            continue
        stat = entry.stat(follow_symlinks=False)
        files.append([stat.st_mtime, entry.name, entry.path, stat.st_size])
    files.sort(key=lambda f: (f[0], f[1]), reverse=True)
    for item in files:
        if max_file_bytes and item[3] > max_file_bytes and \
                (path := Path(item[2])).resolve() not in protected:
            _trim(path, max_file_bytes)
            item[3] = path.stat().st_size
            report.trimmed.append(path)
    total = sum(f[3] for f in files)
    kept = len(files)
    for index in range(len(files) - 1, 0, -1):      # oldest first, never index 0 (newest)
        over_count = keep and kept > keep
        over_size = max_total_bytes and total > max_total_bytes
        if not (over_count or over_size):
            break
        path, size = Path(files[index][2]), files[index][3]
        if path.resolve() in protected:
            continue
        path.unlink(missing_ok=True)
        report.deleted.append(path)
        kept -= 1
        total -= size
    return report


__all__ = ["rotate", "RotateReport", "DEFAULT_KEEP", "DEFAULT_MAX_FILE_BYTES",
           "DEFAULT_MAX_TOTAL_BYTES"]
