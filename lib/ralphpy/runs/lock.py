"""Owns the run lock: at most one ralph run per backlog (.ralph/run.lock). The file records run
id, pid, the pid's start time, boot id, host and start time; it is created with O_CREAT|O_EXCL,
never check-then-write. A lock whose pid is gone, was reused (other start time) or predates a
reboot is stale and taken over; takeovers are serialised with flock(2) on the lock's directory so
that two processes finding the same stale lock cannot both win. Knows nothing of the loop, the
run state or signals: the caller releases on every way out."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from ralphpy import procs
from ralphpy.atomic_file import ensure_dir, environment_failure
from ralphpy.errors import RunLocked

# A lock file that does not parse may be one being written right now (create, then write):
# wait this long for it to become readable, and only take it over once it is this old.
_UNREADABLE_WAIT_S = 1.0
_UNREADABLE_GRACE_S = 10.0


@dataclass(frozen=True)
class Holder:
    """What run.lock says about its owner."""

    run_id: str
    pid: int
    pid_start_time: int | None      # /proc/<pid>/stat field 22, clock ticks since boot
    boot_id: str | None             # /proc/sys/kernel/random/boot_id: start times are per boot
    host: str
    started_at: str

    def describe(self) -> str:
        return (f"pid {self.pid} on host {self.host} "
                f"(run {self.run_id}, started {self.started_at})")


@dataclass(frozen=True)
class RunLock:
    """A lock this process holds. took_over_from/takeover_note are set when a stale lock was
    replaced (the caller logs the note); reentrant when this process already held it."""

    path: Path
    holder: Holder
    took_over_from: Holder | None = None
    takeover_note: str | None = None
    reentrant: bool = False

    def __enter__(self) -> "RunLock":
        return self

    def __exit__(self, *exc: object) -> None:
        release(self)


@dataclass(frozen=True)
class LockState:
    """inspect()'s answer: state is 'free', 'alive', 'stale', 'foreign' or 'unreadable'."""

    state: str
    holder: Holder | None
    detail: str


# Kept under this name for the run state's callers, which record a session's agent with it.


def _me(run_id: str) -> Holder:
    pid = os.getpid()
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Holder(run_id, pid, procs.start_time(pid), procs.boot_id(), socket.gethostname(), now)


def _encode(holder: Holder) -> bytes:
    data = asdict(holder)
    keys = {"run_id": "runId", "pid_start_time": "pidStartTime", "boot_id": "bootId",
            "started_at": "startedAt"}
    return (json.dumps({keys.get(k, k): v for k, v in data.items()}) + "\n").encode()


def _decode(raw: bytes) -> Holder | None:
    try:
        data = json.loads(raw)
        holder = Holder(data["runId"], data["pid"], data.get("pidStartTime"),
                        data.get("bootId"), data["host"], data["startedAt"])
    except (ValueError, KeyError, TypeError):
        return None
    ok = (isinstance(holder.run_id, str) and type(holder.pid) is int
          and isinstance(holder.host, str) and isinstance(holder.started_at, str)
          and (holder.pid_start_time is None or type(holder.pid_start_time) is int)
          and (holder.boot_id is None or isinstance(holder.boot_id, str)))
    return holder if ok else None


def _judge(holder: Holder) -> tuple[str, str]:
    """('alive'|'stale'|'foreign', why) for a parsed lock."""
    if holder.host != socket.gethostname():
        # We cannot see another host's processes: a lock on a shared disk stays held.
        return "foreign", f"held by {holder.describe()}, another host: its pid cannot be checked"
    mine = procs.boot_id()
    if holder.boot_id and mine and holder.boot_id != mine:
        return "stale", f"{holder.describe()} predates a reboot"
    if not procs.pid_alive(holder.pid):
        return "stale", f"{holder.describe()} is gone"
    if holder.pid_start_time is not None:
        now = procs.start_time(holder.pid)
        if now is not None and now != holder.pid_start_time:
            return "stale", f"{holder.describe()} is gone (pid reused by another process)"
    return "alive", f"held by {holder.describe()}"


def _read(path: Path) -> tuple[bytes, os.stat_result] | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(), os.fstat(fh.fileno())
    except FileNotFoundError:
        return None
    except OSError as err:
        raise environment_failure("read", path, err) from None


