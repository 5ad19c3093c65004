"""Owns the commands that edit tasks one by one or by filter (docs/contract/task-cli.md s.9.10-9.12,
9.14): create, update, delete, block, unblock. Every check that does not need the database runs
before the transaction; every write is one transaction. Does not own argument rules (args.py), reads
for display (views.py) or the internal edits ralph.py makes (run_edits.py)."""
from __future__ import annotations

import uuid

from ralphpy.tasks import args as A
from ralphpy.tasks import db, jsontext, queries as q
from ralphpy.tasks.context import Ctx
from ralphpy.tasks.errors import TaskError, not_found
from ralphpy.tasks.markdown import compact

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence

_CREATE_USAGE = ("ralph task create <id> <title> [-p PRIORITY] [-c CATEGORY] [-d DESCRIPTION] "
                 "[-s STEPS_JSON] [-r SPEC_REF] [--ref REF] [--deps DEP_IDS]")
_UPDATE_USAGE = ("ralph task update <id> [--title T] [--priority N] [--description D] "
                 "[--steps S] [--status S]")
_STATUSES = ("open", "active", "done", "deleted")


def _steps(value: str, flag: str, strings_only: bool) -> str | None:
    try:
        steps = jsontext.loads(value)
    except ValueError:
        steps = None
    if not isinstance(steps, list) or (strings_only and not all(isinstance(s, str) for s in steps)):
        raise TaskError(f"{flag} must be a JSON array, got: {value}")
    return compact(steps) if steps else None


def create(ctx: Ctx, argv: Sequence[str]) -> str:
    if not argv or not argv[0]:
        raise TaskError("missing task ID", usage=_CREATE_USAGE)
    if len(argv) < 2 or not argv[1]:
        raise TaskError("missing task title", usage=_CREATE_USAGE)
    slug, title = argv[0], argv[1]
    p = A.flags(argv[2:], values=("-p", "-c", "-d", "-s", "-r", "--ref", "--deps"))
    priority = p.get("-p", "2")
    if not A.digits(priority):
        raise TaskError(f"-p (priority) must be a non-negative integer, got: {priority}")
    steps = _steps(p["-s"], "-s (steps)", True) if p.get("-s") else None
    blockers = [s.strip() for s in p.get("--deps", "").split(",") if s.strip()]

    def act(conn):
        if conn.execute("SELECT 1 FROM tasks t WHERE " + q.IN_SCOPE + " AND t.slug = :slug",
                        q.scope_params(ctx.scope, slug=slug)).fetchone():
            raise TaskError(f"task '{slug}' already exists")
        task_id = str(uuid.uuid4())
        conn.execute(
            "INSERT INTO tasks (id, slug, scope_repo, scope_branch, title, description, category,"
            " priority, status, spec_ref, ref, steps, retry_count, created_at, updated_at) VALUES"
            " (?, ?, ?, ?, ?, ?, ?, ?, 'open', ?, ?, ?, 0, datetime('now'), datetime('now'))",
            (task_id, slug, ctx.scope.repo, ctx.scope.branch, title, p.get("-d") or None,
             p.get("-c") or None, int(priority), p.get("-r") or None, p.get("--ref") or None, steps))
        _add_deps(conn, ctx, task_id, blockers)  # s.11.4: unknown slugs are skipped
    db.write(ctx.conn, act)
    return f"{slug}\n"


def _add_deps(conn, ctx: Ctx, task_id: str, blockers: list[str]) -> None:
    if blockers:
        conn.execute(
            "INSERT OR IGNORE INTO task_deps (task_id, blocked_by) SELECT :task, t.id FROM tasks t"
            " WHERE " + q.IN_SCOPE + " AND t.slug IN (SELECT value FROM json_each(:slugs))",
            q.scope_params(ctx.scope, task=task_id, slugs=jsontext.dumps(blockers)))


def update(ctx: Ctx, argv: Sequence[str]) -> str:
    slug, rest = A.optional_id(argv)
    p = A.flags(rest, values=("--title", "--priority", "--description", "--steps", "--status"))
    if not slug:
        raise TaskError("missing task ID", usage=_UPDATE_USAGE)
    if not p:
        raise TaskError("no fields to update")
    sets: dict[str, object] = {}
    if "--title" in p:
        if not p["--title"]:
            raise TaskError("missing task title")
        sets["title"] = p["--title"]
    if "--priority" in p:
        if not A.digits(p["--priority"]):
            raise TaskError(f"--priority must be a non-negative integer, got: {p['--priority']}")
        sets["priority"] = int(p["--priority"])
    if "--description" in p:
        sets["description"] = p["--description"] or None
    if "--steps" in p:
        sets["steps"] = _steps(p["--steps"], "--steps", False) if p["--steps"] else None
    if "--status" in p:
        if p["--status"] not in _STATUSES:
            raise TaskError("--status must be one of open, active, done, deleted, got: "
                            + p["--status"])
        sets["status"] = p["--status"]

    def act(conn):
        task_id, status = q.task_id_status(conn, ctx.scope, slug)
        if status == "done":
            raise TaskError(f"task '{slug}' is done and cannot be updated")
        conn.execute("UPDATE tasks SET " + "".join(f"{k} = ?, " for k in sets)
                     + "updated_at = datetime('now') WHERE id = ?", (*sets.values(), task_id))
    db.write(ctx.conn, act)
    return f"updated {slug}\n"


