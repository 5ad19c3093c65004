"""Owns reusing the backlog listing between two scope checks of a frozen run (issue 5, speed:
"must not grow with the backlog's size when nothing changed"): with our embedded task CLI,
the `_export-json` listing of the last check is kept with a stat signature of the task
database taken BEFORE that listing, and reused while the database files have not been
written since. Knows nothing of snapshots or reports (scope.py), nor of how the backlog is
listed (the caller passes the lister); never lists through an external RALPH_TASK_CMD.

Why it cannot miss a change: every committed write of the store goes through write(2) to
`tasks.db-wal` or (checkpoint) `tasks.db`, which moves their mtime and ctime (ctime cannot
be set back by users); a replaced file has a new inode. The signature is taken before the
listing, so a write racing the listing only makes the next check list again. Linux stamps
files with a coarse clock, so a same-size rewrite of the -wal within the same tick could keep
its stat: a signature whose files were modified within RACY_NS of the moment it was taken is
"racy" and never reused, as git does for its index (scope_hashing's rule for spec files).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from ralphkit import backlog_readonly
from ralphkit import scope_hashing as hashing

_ABSENT = (-1, -1, -1, -1)


def db_signature(db: str) -> tuple[tuple[int, int, int, int], ...]:
    """(size, mtime_ns, ctime_ns, inode) of `tasks.db` and `tasks.db-wal` (absent: -1s)."""
    sig = []
    for path in (db, db + "-wal"):
        try:
            st = os.stat(path)
        except OSError:
            sig.append(_ABSENT)
            continue
        sig.append((st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    return tuple(sig)


def _racy(sig: tuple[tuple[int, int, int, int], ...], taken_ns: int) -> bool:
    limit = taken_ns - hashing.RACY_NS
    return any(s != _ABSENT and (s[1] >= limit or s[2] >= limit) for s in sig)


@dataclass
class ListingCache:
    """The last listing of one frozen run and what it was taken against. `derived` holds
    values a caller computed from that very listing (valid while it is reused)."""

    where: tuple | None = None            # (cwd, RALPH_TASKS_DB) the db path was found for
    db: str | None = None
    key: tuple | None = None              # (db, scope repo, scope branch) of the listing
    sig: tuple | None = None
    tasks: list[dict] | None = None
    derived: dict | None = None

    def _db(self, env: Mapping[str, str]) -> str | None:
        where = (os.getcwd(), env.get("RALPH_TASKS_DB", ""))
        if where != self.where:         # git rev-parse once per cwd, not once per check
            path = backlog_readonly.db_path(env, Path(where[0]))
            self.where, self.db = where, (str(path) if path is not None else None)
        return self.db

    def listing(self, env: Mapping[str, str], embedded: bool,
                lister: Callable[[], list[dict] | None]) -> tuple[list[dict] | None, bool]:
        """(tasks, reused): the last listing when the database has not moved since, else a
        fresh one from lister(). Never reuses for an external task command."""
        repo, branch = env.get("RALPH_SCOPE_REPO", ""), env.get("RALPH_SCOPE_BRANCH", "")
        db = self._db(env) if embedded else None
        # Without an exported scope the listing follows git's current branch: list each time.
        if db is None or not repo or not branch:
            self.forget()
            return lister(), False
        key = (db, repo, branch)
        taken_ns = hashing._clock()     # before the stat: "racy" errs on the safe side
        sig = db_signature(db)
        if self.tasks is not None and key == self.key and sig == self.sig:
            return self.tasks, True
        tasks = lister()
        self.forget()
        if tasks is not None and sig[0] != _ABSENT and not _racy(sig, taken_ns):
            self.key, self.sig, self.tasks, self.derived = key, sig, tasks, {}
        return tasks, False

    def remember(self, tasks: list[dict], env: Mapping[str, str], embedded: bool,
                 sig: tuple | None, taken_ns: int) -> None:
        """Keep a listing taken elsewhere (the freeze's) with the signature taken before it."""
        repo, branch = env.get("RALPH_SCOPE_REPO", ""), env.get("RALPH_SCOPE_BRANCH", "")
        db = self._db(env) if embedded else None
        self.forget()
        if db is None or not repo or not branch or sig is None or sig[0] == _ABSENT \
                or _racy(sig, taken_ns):
            return
        self.key, self.sig, self.tasks, self.derived = (db, repo, branch), sig, tasks, {}

    def before_listing(self, env: Mapping[str, str], embedded: bool) -> tuple[tuple | None, int]:
        """(signature, clock) to take just before a listing that remember() will keep."""
        taken_ns = hashing._clock()
        db = self._db(env) if embedded else None
        return (db_signature(db) if db is not None else None), taken_ns

    def forget(self) -> None:
        self.key = self.sig = self.tasks = self.derived = None


__all__ = ["ListingCache", "db_signature"]
