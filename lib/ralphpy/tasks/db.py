"""Owns the backlog's store: where it is (docs/contract/task-cli.md s.3: a SQLite file, or a
`postgresql://` URL in $RALPH_TASKS_DB), opening it (SQLite: WAL, foreign keys, busy timeout, the
ralph.sh schema plus extensions, `task_holds` and indexes, s.5; PostgreSQL: pg.py), and
transactions: `write` runs a function inside BEGIN IMMEDIATE and retries the whole transaction after
0.1, 0.3 and 0.9 s when the database stays busy (s.4); `read` gives one consistent snapshot. The
commands see one connection type either way. Does not own any command, query or output
format."""
from __future__ import annotations

import os
import time

from ralphpy.tasks import store_url
from ralphpy.tasks.errors import TaskError
from ralphpy.tasks.sqlite_import import sqlite3  # the C core of `sqlite3`, imported cheaply

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, TypeVar

    from ralphpy.tasks.git_scope import Git

    T = TypeVar("T")

_RETRY_DELAYS = (0.1, 0.3, 0.9)  # s.4: three retries of the whole transaction
_BUSY_TIMEOUT_S = 5.0
_CACHE_KIB = 65536  # an upper bound: pages are allocated as they are read

# One task more or less of a scope and status in task_counts (row: NEW or OLD).
# A status of NULL is kept as '' (a NULL would make a new row each time: NULLs are distinct).
_COUNT = ("INSERT OR IGNORE INTO task_counts VALUES ({row}.scope_repo, {row}.scope_branch, "
          "coalesce({row}.status, ''), 0); UPDATE task_counts SET n = n {step} WHERE "
          "scope_repo = {row}.scope_repo AND scope_branch = {row}.scope_branch AND "
          "status = coalesce({row}.status, '');")
# The blocked predicate of s.8, for the triggers that keep task_blocked (a blocker `b`).
_UNFINISHED = "b.status NOT IN ('done', 'deleted')"
_STILL_BLOCKED = ("EXISTS (SELECT 1 FROM task_deps d JOIN tasks b ON b.id = d.blocked_by "
                  f"WHERE d.task_id = task_blocked.task_id AND {_UNFINISHED})")
_DEPENDENTS_LEAVE = ("DELETE FROM task_blocked WHERE task_id IN (SELECT task_id FROM task_deps "
                     f"WHERE blocked_by = NEW.id) AND NOT {_STILL_BLOCKED};")
_DEPENDENTS_JOIN = ("INSERT OR IGNORE INTO task_blocked SELECT t.id, t.scope_repo, "
                    "t.scope_branch, t.status FROM task_deps d JOIN tasks t ON t.id = d.task_id "
                    "WHERE d.blocked_by = NEW.id AND NEW.status NOT IN ('done', 'deleted');")

