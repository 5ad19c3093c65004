"""Owns reusing the backlog listing between two scope checks of a frozen run (speed:
"must not grow with the backlog's size when nothing changed"): with our embedded task CLI,
the `_export-json` listing of the last check is kept with a stat signature of the task
database taken BEFORE that listing, and reused while the database files have not been
written since. When they have (every session claims and finishes a task), the store's
fingerprint (tasks/fingerprint.py: one read transaction, no JSON) says whether anything the
scope tracks changed: when its digest is the one paired with the kept listing, the listing
still describes the scope and only the statuses are fresh; else the backlog is listed again.
Knows nothing of snapshots or reports (scope.py), nor of how the backlog is listed (the
caller passes the lister); never lists through an external RALPH_TASK_CMD.

Why it cannot miss a change: every committed write of the store goes through write(2) to
`tasks.db-wal` or (checkpoint) `tasks.db`, which moves their mtime and ctime (ctime cannot
be set back by users); a replaced file has a new inode. The signature is taken before the
listing, so a write racing the listing only makes the next check list again. Linux stamps
files with a coarse clock, so a same-size rewrite of the -wal within the same tick could keep
its stat: a signature whose files were modified within RACY_NS of the moment it was taken is
"racy" and never reused, as git does for its index (scope.hashing's rule for spec files).
A digest is paired with a listing only when the listing shows exactly the definitions the
fingerprint read (fingerprint.describes), so the pair holds whatever wrote in between; the
digest covers the table contents, so it moves with any writer, sqlite3 by hand included.
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ContextManager, Mapping

from ralphpy.backlog import readonly
from ralphpy.scope import hashing

_ABSENT = (-1, -1, -1, -1)


def db_signature(db: str) -> tuple[tuple[int, int, int, int], ...]:
    """(size, mtime_ns, ctime_ns, inode) of `tasks.db` and `tasks.db-wal` (absent: -1s).
    The -wal's ctime is left out (its mtime stands in): SQLite running as root fchown()s the
    -wal to the database's owner on every open, even a read-only one, so the store's own
    fingerprint read would move it and no signature would ever hold. Every commit write()s
    frames to the -wal, which moves its mtime (and the racy rule covers a same-tick write)."""
    sig = []
    for path, wal in ((db, False), (db + "-wal", True)):
        try:
            st = os.stat(path)
        except OSError:
            sig.append(_ABSENT)
            continue
        sig.append((st.st_size, st.st_mtime_ns, st.st_mtime_ns if wal else st.st_ctime_ns,
                    st.st_ino))
    return tuple(sig)


def _racy(sig: tuple[tuple[int, int, int, int], ...], taken_ns: int) -> bool:
    limit = taken_ns - hashing.RACY_NS
    return any(s != _ABSENT and (s[1] >= limit or s[2] >= limit) for s in sig)


def _pair(key: tuple, tasks: list[dict], critical: Callable[[], ContextManager[None]]
          ) -> str | None:
    """The store's digest when it describes exactly this listing, else None (not paired).
    Read after the listing: a write in between only makes them differ (no pair)."""
    from ralphpy.tasks import fingerprint
    with critical():
        fp = fingerprint.read(*key, tracked=True)
    return fp.digest if fp is not None and fingerprint.describes(fp, tasks) else None


@dataclass
class Listed:
    """One answer of ListingCache.listing. statuses: slug -> status read from the store
    when the kept listing served although the database was written (its statuses are old)."""

    tasks: list[dict] | None
    reused: bool                          # no new listing was made
    statuses: dict[str, str] | None = None


@dataclass
class ListingCache:
    """The last listing of one frozen run and what it was taken against. `derived` holds
    values a caller computed from that very listing (valid while it is reused); `digest`
    is the store fingerprint's digest paired with it (None: not paired)."""

    where: tuple | None = None            # (cwd, RALPH_TASKS, RALPH_TASKS_DB): db was found for
    db: str | None = None
    key: tuple | None = None              # (db, scope repo, scope branch) of the listing
    sig: tuple | None = None              # None: racy or unknown, never equal to a signature
    tasks: list[dict] | None = None
    derived: dict | None = None
    digest: str | None = None

    def _db(self, env: Mapping[str, str]) -> str | None:
        where = (os.getcwd(), env.get("RALPH_TASKS", ""), env.get("RALPH_TASKS_DB", ""))
        if where != self.where:         # git rev-parse once per cwd, not once per check
            path = readonly.db_path(env, Path(where[0]))
            self.where, self.db = where, (str(path) if path is not None else None)
        return self.db

    def _key(self, env: Mapping[str, str], embedded: bool) -> tuple | None:
        repo, branch = env.get("RALPH_SCOPE_REPO", ""), env.get("RALPH_SCOPE_BRANCH", "")
        db = self._db(env) if embedded else None
        # Without an exported scope the listing follows git's current branch: list each time.
        return (db, repo, branch) if db is not None and repo and branch else None

    def listing(self, env: Mapping[str, str], embedded: bool,
                lister: Callable[[], list[dict] | None],
                critical: Callable[[], ContextManager[None]] = contextlib.nullcontext
                ) -> Listed:
        """The last listing when the database has not moved since, or when it moved but the
        store's fingerprint shows the same definitions (then with fresh statuses); else a
        fresh one from lister(). Never reuses for an external task command. critical wraps
        the store read (ralph.py: signals deferred, as for an in-process task call)."""
        key = self._key(env, embedded)
        if key is None:
            self.forget()
            return Listed(lister(), False)
        taken_ns = hashing._clock()     # before the stat: "racy" errs on the safe side
        sig = db_signature(key[0])
        if self.tasks is not None and key == self.key and sig == self.sig:
            return Listed(self.tasks, True)
        trusted = sig if sig[0] != _ABSENT and not _racy(sig, taken_ns) else None
        if self.digest is not None and key == self.key and sig[0] != _ABSENT:
            from ralphpy.tasks import fingerprint
            with critical():            # read after the signature: a later write moves it
                fp = fingerprint.read(*key)
            if fp is not None and fp.digest == self.digest:
                self.sig = trusted      # the kept listing still holds for this signature
                return Listed(self.tasks, True, fp.statuses)
        tasks = lister()
        self.forget()
        if tasks is not None:
            self.key, self.sig, self.tasks, self.derived = key, trusted, tasks, {}
            self.digest = _pair(key, tasks, critical)
        return Listed(tasks, False)

    def remember(self, tasks: list[dict], env: Mapping[str, str], embedded: bool,
                 sig: tuple | None, taken_ns: int,
                 critical: Callable[[], ContextManager[None]] = contextlib.nullcontext) -> None:
        """Keep a listing taken elsewhere (the freeze's) with the signature taken before it,
        and pair it with the store's fingerprint when that shows the same definitions."""
        key = self._key(env, embedded)
        self.forget()
        if key is None or sig is None or sig[0] == _ABSENT:
            return
        self.key, self.tasks, self.derived = key, tasks, {}
        self.sig = None if _racy(sig, taken_ns) else sig
        self.digest = _pair(key, tasks, critical)

    def before_listing(self, env: Mapping[str, str], embedded: bool) -> tuple[tuple | None, int]:
        """(signature, clock) to take just before a listing that remember() will keep."""
        taken_ns = hashing._clock()
        db = self._db(env) if embedded else None
        return (db_signature(db) if db is not None else None), taken_ns

    def forget(self) -> None:
        self.key = self.sig = self.tasks = self.derived = self.digest = None


__all__ = ["ListingCache", "Listed", "db_signature"]
