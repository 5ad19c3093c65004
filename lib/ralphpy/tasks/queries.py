"""Owns the SQL shared by the commands: task order, the blocked and claimable predicates
(docs/contract/task-cli.md s.8, plus the `task_holds` and frozen-ids extensions), fetching tasks and
fetching the blockers of many tasks in one query (never a query per task). Does not own output
formats or argument checks."""
from __future__ import annotations

import os

from ralphpy.tasks import jsontext
from ralphpy.tasks.db import sqlite3
from ralphpy.tasks.errors import TaskError, not_found

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable

    from ralphpy.tasks.git_scope import Scope

COLUMNS = ("id, slug, title, description, category, priority, status, spec_ref, ref, result, "
           "assignee, lease_expires_at, retry_count, fail_reason, steps, created_at, "
           "updated_at, deleted_at")
ORDER = "ORDER BY t.priority, t.created_at, t.rowid"  # s.8 "Ordering"
IN_SCOPE = "t.scope_repo = :repo AND t.scope_branch = :branch"
BLOCKED = ("EXISTS (SELECT 1 FROM task_deps d JOIN tasks b ON b.id = d.blocked_by "
           "WHERE d.task_id = t.id AND b.status NOT IN ('done', 'deleted'))")
HELD = "EXISTS (SELECT 1 FROM task_holds h WHERE h.task_id = t.id)"
# The extension index idx_tasks_id_status (db.py) gives a task's status and scope by its id
# without reading its row; SQLite's planner would rather take the unique index on id and read
# the row, so plan-status names it (decisions/0002).
BY_ID_STATUS = "INDEXED BY idx_tasks_id_status"
# BLOCKED as a list of the blocked tasks' ids (plan-status): a walk over the dependencies,
# not over every task, with the blockers' statuses from that index (CROSS JOIN keeps
# task_deps the outer loop); the blocked tasks are then looked up by id. A backlog without
# dependencies costs nothing however many tasks it holds.
BLOCKED_IDS = (f"t.id IN (SELECT d.task_id FROM task_deps d CROSS JOIN tasks b {BY_ID_STATUS} "
               "WHERE b.id = d.blocked_by AND b.status NOT IN ('done', 'deleted'))")
HELD_IDS = "t.id IN (SELECT h.task_id FROM task_holds h)"


def status_counts(conn, params: dict) -> list[tuple[str, int]]:
    """SQLite: (status, how many tasks) of the scope, from the counts the store's triggers
    keep (db.py, decisions/0037): a row per status, not a walk of the scope."""
    return conn.execute("SELECT status, n FROM task_counts WHERE scope_repo = :repo AND "
                        "scope_branch = :branch", params).fetchall()


def blocked_counts(conn, params: dict, held: bool) -> tuple[int, int, int]:
    """SQLite: (blocked, of them open, of them active) in the scope, from the table of blocked
    tasks the store's triggers keep (db.py, decisions/0037); with holds, the held open or
    active tasks not blocked otherwise are added (few: a hold is a breaker's last resort)."""
    by_status = dict(conn.execute(
        "SELECT status, count(*) FROM task_blocked WHERE scope_repo = :repo AND "
        "scope_branch = :branch GROUP BY status", params).fetchall())
    if held:
        for status, n in conn.execute(
                "SELECT t.status, count(*) FROM task_holds h JOIN tasks t ON t.id = h.task_id "
                f"WHERE {IN_SCOPE} AND t.status IN ('open', 'active') AND h.task_id NOT IN "
                "(SELECT task_id FROM task_blocked) GROUP BY t.status", params):
            by_status[status] = by_status.get(status, 0) + n
    return sum(by_status.values()), by_status.get("open", 0), by_status.get("active", 0)
OPEN = "t.status = 'open'"
EXPIRED = "t.status = 'active' AND t.lease_expires_at < datetime('now')"  # s.9.4: claimable too


# Whether a lease of the scope has run out: one probe of the extension index
# idx_tasks_scope_expiry (db.py, pg_schema.py), its expression verbatim, so both planners take
# it (and a read-only SQLite file made before it existed is still answered).
LEASE_EXPIRED_IN_SCOPE = (
    "EXISTS (SELECT 1 FROM tasks e WHERE e.scope_repo = :repo AND e.scope_branch = :branch AND "
    "(CASE WHEN e.status = 'active' THEN e.lease_expires_at END) < datetime('now'))")


def expired_walk_limit(limit: str) -> str:
    """The LIMIT of a walk for the first expired leases in the spec's order (claimable_walks):
    `limit` when a lease of the scope has run out (LEASE_EXPIRED_IN_SCOPE), else 0, which stops
    the walk before it reads a row in both engines (as a WHERE term, SQLite tested it at each
    row). The walk read every active task of the scope at every peek and claim, under SQLite's
    write lock too."""
    return f"CASE WHEN {LEASE_EXPIRED_IN_SCOPE} THEN {limit} ELSE 0 END"


CLAIMABLE = f"({OPEN} OR ({EXPIRED})) AND NOT {BLOCKED} AND NOT {HELD}"
FROZEN = "t.slug IN (SELECT value FROM json_each(:frozen))"


_IN_SCOPE_UNINDEXED = "+t.scope_repo = :repo AND +t.scope_branch = :branch"