# s.5, verbatim: a database created by ralph.sh is used as it is.
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS tasks (
    id              TEXT PRIMARY KEY,
    slug            TEXT NOT NULL,
    scope_repo      TEXT NOT NULL,
    scope_branch    TEXT NOT NULL,
    title           TEXT NOT NULL,
    description     TEXT,
    category        TEXT,
    priority        INTEGER DEFAULT 2,
    status          TEXT DEFAULT 'open',
    spec_ref        TEXT,
    ref             TEXT,
    result          TEXT,
    assignee        TEXT,
    lease_expires_at TEXT,
    retry_count     INTEGER DEFAULT 0,
    fail_reason     TEXT,
    steps           TEXT,
    created_at      TEXT DEFAULT (datetime('now')),
    updated_at      TEXT,
    deleted_at      TEXT,
    UNIQUE(scope_repo, scope_branch, slug)
)""",
    """CREATE INDEX IF NOT EXISTS idx_tasks_scope_status
    ON tasks(scope_repo, scope_branch, status, priority, created_at)""",
    """CREATE TABLE IF NOT EXISTS task_deps (
    task_id    TEXT REFERENCES tasks(id) ON DELETE CASCADE,
    blocked_by TEXT REFERENCES tasks(id) ON DELETE CASCADE,
    PRIMARY KEY (task_id, blocked_by)
)""",
    """CREATE TABLE IF NOT EXISTS agents (
    id           TEXT PRIMARY KEY,
    pid          INTEGER,
    hostname     TEXT,
    scope_repo   TEXT NOT NULL DEFAULT '',
    scope_branch TEXT NOT NULL DEFAULT '',
    started_at   TEXT DEFAULT (datetime('now')),
    status       TEXT DEFAULT 'active'
)""",
    # Extension (a ralph.py extension): a held task is never claimable and counts as blocked.
    """CREATE TABLE IF NOT EXISTS task_holds (
    task_id    TEXT PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
    reason     TEXT,
    created_at TEXT DEFAULT (datetime('now'))
)""",
    # Extension: a task's status and scope by its id without reading its row, for
    # plan-status's blocked count (decisions/0002); ralph.sh's queries work as before.
    """CREATE INDEX IF NOT EXISTS idx_tasks_id_status
    ON tasks(id, status, scope_repo, scope_branch)""",
    # Extension: whether any lease of a scope has run out, in one probe
    # (queries.expired_walk_limit).
    """CREATE INDEX IF NOT EXISTS idx_tasks_scope_expiry
    ON tasks(scope_repo, scope_branch, (CASE WHEN status = 'active' THEN lease_expires_at END))""",
    # Extension: the tasks a session touched (every write stamps updated_at), read after each
    # session by the run's record and the verify gate without walking the backlog.
    "CREATE INDEX IF NOT EXISTS idx_tasks_updated ON tasks(updated_at)",
    # Extension: the tasks failed before, whose retry_count a run takes before each session
    # (most tasks never failed: the index holds only the others).
    "CREATE INDEX IF NOT EXISTS idx_tasks_retried ON tasks(retry_count) WHERE retry_count > 0",
    # Extension: the blocked tasks (s.8: a blocker neither done nor deleted), each with its own
    # status and scope, kept by the triggers below whichever CLI writes (ralph.sh's too), so
    # plan-status counts them from one index range instead of walking every dependency
    # (decisions/0037). The dependents of a task are found by idx_task_deps_blocked_by.
    "CREATE INDEX IF NOT EXISTS idx_task_deps_blocked_by ON task_deps(blocked_by)",
    """CREATE TABLE IF NOT EXISTS task_blocked (
    task_id      TEXT PRIMARY KEY,
    scope_repo   TEXT,
    scope_branch TEXT,
    status       TEXT
)""",
    """CREATE INDEX IF NOT EXISTS idx_task_blocked_scope_status
    ON task_blocked(scope_repo, scope_branch, status)""",
    # A dependency added: its task is blocked when its blocker is unfinished.
    f"""CREATE TRIGGER IF NOT EXISTS task_blocked_dep_added AFTER INSERT ON task_deps BEGIN
    INSERT OR IGNORE INTO task_blocked SELECT t.id, t.scope_repo, t.scope_branch, t.status
    FROM tasks t, tasks b WHERE t.id = NEW.task_id AND b.id = NEW.blocked_by AND {_UNFINISHED};
END""",
    # A dependency removed: its task stays blocked only by another unfinished blocker.
    f"""CREATE TRIGGER IF NOT EXISTS task_blocked_dep_removed AFTER DELETE ON task_deps BEGIN
    DELETE FROM task_blocked WHERE task_id = OLD.task_id AND NOT {_STILL_BLOCKED};
END""",
    # A task's status or scope changed: its own entry follows; when it became finished or
    # unfinished, its dependents leave or join.
    """CREATE TRIGGER IF NOT EXISTS task_blocked_task_changed
    AFTER UPDATE OF status, scope_repo, scope_branch ON tasks BEGIN
    UPDATE task_blocked SET status = NEW.status, scope_repo = NEW.scope_repo,
        scope_branch = NEW.scope_branch WHERE task_id = NEW.id;
END""",
    f"""CREATE TRIGGER IF NOT EXISTS task_blocked_blocker_changed AFTER UPDATE OF status ON tasks
    WHEN (OLD.status IN ('done', 'deleted')) IS NOT (NEW.status IN ('done', 'deleted')) BEGIN
    {_DEPENDENTS_LEAVE}
    {_DEPENDENTS_JOIN}
END""",
    # A task added (a dependency may name it already when foreign keys were off) or removed.
    f"""CREATE TRIGGER IF NOT EXISTS task_blocked_task_added AFTER INSERT ON tasks BEGIN
    INSERT OR IGNORE INTO task_blocked SELECT NEW.id, NEW.scope_repo, NEW.scope_branch,
        NEW.status WHERE EXISTS (SELECT 1 FROM task_deps d JOIN tasks b ON b.id = d.blocked_by
        WHERE d.task_id = NEW.id AND {_UNFINISHED});
    {_DEPENDENTS_JOIN}
