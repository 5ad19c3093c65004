"""Owns `ralph task migrate-db <postgresql-url>` (a ralph.py extension): the whole SQLite
backlog (every scope: tasks with their ids, results, retries, fail reasons and times;
dependencies; holds; agents) copied into a PostgreSQL store in one transaction, in the SQLite
rowid order (the order's last key, docs/contract/task-cli.md s.8). A target that already holds any
of these tasks is refused: nothing is copied twice or half. The source is left as it was."""
from __future__ import annotations

from ralphpy.tasks import args as A
from ralphpy.tasks import db, jsontext, store_url
from ralphpy.tasks.context import Ctx
from ralphpy.tasks.errors import TaskError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence

_USAGE = "ralph task migrate-db <postgresql://user@host/database>"
_TASK_COLUMNS = ("id, slug, scope_repo, scope_branch, title, description, category, priority, "
                 "status, spec_ref, ref, result, assignee, lease_expires_at, retry_count, "
                 "fail_reason, steps, created_at, updated_at, deleted_at")
_AGENT_COLUMNS = "id, pid, hostname, scope_repo, scope_branch, started_at, status"


def _rows(conn) -> dict[str, list[tuple]]:
    return {
        "tasks": conn.execute(f"SELECT {_TASK_COLUMNS} FROM tasks ORDER BY rowid").fetchall(),
        "task_deps": conn.execute("SELECT task_id, blocked_by FROM task_deps "
                                  "ORDER BY rowid").fetchall(),
        "task_holds": conn.execute("SELECT task_id, reason, created_at FROM task_holds "
                                   "ORDER BY rowid").fetchall(),
        "agents": conn.execute(f"SELECT {_AGENT_COLUMNS} FROM agents ORDER BY rowid").fetchall(),
    }


def _insert(table: str, columns: str) -> str:
    marks = ", ".join("?" for _ in columns.split(","))
    return f"INSERT INTO {table} ({columns}) VALUES ({marks})"


def migrate_db(ctx: Ctx, argv: Sequence[str]) -> str:
    target, rest = A.optional_id(argv)
    A.flags(rest)
    if not target:
        raise TaskError("missing target store", usage=_USAGE)
    if not store_url.is_postgres(target):
        raise TaskError(f"the target must be a postgresql:// store, got: {store_url.redact(target)}")
    if db.is_postgres(ctx.conn):
        raise TaskError("migrate-db copies a SQLite backlog: the current store is already "
                        "PostgreSQL (unset RALPH_TASKS_DB to copy .ralph/tasks.db)")
    rows = db.read(ctx.conn, _rows)
    ids = [task[0] for task in rows["tasks"]]

    def copy(conn):
        clash = conn.execute(
            "SELECT t.scope_repo, t.scope_branch, t.slug FROM tasks t WHERE t.id IN "
            "(SELECT value FROM json_each(?)) ORDER BY t.rowid LIMIT 1",
            (jsontext.dumps(ids),)).fetchone()
        if clash is None and rows["tasks"]:
            clash = _slug_clash(conn, rows["tasks"])
        if clash is not None:
            raise TaskError(f"the target already holds task '{clash[2]}' of {clash[0]} "
                            f"{clash[1]}: nothing copied")
        conn.executemany(_insert("tasks", _TASK_COLUMNS), rows["tasks"])
        conn.executemany(_insert("task_deps", "task_id, blocked_by"), rows["task_deps"])
        conn.executemany(_insert("task_holds", "task_id, reason, created_at"), rows["task_holds"])
        conn.executemany(_insert("agents", _AGENT_COLUMNS) +
                         " ON CONFLICT (id) DO NOTHING", rows["agents"])
    store = db.connect(target, ctx.environ, lambda line: None)
    try:
        db.write(store, copy)
        db.refresh_statistics(store)
    finally:
        db.release(store)  # pg.connect keeps it for the process's next command on this store
    n = {table: len(found) for table, found in rows.items()}
    return (f"copied to {store_url.redact(target)}: tasks: {n['tasks']}, dependencies: "
            f"{n['task_deps']}, holds: {n['task_holds']}, agents: {n['agents']}\n")


def _slug_clash(conn, tasks: list[tuple]):
    keys = jsontext.dumps([[t[2], t[3], t[1]] for t in tasks])
    return conn.execute(
        "SELECT t.scope_repo, t.scope_branch, t.slug FROM tasks t JOIN "
        "json_array_elements(?::json) k ON t.scope_repo = k->>0 AND t.scope_branch = k->>1 "
        "AND t.slug = k->>2 LIMIT 1", (keys,)).fetchone()


__all__ = ["migrate_db"]