def inspect(path: Path) -> LockState:
    """Read-only look at a lock file (for `ralph status`): who holds it and is it alive."""
    found = _read(path)
    if found is None:
        return LockState("free", None, f"no run lock at {path}")
    holder = _decode(found[0])
    if holder is None:
        return LockState("unreadable", None, f"run lock {path} is unreadable")
    state, detail = _judge(holder)
    return LockState(state, holder, detail)


@contextlib.contextmanager
def _takeover_guard(directory: Path):
    """Serialise stale takeovers and releases: flock(2) dies with its process, so this guard
    can never go stale itself. Without flock support we go on unguarded (documented)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        yield                           # cannot open the directory: unguarded, as documented
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)                    # closing drops the flock


def _create(path: Path, me: Holder) -> bool:
    """Exclusive create: True if we made the file, False if it exists."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    except OSError as err:
        raise environment_failure("create", path, err) from None
    try:
        os.write(fd, _encode(me))
        os.fsync(fd)
    except OSError as err:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise environment_failure("write", path, err) from None
    os.close(fd)
    return True


def _locked(path: Path, detail: str, step: str = "wait for it or stop it") -> RunLocked:
    return RunLocked(f"run lock {path} is {detail}; {step}")


def refuse_if_held(path: Path, what: str) -> None:
    """RunLocked when another lock (`what` says whose) is held by a live run, or may be (an
    unreadable one, another host's): a run of the same backlog under another .ralph/ (a
    session's git worktree) must not start. Reads only."""
    found = inspect(path)
    if found.state in ("alive", "foreign", "unreadable"):
        detail = found.detail if found.holder is not None else "unreadable"
        raise RunLocked(f"run lock {path} of {what} is {detail}; wait for it or stop it")


def acquire(path: Path, run_id: str) -> RunLock:
    """Take the run lock for run_id, or raise RunLocked naming the live holder."""
    path = Path(path)
    ensure_dir(path.parent)
    me = _me(run_id)
    unreadable_since: float | None = None
    for _ in range(500):                # each pass either returns, raises or saw a change
        if _create(path, me):
            return RunLock(path, me)
        found = _read(path)
        if found is None:
            continue                    # released between our create and read: try again
        raw, st = found
        holder = _decode(raw)
        if holder is None:
            age = time.time() - st.st_mtime
            if age < _UNREADABLE_GRACE_S:
                unreadable_since = unreadable_since or time.monotonic()
                if time.monotonic() - unreadable_since < _UNREADABLE_WAIT_S:
                    time.sleep(0.02)    # its creator is probably writing it right now
                    continue
                raise _locked(path, f"unreadable and {age:.0f}s old (a run may be starting)",
                              "wait for it, or remove the file if no ralph runs here")
            note = f"took over unreadable run lock {path} ({age:.0f}s old)"
            stale = None
        else:
            if (holder.pid, holder.pid_start_time, holder.host) == (me.pid, me.pid_start_time,
                                                                   me.host):
                if holder.run_id == run_id:
                    return RunLock(path, holder, reentrant=True)
                raise _locked(path, f"held by this process for run {holder.run_id}",
                              f"release it before locking run {run_id}")
            state, detail = _judge(holder)
            if state == "foreign":
                raise _locked(path, f"held by {holder.describe()}, another host whose "
                              "processes cannot be checked",
                              "wait for it, or remove the file if that run is gone")
            if state == "alive":
                raise _locked(path, detail)
            stale = holder
            note = f"took over stale run lock {path}: {detail}"
        with _takeover_guard(path.parent):
            again = _read(path)
            if again is None or again[0] != raw or again[1].st_ino != st.st_ino:
                continue                # someone else took it over or released it: re-judge
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue
            except OSError as err:
                raise environment_failure("remove stale", path, err) from None
            if _create(path, me):
                return RunLock(path, me, took_over_from=stale, takeover_note=note)
    raise _locked(path, "changing too fast to judge")


def release(lock: RunLock) -> None:
    """Remove the lock file if it is still ours; never someone else's."""
    try:
        with _takeover_guard(lock.path.parent):
            found = _read(lock.path)
            if found is None or _decode(found[0]) != lock.holder:
                return
            os.unlink(lock.path)
    except FileNotFoundError:
        return                          # the directory or the file is gone already
    except OSError as err:
        raise environment_failure("remove", lock.path, err) from None


__all__ = ["refuse_if_held", "RunLock", "Holder", "LockState", "acquire", "release", "inspect"]