END""",
    f"""CREATE TRIGGER IF NOT EXISTS task_blocked_task_removed AFTER DELETE ON tasks BEGIN
    DELETE FROM task_blocked WHERE task_id = OLD.id;
    {_DEPENDENTS_LEAVE.replace("NEW.", "OLD.")}
END""",
    # Extension: how many tasks of each scope have each status, kept by the triggers below
    # whichever CLI writes, so plan-status reads a few rows instead of counting every task
    # (decisions/0037). INSERT OR IGNORE then UPDATE, not an upsert: a trigger of the schema
    # must parse in the older sqlite3 a ralph.sh user may run.
    """CREATE TABLE IF NOT EXISTS task_counts (
    scope_repo   TEXT,
    scope_branch TEXT,
    status       TEXT,
    n            INTEGER NOT NULL,
    PRIMARY KEY (scope_repo, scope_branch, status)
)""",
    f"""CREATE TRIGGER IF NOT EXISTS task_counts_task_added AFTER INSERT ON tasks BEGIN
    {_COUNT.format(row="NEW", step="+ 1")}
END""",
    f"""CREATE TRIGGER IF NOT EXISTS task_counts_task_removed AFTER DELETE ON tasks BEGIN
    {_COUNT.format(row="OLD", step="- 1")}
END""",
    f"""CREATE TRIGGER IF NOT EXISTS task_counts_task_changed
    AFTER UPDATE OF status, scope_repo, scope_branch ON tasks
    WHEN (OLD.status, OLD.scope_repo, OLD.scope_branch)
        IS NOT (NEW.status, NEW.scope_repo, NEW.scope_branch) BEGIN
    {_COUNT.format(row="OLD", step="- 1")}
    {_COUNT.format(row="NEW", step="+ 1")}
