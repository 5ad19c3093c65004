"""Owns the PostgreSQL task store's schema as numbered migrations: each is applied once, in
order, on first use, under an advisory lock (two first users never both apply it), and
recorded in `ralph_schema`. A store whose schema is newer than this code knows is refused.
The tables are ralph.sh's (docs/contract/task-cli.md s.5) with the columns that text compares by
byte (`COLLATE "C"`, SQLite's BINARY order), a `rowid` (SQLite's implicit one: the last sort key of
s.8), and the fleet's columns: a task's `claim_version` (the fencing token) and an agent's boot id
and last heartbeat. `datetime()` is SQLite's, for the forms the commands use, so one SQL text
serves both stores (s.6: UTC text `YYYY-MM-DD HH:MM:SS`)."""
from __future__ import annotations

from ralphpy.tasks.errors import TaskError

_LOCK_KEY = 0x7261_6C70  # "ralp": one advisory lock for migrations, whatever the database

_NOW = "datetime('now')"
_V1 = (
    """CREATE FUNCTION datetime(moment text, modifier text DEFAULT '0 seconds') RETURNS text
    LANGUAGE sql STABLE AS $$
      SELECT to_char(CASE WHEN moment = 'now' THEN (statement_timestamp() AT TIME ZONE 'UTC')
                          ELSE moment::timestamp END + modifier::interval,
                     'YYYY-MM-DD HH24:MI:SS') $$""",
    f"""CREATE TABLE tasks (
    rowid           BIGSERIAL UNIQUE,
    id              TEXT COLLATE "C" PRIMARY KEY,
    slug            TEXT COLLATE "C" NOT NULL,
    scope_repo      TEXT COLLATE "C" NOT NULL,
    scope_branch    TEXT COLLATE "C" NOT NULL,
    title           TEXT COLLATE "C" NOT NULL,
    description     TEXT COLLATE "C",
    category        TEXT COLLATE "C",
    priority        BIGINT DEFAULT 2,
    status          TEXT COLLATE "C" DEFAULT 'open',
    spec_ref        TEXT COLLATE "C",
    ref             TEXT COLLATE "C",
    result          TEXT COLLATE "C",
    assignee        TEXT COLLATE "C",
    lease_expires_at TEXT COLLATE "C",
    retry_count     BIGINT DEFAULT 0,
    fail_reason     TEXT COLLATE "C",
    steps           TEXT COLLATE "C",
    created_at      TEXT COLLATE "C" DEFAULT {_NOW},
    updated_at      TEXT COLLATE "C",
    deleted_at      TEXT COLLATE "C",
    claim_version   BIGINT NOT NULL DEFAULT 0,
    UNIQUE(scope_repo, scope_branch, slug)
)""",
    """CREATE INDEX idx_tasks_scope_status
    ON tasks(scope_repo, scope_branch, status, priority, created_at, rowid)""",
    """CREATE TABLE task_deps (
    task_id    TEXT COLLATE "C" REFERENCES tasks(id) ON DELETE CASCADE,
    blocked_by TEXT COLLATE "C" REFERENCES tasks(id) ON DELETE CASCADE,
    PRIMARY KEY (task_id, blocked_by)
)""",
    "CREATE INDEX idx_task_deps_blocked_by ON task_deps(blocked_by)",
    f"""CREATE TABLE agents (
    rowid          BIGSERIAL UNIQUE,
    id             TEXT COLLATE "C" PRIMARY KEY,
    pid            BIGINT,
    hostname       TEXT COLLATE "C",
    scope_repo     TEXT COLLATE "C" NOT NULL DEFAULT '',
    scope_branch   TEXT COLLATE "C" NOT NULL DEFAULT '',
    started_at     TEXT COLLATE "C" DEFAULT {_NOW},
    status         TEXT COLLATE "C" DEFAULT 'active',
    boot_id        TEXT COLLATE "C",
    last_heartbeat TEXT COLLATE "C"
)""",
    f"""CREATE TABLE task_holds (
    task_id    TEXT COLLATE "C" PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
    reason     TEXT COLLATE "C",
    created_at TEXT COLLATE "C" DEFAULT {_NOW}
)""",
)
# 2: a claim looks for an expired lease among the scope's active tasks; walking them all in
# priority order made each claim cost more with every task claimed and not yet done.
_V2 = ("CREATE INDEX idx_tasks_scope_lease ON tasks(scope_repo, scope_branch, status, "
       "lease_expires_at)",)
# 3: the planner did not take that index: statistics gathered when the backlog was filled
# count no active task, so walking the scope's active tasks in priority order looked as cheap,
# and each claim read every active task. An index on an expression only a lease that can
# expire has is the one index that answers queries.expired_walk_limit (db.py has it too).
_V3 = ("DROP INDEX idx_tasks_scope_lease",
       "CREATE INDEX idx_tasks_scope_expiry ON tasks(scope_repo, scope_branch, "
       "(CASE WHEN status = 'active' THEN lease_expires_at END))")
# 4: what the run reads after each session (the tasks a session touched, and before it the
# tasks that failed before) found by an index instead of a walk over the backlog (db.py has
# them too).
_V4 = ("CREATE INDEX idx_tasks_updated ON tasks(updated_at)",
       "CREATE INDEX idx_tasks_retried ON tasks(retry_count) WHERE retry_count > 0")
MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = ((1, _V1), (2, _V2), (3, _V3), (4, _V4))
KNOWN = MIGRATIONS[-1][0]


def version(conn) -> int:
    """The schema version of the store (0: a new database)."""
    if conn.execute("SELECT to_regclass('ralph_schema')").fetchone()[0] is None:
        return 0
    return conn.execute("SELECT coalesce(max(version), 0) FROM ralph_schema").fetchone()[0]


def check_known(found: int) -> None:
    if found > KNOWN:
        raise TaskError(f"the task store's schema is version {found}, newer than this ralph.py "
                        f"knows ({KNOWN}): upgrade ralph.py")


def migrate(conn) -> None:
    """Apply the missing migrations in one transaction (conn: a raw psycopg connection in
    autocommit mode)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        conn.execute("CREATE TABLE IF NOT EXISTS ralph_schema (version INTEGER PRIMARY KEY, "
                     "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
        found = version(conn)
        check_known(found)
        for number, statements in MIGRATIONS:
            if number > found:
                for statement in statements:
                    conn.execute(statement)
                conn.execute("INSERT INTO ralph_schema (version) VALUES (%s)", (number,))


__all__ = ["MIGRATIONS", "KNOWN", "version", "check_known", "migrate"]