def delete(ctx: Ctx, argv: Sequence[str]) -> str:
    slug, p, i = None, {}, 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("--status", "--spec", "--category"):
            if i + 1 >= len(argv):
                raise TaskError(f"{arg} requires a value")
            p[arg], i = argv[i + 1], i + 2
            continue
        if arg in ("--all", "--confirm"):
            p[arg] = True
        elif arg.startswith("-"):
            raise TaskError(f"unknown flag '{arg}'")
        elif slug is not None:
            raise TaskError(f"unexpected argument '{arg}'")
        else:
            slug = arg
        i += 1
    if slug is not None and any(f in p for f in ("--status", "--spec", "--category", "--all")):
        raise TaskError("cannot combine positional ID with filter flags")
    if "--all" in p and "--status" in p:
        raise TaskError("--all and --status are mutually exclusive")
    if "--all" in p and "--confirm" not in p:
        raise TaskError("--all requires --confirm flag")
    if ("--spec" in p or "--category" in p) and not ("--status" in p or "--all" in p):
        raise TaskError("--spec and --category require --status or --all")
    if not slug and "--status" not in p and "--all" not in p:
        raise TaskError("missing task ID", usage="ralph task delete <id>")
    stamp = "status = 'deleted', deleted_at = datetime('now'), updated_at = datetime('now')"
    if slug:
        def act(conn):
            task_id, _ = q.task_id_status(conn, ctx.scope, slug)
            conn.execute(f"UPDATE tasks SET {stamp} WHERE id = ?", (task_id,))
        db.write(ctx.conn, act)
        return f"deleted {slug}\n"
    statuses = [s.strip() for s in p["--status"].split(",")] if "--status" in p else []
    if "deleted" in statuses:
        raise TaskError("cannot use 'deleted' as a status filter")
    where = [q.IN_SCOPE, "t.status IS NOT 'deleted'"]
    params = q.scope_params(ctx.scope, statuses=jsontext.dumps(statuses),
                            spec=p.get("--spec"), category=p.get("--category"))
    if statuses:
        where.append("t.status IN (SELECT value FROM json_each(:statuses))")
    if "--spec" in p:
        where.append("t.spec_ref = :spec")
    if "--category" in p:
        where.append("t.category = :category")
    count = db.write(ctx.conn, lambda conn: conn.execute(
        f"UPDATE tasks AS t SET {stamp} WHERE " + " AND ".join(where), params).rowcount)
    return f"deleted {count} tasks\n"


def _pair(argv: Sequence[str], verb: str) -> tuple[str, str]:
    slug, rest = A.optional_id(argv)
    p = A.flags(rest, values=("--by",))
    usage = f"ralph task {verb} <id> --by <blocker-id>"
    if not slug:
        raise TaskError("missing task ID", usage=usage)
    if not p.get("--by"):
        raise TaskError("missing --by <blocker-id>", usage=usage)
    return slug, p["--by"]


def block(ctx: Ctx, argv: Sequence[str]) -> str:
    slug, by = _pair(argv, "block")

    def act(conn):
        task_id, _ = q.task_id_status(conn, ctx.scope, slug)
        blocker_id, _ = q.task_id_status(conn, ctx.scope, by, "blocker task")
        conn.execute("INSERT OR IGNORE INTO task_deps (task_id, blocked_by) VALUES (?, ?)",
                     (task_id, blocker_id))
    db.write(ctx.conn, act)
    return f"blocked {slug} by {by}\n"


def unblock(ctx: Ctx, argv: Sequence[str]) -> str:
    slug, by = _pair(argv, "unblock")

    def act(conn):
        removed = conn.execute(
            "DELETE FROM task_deps WHERE task_id = (SELECT t.id FROM tasks t WHERE "
            f"{q.IN_SCOPE} AND t.slug = :slug) AND blocked_by = (SELECT t.id FROM tasks t "
            f"WHERE {q.IN_SCOPE} AND t.slug = :by)",
            q.scope_params(ctx.scope, slug=slug, by=by)).rowcount
        if not removed:
            raise not_found("dependency not found")
    db.write(ctx.conn, act)
    return f"unblocked {slug} from {by}\n"


__all__ = ["create", "update", "delete", "block", "unblock"]