END""",
)
_SCHEMA_NAMES = ("tasks", "idx_tasks_scope_status", "task_deps", "agents", "task_holds",
                 "idx_tasks_id_status", "idx_tasks_scope_expiry", "idx_tasks_updated",
                 "idx_tasks_retried", "idx_task_deps_blocked_by", "task_blocked",
                 "idx_task_blocked_scope_status", "task_blocked_dep_added",
                 "task_blocked_dep_removed", "task_blocked_task_changed",
                 "task_blocked_blocker_changed", "task_blocked_task_added",
                 "task_blocked_task_removed", "task_counts", "task_counts_task_added",
                 "task_counts_task_removed", "task_counts_task_changed")
# task_blocked made from the backlog as it is, once, in the transaction that creates it
# (a database made by ralph.sh or by an earlier ralph.py); the triggers keep it from then on.
_FILL_BLOCKED = ("INSERT OR IGNORE INTO task_blocked SELECT t.id, t.scope_repo, t.scope_branch, "
                 "t.status FROM tasks t WHERE EXISTS (SELECT 1 FROM task_deps d JOIN tasks b "
                 f"ON b.id = d.blocked_by WHERE d.task_id = t.id AND {_UNFINISHED})")
_FILL_COUNTS = ("INSERT INTO task_counts SELECT scope_repo, scope_branch, coalesce(status, ''), "
                "count(*) FROM tasks GROUP BY 1, 2, 3")
_SCHEMA_PRESENT = ("SELECT name FROM sqlite_master WHERE name IN "
                   f"({','.join('?' * len(_SCHEMA_NAMES))})")


def _is_busy(err: sqlite3.Error) -> bool:
    code = getattr(err, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(err) or "busy" in str(err)


def _with_retry(fn: Callable[[], T]) -> T:
    for delay in (*_RETRY_DELAYS, None):
        try:
            return fn()
        except sqlite3.OperationalError as err:
            if not _is_busy(err):
                raise
            if delay is None:
                raise TaskError("database is locked") from err
            time.sleep(delay)
    raise AssertionError("unreachable")


def _transaction(conn: sqlite3.Connection, begin: str, body: Callable[[sqlite3.Connection], T]) -> T:
    def attempt() -> T:
        conn.execute(begin)
        try:
            result = body(conn)
            conn.execute("COMMIT")
            return result
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return _with_retry(attempt)


def write(conn: sqlite3.Connection, body: Callable[[sqlite3.Connection], T], *,
          concurrent: bool = False) -> T:
    """Run body in one BEGIN IMMEDIATE transaction (its reads included), retried when busy.
    concurrent: on PostgreSQL, each statement of body is a transaction of its own that takes
    row locks itself (a claim's SKIP LOCKED) instead of waiting for every other writer; so
    body writes in one statement (a claim's first try writes nothing when it finds nothing)."""
    if getattr(conn, "dialect", "sqlite") != "sqlite":
        return conn.transaction(body, write=True, lock=not concurrent)
    return _transaction(conn, "BEGIN IMMEDIATE", body)


def read(conn: sqlite3.Connection, body: Callable[[sqlite3.Connection], T]) -> T:
    """Run body in one read transaction: a consistent snapshot that never blocks writers."""
    if getattr(conn, "dialect", "sqlite") != "sqlite":
        return conn.transaction(body, write=False, lock=False)
    return _transaction(conn, "BEGIN", body)


def refresh_statistics(conn) -> None:
    """After a bulk write (plan-sync, migrate-db): PostgreSQL's planner picks its plans from
    table statistics, and with none for a freshly filled backlog `peek` walked every task
    per task (a quarter second at 1,000 tasks instead of half a millisecond). SQLite: nothing."""
    if is_postgres(conn):
        conn.transaction(lambda c: c.execute("ANALYZE tasks, task_deps"), write=True, lock=False)


def release(conn) -> None:
    """The command is over: a SQLite file is closed; a PostgreSQL connection is kept open for
    the process's next command (pg.connect)."""
    if not is_postgres(conn):
        conn.close()


def is_postgres(conn) -> bool:
    return getattr(conn, "dialect", "sqlite") == "postgresql"


def locate(git: Git) -> str:
    """s.3: $RALPH_TASKS_DB (relative to cwd, parents created), else <git root>/.ralph/tasks.db
    with `.ralph/.gitignore` = `*` written once, never rewritten. A `scheme://` value is a
    server (only postgresql:// is known): returned as it is, nothing created."""
    explicit = git.environ.get("RALPH_TASKS_DB", "")
    if explicit:
        kind = store_url.scheme(explicit)
        if kind is not None:
            if kind not in store_url.POSTGRES_SCHEMES:
                raise TaskError(store_url.unknown_scheme_message(explicit))
            return explicit
        path = os.path.join(git.cwd, explicit)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path
    ralph_dir = os.path.join(git.toplevel(), ".ralph")
    os.makedirs(ralph_dir, exist_ok=True)
    ignore = os.path.join(ralph_dir, ".gitignore")
    if not os.path.lexists(ignore):
        try:
            fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:  # a concurrent first use wrote it
            pass
        else:
            with os.fdopen(fd, "w") as handle:
                handle.write("*\n")
    return os.path.join(ralph_dir, "tasks.db")


def _ensure_schema(conn: sqlite3.Connection) -> None:
    present = {row[0] for row in conn.execute(_SCHEMA_PRESENT, _SCHEMA_NAMES)}
    if len(present) == len(_SCHEMA_NAMES):
        return

    def create(c: sqlite3.Connection) -> None:
        made = "SELECT name FROM sqlite_master WHERE name IN ('task_blocked', 'task_counts')"
        there = {row[0] for row in c.execute(made)}
        for statement in _SCHEMA:
            c.execute(statement)
        if "task_blocked" not in there:
            c.execute(_FILL_BLOCKED)
        if "task_counts" not in there:
            c.execute(_FILL_COUNTS)
    write(conn, create)


def connect(path: str, environ=None, report=None) -> sqlite3.Connection:
    """Open the database, switch it to WAL once (persisted), create the schema if needed.
    A postgresql:// location opens that server (environ: its retry budget; report: where its
    retry lines go)."""
    if store_url.scheme(path) is not None:  # locate() let only postgresql:// through
        from ralphpy.tasks import pg
        return pg.connect(path, environ or {}, report or (lambda line: None))
    conn = sqlite3.connect(path, timeout=_BUSY_TIMEOUT_S, isolation_level=None,
                           check_same_thread=False)
    try:
        conn.execute("PRAGMA foreign_keys=ON")
        # The default 2 MB page cache is smaller than 10,000 tasks: plan-status, which reads
        # every task and its blockers, would read the same pages from the file again and again.
        conn.execute(f"PRAGMA cache_size=-{_CACHE_KIB}")

        def wal() -> None:
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL").fetchone()
        _with_retry(wal)
        _ensure_schema(conn)
    except BaseException:
        conn.close()
        raise
    return conn


__all__ = ["locate", "connect", "refresh_statistics", "release", "write", "read", "is_postgres", "sqlite3"]
