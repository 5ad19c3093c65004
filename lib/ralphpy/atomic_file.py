"""Owns durable writes of ralph.py's files: whole-file replacement (temp file in the same
directory, fsync, os.replace, fsync of the directory; mode 0644 unless the caller needs
another), one-line appends, and the translation of an OS write error (disk full, read-only,
permissions) into an EnvironmentFailure naming the path and the reason. The only atomic writer;
knows nothing of what the files hold."""
from __future__ import annotations

import errno
import os
from pathlib import Path

from ralphpy.errors import EnvironmentFailure

# Errors that mean "the environment cannot hold our files", with the next step for the user.
_HINTS = {
    errno.ENOSPC: "free some disk space and run again",
    errno.EDQUOT: "free some disk space and run again",
    errno.EFBIG: "free some disk space and run again",
    errno.EROFS: "remount it read-write or run from a writable checkout",
    errno.EACCES: "fix the permissions of {dir} and run again",
    errno.EPERM: "fix the permissions of {dir} and run again",
    errno.ENOTDIR: "a file stands where a directory is expected; move it away",
    errno.EEXIST: "a file stands where a directory is expected; move it away",
    errno.EISDIR: "a directory stands where a file is expected; move it away",
}


def environment_failure(action: str, path: Path | str, err: OSError) -> EnvironmentFailure:
    """One line: what could not be done to which path, the OS reason and the next step."""
    reason = err.strerror or str(err)
    # ralph's own files live in .ralph/; a file the user named (report --html) in its own
    # directory, which the hint names instead
    where = ".ralph/" if ".ralph" in Path(path).parts else f"{Path(path).parent}/"
    hint = _HINTS.get(err.errno or 0, "check the disk and the permissions of {dir}")
    return EnvironmentFailure(f"cannot {action} {path}: {reason}; {hint.format(dir=where)}")


def ensure_dir(path: Path) -> None:
    """mkdir -p, with an EnvironmentFailure instead of an OSError. A directory under a
    `.ralph/` gets that folder's `.gitignore` first (ignore_ralph_dir)."""
    path = Path(path)
    parts = path.parts
    if ".ralph" in parts:
        ignore_ralph_dir(Path(*parts[:len(parts) - parts[::-1].index(".ralph")]))
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError as err:      # a file where the directory should be
        raise environment_failure("create directory", path, err) from None
    except OSError as err:
        raise environment_failure("create directory", path, err) from None


def ignore_ralph_dir(ralph_dir: Path) -> None:
    """`.ralph/` (created when missing) ignores itself: a `.gitignore` holding `*`, written
    once and never rewritten (docs/contract/task-cli.md s.3, as the task CLI writes it), before
    anything else is written there, whichever command writes first, so an agent's `git add -A` never
    commits ralph's files. EnvironmentFailure when the folder cannot be created."""
    if os.path.lexists(os.path.join(ralph_dir, ".gitignore")):
        return                          # every write under .ralph/ asks: one stat when it is there
    try:
        os.makedirs(ralph_dir, exist_ok=True)
    except OSError as err:
        raise environment_failure("create directory", ralph_dir, err) from None
    ignore = Path(ralph_dir) / ".gitignore"
    try:
        fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError:                     # there already (or unwritable: the write after says so)
        return
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write("*\n")
    except OSError as err:              # a full disk: an empty .gitignore would stay for good
        ignore.unlink(missing_ok=True)
        raise environment_failure("write", ignore, err) from None


def _fsync_dir(directory: Path) -> None:
    # The rename is only durable once the directory entry is on disk (crash-safe state).
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass                            # some file systems refuse fsync on a directory
    finally:
        os.close(fd)


def replace(path: Path, data: bytes, *, mode: int | None = None,
            times_ns: tuple[int, int] | None = None, durable: bool = True) -> None:
    """Replace path with data so that a reader sees the old or the new file, never a mix:
    a temp file in the same directory, fsync, rename, fsync of the directory. The file mode
    is 0644 (less what the umask takes away), or exactly `mode` when given (an executable
    hook). times_ns: (atime, mtime) for the new file, set before the rename. durable=False
    leaves out both fsyncs, for a cache a crash may lose: readers still see the old file or
    the new one. Raises OSError; the directory must exist."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp.{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if times_ns is not None:
                os.utime(fd, ns=times_ns)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass                        # never created, or the directory is unusable
        raise
    if durable:
        _fsync_dir(path.parent)


def write_atomic(path: Path, data: bytes, *, mode: int | None = None,
                 durable: bool = True) -> None:
    """replace(), creating the directory first, with an EnvironmentFailure naming the path
    and the reason instead of an OSError."""
    path = Path(path)
    ensure_dir(path.parent)
    try:
        replace(path, data, mode=mode, durable=durable)
    except OSError as err:
        raise environment_failure("write", path, err) from None


def append_line(path: Path, line: str) -> None:
    """Append one line with a single write on an O_APPEND descriptor: concurrent appenders
    never interleave inside a line, and a crash leaves at most a torn last line."""
    ensure_dir(path.parent)
    data = (line.rstrip("\n") + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            written = os.write(fd, data)
            if written != len(data):    # only a full disk writes short here
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        finally:
            os.close(fd)
    except OSError as err:
        raise environment_failure("append to", path, err) from None


__all__ = ["replace", "write_atomic", "append_line", "ensure_dir", "ignore_ralph_dir",
           "environment_failure"]
