"""Owns keeping a SQLite task store's -wal and -shm files in place while sandboxed sessions
have them bound. A sandbox binds files, not `.ralph/` (where the run state and STOP live), so
the files must exist before the session and must not be replaced during it: SQLite creates
them when a connection opens the WAL database and deletes them when its last connection
closes; a file deleted and made again outside would leave the session writing to the old one.
One connection held open from the first sandboxed session to the end of the run keeps them.
Knows nothing of the store's tables (tasks.db)."""
from __future__ import annotations

import sqlite3
from pathlib import Path


class Keeper:
    def __init__(self) -> None:
        self._conn: sqlite3.Connection | None = None

    def hold(self, db: Path) -> None:
        """Open the store once (a read makes its WAL files), if it is one and not open yet."""
        if self._conn is not None or not db.is_file():
            return
        try:
            conn = sqlite3.connect(f"file:{db}?mode=rw", uri=True, timeout=30,
                                   check_same_thread=False)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error:
            return                         # not a store: the task CLI says why, inside
        self._conn = conn

    def release(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


__all__ = ["Keeper"]
