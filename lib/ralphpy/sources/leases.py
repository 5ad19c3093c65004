"""Owns ralph's lease record in front of a source without atomic claims: one file per claimed
task under .ralph/sources/<source>/leases/ (agent id, pid of the claimer, expiry), written and
removed only while holding an fcntl lock on leases.lock, so concurrent `claim` processes,
parallel sessions and later runs never take one task twice. Also the registered agents. Knows
nothing of the tools; a lease says "ours", the tool's status says what the task is."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from pathlib import Path
from typing import Iterator
from urllib.parse import quote, unquote

from ralphpy import atomic_file
from ralphpy.tasks.errors import TaskError

_SUFFIX = ".json"


def utc_text(epoch: float) -> str:
    """docs/contract/task-cli.md s.6's timestamp format, UTC."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch))


class Lease:
    """A plain class, as base.Task (the `dataclasses` import costs every command's start)."""

    def __init__(self, task: str, agent: str, pid: int, expires: float, retry_count: int = 0):
        self.task, self.agent, self.pid = task, agent, pid
        self.expires = expires              # epoch seconds
        self.retry_count = retry_count      # expired leases taken over (task-cli.md s.9.4)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lease) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return f"Lease({vars(self)!r})"

    @property
    def valid(self) -> bool:
        return self.expires >= time.time()

    @property
    def expires_at(self) -> str:
        return utc_text(self.expires)


class Leases:
    def __init__(self, ralph_dir: Path, source: str):
        self.dir = Path(ralph_dir) / "sources" / source / "leases"

    def _path(self, task_id: str) -> Path:
        return self.dir / (quote(task_id, safe="") + _SUFFIX)

    def all(self) -> dict[str, Lease]:
        found: dict[str, Lease] = {}
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            return found
        for name in names:
            if not name.endswith(_SUFFIX):
                continue
            try:
                data = json.loads((self.dir / name).read_text(encoding="utf-8"))
                lease = Lease(**data)
            except (OSError, ValueError, TypeError):
                continue                # a torn or foreign file is not a lease
            found[unquote(name[:-len(_SUFFIX)])] = lease
        return found

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive across processes: every lease write happens inside."""
        atomic_file.ensure_dir(self.dir)                 # .ralph/ ignores itself
        with open(self.dir.parent / "leases.lock", "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def put(self, lease: Lease) -> None:
        atomic_file.write_atomic(self._path(lease.task), json.dumps(vars(lease)).encode())

    def drop(self, task_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._path(task_id).unlink()


class Agents:
    """`agent register | list | deregister` for a source: one file per agent."""

    def __init__(self, ralph_dir: Path):
        self.dir = Path(ralph_dir) / "sources" / "agents"

    def register(self) -> str:
        import secrets              # only a registration needs these two: a command's start
        import socket               # pays for them otherwise (bench/github.py)
        atomic_file.ensure_dir(self.dir)                 # .ralph/ ignores itself
        record = {"pid": os.getpid(), "hostname": socket.gethostname(),
                  "started_at": utc_text(time.time()), "status": "active"}
        for _ in range(10):
            agent = secrets.token_hex(2)
            try:
                fd = os.open(self.dir / f"{agent}.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                continue
            with os.fdopen(fd, "w") as handle:
                json.dump(record, handle)
            return agent
        raise TaskError("failed to generate unique agent ID after 10 attempts")

    def deregister(self, agent: str) -> None:
        path = self.dir / f"{agent}.json"
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise TaskError(f"agent '{agent}' not found", 2) from None
        record["status"] = "stopped"
        atomic_file.write_atomic(path, json.dumps(record).encode())

    def active(self) -> list[tuple]:
        rows = []
        try:
            names = sorted(os.listdir(self.dir))
        except FileNotFoundError:
            return rows
        for name in names:
            try:
                record = json.loads((self.dir / name).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if record.get("status") == "active":
                rows.append((name[:-5], record.get("pid"), record.get("hostname"),
                             record.get("started_at"), "active"))
        return sorted(rows, key=lambda row: row[3] or "", reverse=True)


__all__ = ["Lease", "Leases", "Agents", "utc_text"]
