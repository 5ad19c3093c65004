"""Helpers shared by the tests/test_task_*.py files (not fixtures: plain functions).

A test's `db` is the backlog under test: a SQLite file (a Path) or a PostgreSQL store
(`PgStore`, see conftest.any_store); query() and dump() read either, with the same SQL text
as the task CLI (its own translation), so one assertion serves both stores."""
from __future__ import annotations

import json
import re
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pgserver import Cluster, pg_query


@dataclass(frozen=True)
class PgStore:
    url: str

    def __str__(self) -> str:
        return self.url


def jsonl(*tasks: dict) -> str:
    return "".join(json.dumps(t) + "\n" for t in tasks)


def ok(proc) -> str:
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr == ""
    return proc.stdout


def fails(proc, code: int, stderr: str) -> None:
    assert (proc.returncode, proc.stderr, proc.stdout) == (code, stderr, "")


REFUSALS = ("wrong password", "unknown database", "no password", "port not a number")


def refused_url(server: Cluster, database: str, case: str) -> tuple[str, str]:
    """A URL of the server that it refuses, for a case of REFUSALS, and the words of its
    refusal. The wrong password is hunter2, which a test checks never shows."""
    if case == "wrong password":
        return (server.password_url(database, "hunter2"),
                'FATAL: password authentication failed for user "ralph_pw"')
    if case == "unknown database":
        return server.password_url("no_such_db"), 'FATAL: database "no_such_db" does not exist'
    if case == "no password":                   # libpq refuses before the server can
        url = server.password_url(database).replace(":secret@", "@")
        return url, "fe_sendauth: no password supplied"
    if case == "port not a number":
        url = server.password_url(database, "hunter2").replace(f":{server.port}/", ":port/")
        return url, 'invalid integer value "port" for connection option "port"'
    raise ValueError(f"no refused URL for {case!r}")


_PG_TABLES = ("tasks", "task_deps", "agents", "task_holds", "ralph_schema")


def dump(db: Path | PgStore) -> list[str]:
    """Every row of the store, to compare before and after a command that must write nothing."""
    if isinstance(db, PgStore):
        return [f"{table}: {row}" for table in _PG_TABLES
                for row in query(db, f"SELECT * FROM {table} ORDER BY 1")]
    conn = sqlite3.connect(db)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def query(db: Path | PgStore, sql: str, params: tuple = ()) -> list[tuple]:
    if isinstance(db, PgStore):
        from ralphpy.tasks.pg_dialect import translate
        if sql.startswith("PRAGMA"):  # SQLite's switches: PostgreSQL always checks foreign keys
            return []
        return pg_query(db.url, translate(sql), params)
    conn = sqlite3.connect(db, timeout=10)
    try:
        with conn:
            return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def work_of(db: Path | PgStore, body) -> int:
    """How much of the store body(conn, scope) reads, in one transaction rolled back after it:
    task rows fetched, by PostgreSQL's own counters of the transaction, or SQLite's virtual
    machine steps. Compare two calls on one store, never numbers across stores."""
    from ralphpy.tasks.git_scope import Scope
    scope = Scope(*query(db, "SELECT scope_repo, scope_branch FROM tasks LIMIT 1")[0])
    if isinstance(db, PgStore):
        from ralphpy.tasks import pg
        conn = pg.Connection(db.url, {}, lambda line: None)
        conn.open()
        try:
            conn.raw.execute("BEGIN")
            body(conn, scope)
            return int(conn.raw.execute(
                "SELECT coalesce(sum(seq_tup_read + coalesce(idx_tup_fetch, 0)), 0) "
                "FROM pg_stat_xact_user_tables WHERE relname = 'tasks'").fetchone()[0])
        finally:
            conn.raw.execute("ROLLBACK")
            conn.close()
    conn = sqlite3.connect(db, isolation_level=None)
    steps = [0]

    def step() -> int:
        steps[0] += 1
        return 0
    try:
        conn.execute("BEGIN")
        conn.set_progress_handler(step, 1)
        body(conn, scope)
        conn.set_progress_handler(None, 1)
        return steps[0]
    finally:
        conn.execute("ROLLBACK")
        conn.close()


class _Recording:
    """A psycopg connection (or one of its cursors) that notes the SQL text of each statement
    it is sent: execute's, and executemany's once per call."""

    def __init__(self, raw, sent: list[str]) -> None:
        self._raw, self._sent = raw, sent

    def execute(self, sql, params=()):
        self._sent.append(sql)
        return self._raw.execute(sql, params)

    def executemany(self, sql, rows):
        self._sent.append(sql)
        return self._raw.executemany(sql, rows)

    def cursor(self, *args, **kwargs):
        return _Recording(self._raw.cursor(*args, **kwargs), self._sent)

    def __getattr__(self, name):
        return getattr(self._raw, name)


def _recorded_connection(url: str, sent: list[str]):
    """An open pg.Connection whose `raw`, the first one and each one it opens again after a
    lost connection, is wrapped in a _Recording as it is set."""
    from ralphpy.tasks import pg

    class Recorded(pg.Connection):
        @property
        def raw(self):
            return self._recorded_raw

        @raw.setter
        def raw(self, value) -> None:
            self._recorded_raw = value if value is None else _Recording(value, sent)

    conn = Recorded(url, {}, lambda line: None)
    conn.open()
    return conn


@contextmanager
def traced(db: Path | PgStore):
    """(conn, scope, sent): a connection to the store as the task CLI opens it, and the SQL
    text of every statement it sends from then on, to count what a command costs. Call the
    command's function with a Ctx on conn. PostgreSQL: each execute and each executemany once
    (its rows aside), on the connection and its cursors, on the first connection and on any
    opened again after it was lost (the attempt that met the lost one included); not the schema
    check each connection makes before it is handed over. SQLite: every statement, each
    executemany row too (the trace callback)."""
    from ralphpy.tasks import db as tasks_db
    from ralphpy.tasks.git_scope import Scope
    scope = Scope(*query(db, "SELECT scope_repo, scope_branch FROM tasks LIMIT 1")[0])
    sent: list[str] = []
    if isinstance(db, PgStore):
        conn = _recorded_connection(db.url, sent)
    else:
        conn = tasks_db.connect(str(db))
        conn.set_trace_callback(sent.append)
    try:
        yield conn, scope, sent
    finally:
        conn.close()


def on_tasks(sent: list[str]) -> list[str]:
    """The first word (SELECT, UPDATE, ...) of each statement that names the tasks table."""
    return [sql.split()[0] for sql in sent if re.search(r"\btasks\b", sql)]