def claimable_walks(columns: str, extra: str, limit: str, lock: str = "") -> tuple[str, str]:
    """The two walks for the first `limit` claimable tasks of the scope (peek, claim): open
    tasks, and active ones whose lease ran out, each walked separately in index order (scope,
    status, priority, created_at, rowid), so each stops after `limit` unblocked tasks instead
    of testing every task of a large backlog for blockers. The caller merges them in the
    spec's order. lock: the PostgreSQL claim's row locks, after the LIMIT."""
    def walk(status: str, n: str) -> str:
        return (f"SELECT {columns} FROM tasks t WHERE {IN_SCOPE} AND {status} AND NOT {BLOCKED} "
                f"AND NOT {HELD} AND ({extra}) {ORDER} LIMIT {n}{lock}")
    return walk(OPEN, limit), walk(EXPIRED, expired_walk_limit(limit))


def first_claimable(extra: str = "TRUE") -> str:
    """A `where` for fetch_tasks(..., limit=:limit, by_rowid=True) selecting the first
    claimable tasks (claimable_walks)."""
    open_walk, expired_walk = claimable_walks("t.rowid AS r", extra, ":limit")
    return (f"t.rowid IN (SELECT r FROM ({open_walk}) AS first UNION ALL "
            f"SELECT r FROM ({expired_walk}) AS first)")


def scope_params(scope: Scope, **extra: object) -> dict:
    return {"repo": scope.repo, "branch": scope.branch, **extra}


def fetch_tasks(conn: sqlite3.Connection, scope: Scope, where: str = "TRUE", limit: int | None = None,
                *, by_rowid: bool = False, **params: object) -> list[sqlite3.Row]:
    """Tasks of the scope matching `where`, in the spec's order. by_rowid: `where` picks a few
    rows by an index of its own (first_claimable's rowids, views.SELECTIONS); they are looked
    up one by one instead of testing every task of the scope against it (`+` keeps SQLite
    from walking the scope's index).
    PostgreSQL rows also carry `rowid` and `claim_version` (the fencing token, claims.py)."""
    cols = ", ".join(f"t.{c.strip()}" for c in COLUMNS.split(","))
    if getattr(conn, "dialect", "sqlite") == "postgresql":
        cols += ", t.rowid, t.claim_version"
    scope_sql = _IN_SCOPE_UNINDEXED if by_rowid else IN_SCOPE
    sql = f"SELECT {cols} FROM tasks t WHERE {scope_sql} AND ({where}) {ORDER}"
    if limit is not None:
        sql += " LIMIT :limit"
        params["limit"] = limit
    cur = conn.cursor()
    cur.row_factory = sqlite3.Row  # by-name access implemented in C: cheap for 10,000 rows
    return cur.execute(sql, scope_params(scope, **params)).fetchall()


def task_id_status(conn, scope: Scope, slug: str, what: str = "task") -> tuple[str, str]:
    """(id, status) of the scope's task `slug`; not found (exit 2) names it as `what`."""
    row = conn.execute("SELECT t.id, t.status FROM tasks t WHERE " + IN_SCOPE
                       + " AND t.slug = :slug", scope_params(scope, slug=slug)).fetchone()
    if row is None:
        raise not_found(f"{what} '{slug}' not found")
    return row


def fetch_task(conn: sqlite3.Connection, scope: Scope, slug: str) -> dict | None:
    rows = fetch_tasks(conn, scope, "t.slug = :slug", slug=slug)
    return rows[0] if rows else None


def existing_task(conn: sqlite3.Connection, scope: Scope, slug: str) -> dict:
    """fetch_task's task; not found (exit 2) when the scope has none named `slug`."""
    task = fetch_task(conn, scope, slug)
    if task is None:
        raise not_found(f"task '{slug}' not found")
    return task


def fetch_blockers(conn: sqlite3.Connection, task_ids: Iterable[str],
                   whole_scope: Scope | None = None) -> dict[str, list[tuple]]:
    """task uuid -> [(slug, status, title, result)] of its blockers, sorted by slug: one query.
    With whole_scope, every dependency of the scope is fetched (cheaper for `list --all`)."""
    base = ("SELECT d.task_id, b.slug, b.status, b.title, b.result FROM task_deps d "
            "JOIN tasks b ON b.id = d.blocked_by ")
    if whole_scope is not None:
        cur = conn.execute(base + "JOIN tasks t ON t.id = d.task_id WHERE " + IN_SCOPE
                           + " ORDER BY b.slug", scope_params(whole_scope))
    else:
        ids = list(task_ids)
        if not ids:
            return {}
        cur = conn.execute(base + "WHERE d.task_id IN (SELECT value FROM json_each(?)) "
                           "ORDER BY b.slug", (jsontext.dumps(ids),))
    result: dict[str, list[tuple]] = {}
    for task_id, *blocker in cur:
        result.setdefault(task_id, []).append(tuple(blocker))
    return result


def frozen_slugs(environ, cwd: str) -> str | None:
    """RALPH_FROZEN_IDS_FILE (a ralph.py extension): a JSON array of the slugs peek and claim may
    consider, or None when the variable is unset or empty."""
    name = environ.get("RALPH_FROZEN_IDS_FILE", "")
    if not name:
        return None
    try:
        with open(os.path.join(cwd, name), encoding="utf-8", errors="surrogateescape") as handle:
            slugs = [line.strip() for line in handle if line.strip()]
    except OSError as err:
        raise TaskError(f"cannot read RALPH_FROZEN_IDS_FILE {name}: {err.strerror}") from err
    return jsontext.dumps(slugs)


__all__ = ["claimable_walks", "first_claimable", "fetch_tasks", "status_counts", "task_id_status", "fetch_task",
           "existing_task", "fetch_blockers", "frozen_slugs", "scope_params"]
