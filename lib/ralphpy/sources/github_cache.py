"""Owns the GitHub source's cache of the issue listing: an indexed SQLite file,
`.ralph/sources/github/<owner>+<repo>/cache.db` (decision 0051). One row of the listing's
state (label, `since`, ETag, the dependencies outside it), one row per open labelled issue
(its number, priority and status beside what the source keeps of it, as JSON) and one per
dependency; the ready order is an index (priority, number). A call that nothing changed for
reads the state row and the rows it answers about; a change upserts or deletes the changed
rows in one transaction. Knows nothing of what an issue means (github_issues.py)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from ralphpy.sources.base import SourceError
from ralphpy.tasks.sqlite_import import sqlite3     # the C core, imported cheaply (0002)

NAME = "cache.db"
LAYOUT = 2                  # PRAGMA user_version: a file of another layout is made anew
_BUSY_TIMEOUT_S = 30        # several task commands of one clone at once wait for a writer
_SCHEMA = (
    "CREATE TABLE listing (id INTEGER PRIMARY KEY CHECK (id = 1), label TEXT, since TEXT,"
    " etag TEXT, outside TEXT NOT NULL)",
    # Narrow, for the order and the counts to read few pages; the issue's JSON beside it.
    "CREATE TABLE issues (number INTEGER PRIMARY KEY, priority INTEGER NOT NULL,"
    " status TEXT NOT NULL)",
    "CREATE TABLE issue_json (number INTEGER PRIMARY KEY, issue TEXT NOT NULL)",
    "CREATE INDEX issues_ready ON issues (priority, number)",
    "CREATE INDEX issues_status ON issues (status)",
    "CREATE TABLE deps (number INTEGER NOT NULL, dep INTEGER NOT NULL,"
    " PRIMARY KEY (number, dep)) WITHOUT ROWID",
    "CREATE INDEX deps_dep ON deps (dep)",
)
# Of the issues whose dependencies are not all met (a done issue of the listing, or one of
# `closed`, the met dependencies outside it), those not done.
_BLOCKED = ("SELECT DISTINCT d.number FROM deps d LEFT JOIN issues j ON j.number = d.dep"
            " WHERE (j.status IS NULL OR j.status != 'done')"
            " AND d.dep NOT IN (SELECT value FROM json_each(:closed))")
_ACTIVE = ("SELECT number FROM issues WHERE status = 'active' UNION"
           " SELECT number FROM issues WHERE number IN (SELECT value FROM json_each(:leased))")
_COUNTS = (f"WITH blocked(number) AS ({_BLOCKED}),"
           f" active(number) AS ({_ACTIVE}) SELECT"
           " (SELECT count(*) FROM issues),"
           " (SELECT count(*) FROM issues WHERE status = 'done'),"
           " (SELECT count(*) FROM active JOIN issues i USING (number) WHERE i.status != 'done'),"
           " (SELECT count(*) FROM active JOIN issues i USING (number) WHERE i.status != 'done'"
           "  AND number NOT IN blocked),"
           " (SELECT count(*) FROM blocked JOIN issues i USING (number) WHERE i.status != 'done'),"
           " (SELECT count(*) FROM blocked JOIN issues i USING (number) WHERE i.status != 'done'"
           "  AND number NOT IN active)")


class Unreadable(SourceError):
    """The cache file cannot be read (torn by a crash): it was removed, the next call reads
    the listing from GitHub again."""


class Entry:
    """One open labelled issue as the cache keeps it: `issue` is what the source keeps of it
    (JSON-able), `deps` the numbers its body names."""

    def __init__(self, number: int, priority: int, status: str, issue: dict, deps: list[str]):
        self.number, self.priority, self.status = number, priority, status
        self.issue, self.deps = issue, deps

    def row(self) -> tuple:
        return self.number, self.priority, self.status

    def text(self) -> tuple:
        return self.number, json.dumps(self.issue, separators=(",", ":"))


class Cache:
    """The open cache: its state row read at `head`, the issues read by number or walked in
    the ready order. After `begin_reading` every read sees one snapshot, whatever another
    process writes meanwhile."""

    def __init__(self, conn: sqlite3.Connection, path: Path | None):
        self._conn, self.path = conn, path
        self.head: dict | None = None

    @classmethod
    def open(cls, path: Path | None) -> Cache:
        """The cache in `path` (None: in memory, for a read-only source), made anew when it
        is missing, of another layout or not a database."""
        try:
            return cls._open(path)
        except sqlite3.DatabaseError as err:
            _refuse_if_locked(path, err)            # whole, only busy past the timeout
            remove(path)
            return cls._open(path)

    @classmethod
    def _open(cls, path: Path | None) -> Cache:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path) if path is not None else ":memory:",
                               timeout=_BUSY_TIMEOUT_S, isolation_level=None,
                               check_same_thread=False)
        try:
            # No fsync: a cache a crash tore is read again from GitHub (Unreadable), and the
            # sync was most of a changed call's cost (decision 0050).
            conn.execute("PRAGMA synchronous=OFF")
            if conn.execute("PRAGMA user_version").fetchone()[0] != LAYOUT:
                _make(conn)
            cache = cls(conn, path)
            cache.begin_reading()
        except BaseException:
            conn.close()
            raise
        return cache

    def close(self) -> None:
        self._conn.close()

    def __del__(self):
        self._conn.close()

    def begin_reading(self) -> None:
        """A read transaction from here on: the state row and the issues of one snapshot."""
        if self._conn.in_transaction:
            self._conn.execute("COMMIT")
        self._conn.execute("BEGIN")
        row = self._conn.execute(
            "SELECT label, since, etag, outside FROM listing WHERE id = 1").fetchone()
        self.head = None if row is None else {"label": row[0], "since": row[1], "etag": row[2],
                                              "outside": json.loads(row[3])}

    def replace(self, head: dict, entries: list[Entry]) -> None:
        """The whole listing anew (the first read, a torn or old cache, another label)."""
        def write(conn):
            for table in ("issues", "issue_json", "deps"):
                conn.execute(f"DELETE FROM {table}")
            conn.executemany("INSERT INTO issues VALUES (?, ?, ?)", (e.row() for e in entries))
            conn.executemany("INSERT INTO issue_json VALUES (?, ?)", (e.text() for e in entries))
            conn.executemany("INSERT OR IGNORE INTO deps VALUES (?, ?)",
                             ((e.number, int(d)) for e in entries for d in e.deps))
            outside = [str(n) for (n,) in conn.execute(
                "SELECT DISTINCT dep FROM deps WHERE dep NOT IN (SELECT number FROM issues)"
                " ORDER BY dep")]
            _put_head(conn, head, outside)
        self._write(write)

    def change(self, head: dict, changed: dict[int, Entry | None]) -> None:
        """The changed issues' rows made anew (None: it left the listing) and the state row,
        in one transaction: what changed costs what it touches, at any size of backlog."""
        def write(conn):
            row = conn.execute("SELECT since, outside FROM listing WHERE id = 1").fetchone()
            nonlocal head
            if row is not None and row[0] != self.head["since"]:
                # Another task command brought the cache up to date meanwhile: never back
                # to an older `since`, and this answer's ETag is not the question's now.
                head = {**head, "since": max(row[0] or "", head["since"]), "etag": None}
            touched = set(changed)
            for number, entry in changed.items():
                touched.update(d for (d,) in conn.execute(
                    "SELECT dep FROM deps WHERE number = ?", (number,)))
                conn.execute("DELETE FROM deps WHERE number = ?", (number,))
                if entry is None:
                    conn.execute("DELETE FROM issues WHERE number = ?", (number,))
                    conn.execute("DELETE FROM issue_json WHERE number = ?", (number,))
                    continue
                conn.execute("INSERT OR REPLACE INTO issues VALUES (?, ?, ?)", entry.row())
                conn.execute("INSERT OR REPLACE INTO issue_json VALUES (?, ?)", entry.text())
                deps = [int(d) for d in entry.deps]
                conn.executemany("INSERT OR IGNORE INTO deps VALUES (?, ?)",
                                 ((number, d) for d in deps))
                touched.update(deps)
            # Outside the listing: a number some issue depends on that is not an issue of it;
            # only the numbers this change touched can have come in or gone out.
            outside = set(json.loads(row[1]) if row is not None else ())
            for number in touched:
                named = conn.execute("SELECT 1 FROM deps WHERE dep = ? LIMIT 1",
                                     (number,)).fetchone()
                listed = conn.execute("SELECT 1 FROM issues WHERE number = ?",
                                      (number,)).fetchone()
                (outside.add if named and not listed else outside.discard)(str(number))
            _put_head(conn, head, sorted(outside, key=int))
        self._write(write)

    def _write(self, body) -> None:
        conn = self._conn
        if conn.in_transaction:
            conn.execute("COMMIT")
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                body(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            self.begin_reading()
        except sqlite3.DatabaseError as err:
            _refuse_if_locked(self.path, err)
            remove(self.path)
            raise Unreadable(f"the GitHub cache {self.path} is unreadable ({err}): removed, "
                             "the next call reads the issues from GitHub again") from None

    def _query(self, sql: str, params=()) -> sqlite3.Cursor:
        """A read of the snapshot; a file found torn is removed (read again next time)."""
        try:
            return self._conn.execute(sql, params)
        except sqlite3.DatabaseError as err:
            remove(self.path)
            raise Unreadable(f"the GitHub cache {self.path} is unreadable ({err}): removed, "
                             "the next call reads the issues from GitHub again") from None

    def issue(self, number: str) -> dict:
        row = self._query("SELECT issue FROM issue_json WHERE number = ?",
                          (int(number),)).fetchone()
        if row is None:
            raise KeyError(number)
        return json.loads(row[0])

    def stored(self, numbers) -> dict[int, dict]:
        """Of the issues `numbers` (ints), those the cache holds, as it holds them."""
        return {number: json.loads(issue) for number, issue in self._query(
            "SELECT number, issue FROM issue_json WHERE number IN"
            " (SELECT value FROM json_each(?))",
            (json.dumps(list(numbers)),))}

    def __contains__(self, number: object) -> bool:
        if not isinstance(number, str) or not number.isdigit():
            return False
        return self._query("SELECT 1 FROM issues WHERE number = ?",
                           (int(number),)).fetchone() is not None

    def numbers(self):
        """Every issue's number in the ready order (priority, number), read as walked."""
        for (number,) in self._query("SELECT number FROM issues ORDER BY priority, number"):
            yield str(number)

    def in_order(self, numbers) -> list[str]:
        """Of `numbers`, the issues of the listing, in the ready order."""
        wanted = json.dumps([int(n) for n in numbers if isinstance(n, str) and n.isdigit()])
        return [str(n) for (n,) in self._query(
            "SELECT number FROM issues WHERE number IN (SELECT value FROM json_each(?))"
            " ORDER BY priority, number", (wanted,))]

    def count(self) -> int:
        return self._query("SELECT count(*) FROM issues").fetchone()[0]

    def counts(self, leased, closed) -> tuple[int, int, int, int]:
        """plan-status's (open, active, done, blocked) (docs/contract/task-cli.md s.9.2),
        counted by SQLite: `leased`, the issues under a valid lease (active unless done);
        `closed`, the dependencies outside the listing that are met."""
        params = {"leased": json.dumps([int(n) for n in leased if n.isdigit()]),
                  "closed": json.dumps([int(n) for n in closed])}
        total, done, active, active_free, blocked, blocked_only = self._query(
            _COUNTS, params).fetchone()
        return total - done - active - blocked_only, active_free, done, blocked


def _make(conn: sqlite3.Connection) -> None:
    """The tables anew, in WAL mode (readers never wait for the writer)."""
    conn.execute("PRAGMA journal_mode=WAL").fetchone()
    conn.execute("BEGIN IMMEDIATE")
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] != LAYOUT:   # not made meanwhile
            for (name,) in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
                conn.execute(f'DROP TABLE IF EXISTS "{name}"')
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version={LAYOUT}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _refuse_if_locked(path: Path | None, err: sqlite3.DatabaseError) -> None:
    if isinstance(err, sqlite3.OperationalError) and "locked" in str(err):
        raise SourceError(f"the GitHub cache {path} is locked: {err}") from None


def _put_head(conn: sqlite3.Connection, head: dict, outside: list[str]) -> None:
    conn.execute("INSERT OR REPLACE INTO listing VALUES (1, ?, ?, ?, ?)",
                 (head.get("label"), head.get("since"), head.get("etag"), json.dumps(outside)))


def remove(path: Path | None) -> None:
    """The cache and SQLite's files beside it gone: the next call reads GitHub again."""
    if path is None:
        return
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass


__all__ = ["Cache", "Entry", "Unreadable", "LAYOUT", "remove"]
