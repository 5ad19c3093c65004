"""Owns the read-only commands over many tasks or one (docs/contract/task-cli.md s.9.8, 9.9, 9.13)
and the internal `_export-json` (a ralph.py extension): list, show, deps. Each returns its stdout
text. Renders N tasks with a constant number of queries. Also the `_export-json` records of the
parts of the scope a run reads between sessions, each found by an index, and whether a task could
still be started. Does not own formats (markdown.py) or writes."""
from __future__ import annotations


from ralphpy import inert
from ralphpy.tasks import args as A
from ralphpy.tasks import db, dep_tree, jsontext, markdown as md, queries as q
from ralphpy.tasks.context import Ctx
from ralphpy.tasks.errors import TaskError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence


def list_tasks(ctx: Ctx, argv: Sequence[str]) -> str:
    parsed = A.flags(argv, values=("--status", "--assignee"), switches=("--all", "--markdown"))
    statuses = parsed.get("--status") or None
    if parsed.get("--all") and statuses is not None:
        raise TaskError("--all and --status are mutually exclusive")
    where, params = ["TRUE"], {}
    if statuses is not None:
        where.append("t.status IN (SELECT value FROM json_each(:statuses))")
        params["statuses"] = jsontext.dumps([s.strip() for s in statuses.split(",")])
    elif not parsed.get("--all"):
        where.append("t.status IS NOT 'deleted'")
    if "--assignee" in parsed:
        where.append("t.assignee = :assignee")
        params["assignee"] = parsed["--assignee"]
    markdown = bool(parsed.get("--markdown"))

    def snapshot(conn):
        tasks = q.fetch_tasks(conn, ctx.scope, " AND ".join(where), **params)
        if not tasks:
            return tasks, {}, {}
        holds = _holds(conn, ctx)
        if not markdown:
            return tasks, {}, holds
        # One query either way: the whole scope's dependencies when most tasks are listed.
        whole = ctx.scope if len(tasks) > 500 else None
        return tasks, q.fetch_blockers(conn, [t["id"] for t in tasks], whole_scope=whole), holds
    tasks, blockers, holds = db.read(ctx.conn, snapshot)
    if not markdown:
        return md.task_table(tasks, holds)
    return inert.shown(md.join_sections([md.task_section(   # titles shown, not obeyed
        t, blockers.get(t["id"], ()), md.LIST_MD, held=holds.get(t["id"])) for t in tasks]),
        lines=True)


def _holds(conn, ctx: Ctx) -> dict:
    """task id -> hold reason ('' when none was given), for the held tasks of the scope
    (--max-attempts, the respawn guard, assignment mode: `task _hold`)."""
    return dict(conn.execute(
        f"SELECT h.task_id, coalesce(h.reason, '') FROM task_holds h JOIN tasks t "
        f"ON t.id = h.task_id WHERE {q.IN_SCOPE}", q.scope_params(ctx.scope)))


def _one(conn, ctx: Ctx, slug: str) -> tuple[dict, list[tuple]]:
    task = q.existing_task(conn, ctx.scope, slug)
    return task, q.fetch_blockers(conn, [task["id"]]).get(task["id"], [])


def _required_id(argv: Sequence[str], usage: str, **spec) -> tuple[str, dict]:
    slug, rest = A.optional_id(argv)
    parsed = A.flags(rest, **spec)
    if not slug:
        raise TaskError("missing task ID", usage=usage)
    return slug, parsed


_SHOW = (("ID", "slug"), ("Title", "title"), ("Status", "status"), ("Priority", "priority"),
         ("Category", "category"), ("Description", "description"), ("Spec", "spec_ref"),
         ("Ref", "ref"), ("Assignee", "assignee"), ("Lease", "lease_expires_at"),
         ("Retries", "retry_count"), ("Fail reason", "fail_reason"), ("Result", "result"),
         ("Created", "created_at"), ("Updated", "updated_at"), ("Deleted", "deleted_at"))
_ALWAYS = {"ID", "Title", "Status", "Priority", "Created"}


def show(ctx: Ctx, argv: Sequence[str]) -> str:
    slug, parsed = _required_id(argv, "ralph task show <id> [--with-deps]",
                                switches=("--with-deps",))
    def snapshot(conn):
        task, blockers = _one(conn, ctx, slug)
        held = conn.execute("SELECT coalesce(reason, '') FROM task_holds WHERE task_id = ?",
                            (task["id"],)).fetchone()
        return task, blockers, held
    task, blockers, held = db.read(ctx.conn, snapshot)
    lines = []
    for label, key in _SHOW:
        value = task[key]
        shown = (label in _ALWAYS or (value not in (None, "") and
                                      not (label == "Retries" and value == 0)))
        if shown:
            lines.append(f"{label + ':':<13}{'' if value is None else value}")
        if label == "Status" and held is not None:    # no claim takes it until released
            from ralphpy.tasks import question_files  # pathlib: only for a held task
            lines.append(f"{'Held:':<13}{held[0] or 'yes'}; "
                         f"{question_files.release_hint(held[0], task['slug'])}")
    steps = md.steps_list(task["steps"])
    if steps:
        lines += ["", "Steps:"] + [f"  {i}. {s if isinstance(s, str) else md.compact(s)}"
                                   for i, s in enumerate(steps, 1)]
    if blockers:
        lines += ["", "Dependencies:"] + [f"  {b[0]} ({b[1]})" for b in blockers]
    with_results = [b for b in blockers if b[3]]
    if parsed.get("--with-deps") and with_results:
        lines += ["", "Blocker Results:"] + [f"  {b[0]}: {b[3]}" for b in with_results]
    return inert.shown("\n".join(lines) + "\n", lines=True)    # titles shown, not obeyed


def deps(ctx: Ctx, argv: Sequence[str]) -> str:
    slug, _ = _required_id(argv, "ralph task deps <id>")

    def snapshot(conn):
        task = q.existing_task(conn, ctx.scope, slug)
        edges = conn.execute(
            "SELECT d.task_id, b.id, b.slug, b.status, b.title FROM task_deps d "
            "JOIN tasks t ON t.id = d.task_id JOIN tasks b ON b.id = d.blocked_by "
            f"WHERE {q.IN_SCOPE}", q.scope_params(ctx.scope)).fetchall()
        return task, edges
    task, edges = db.read(ctx.conn, snapshot)
    graph: dict[str, list[str]] = {}
    info: dict[str, tuple] = {}
    for task_id, b_id, *blocker in edges:
        graph.setdefault(task_id, []).append(b_id)
        info[b_id] = tuple(blocker)
    if not graph.get(task["id"]):
        return "(no dependencies)\n"
    lines = sorted((depth, *info[node]) for depth, node in dep_tree.walk(graph, task["id"]))
    return "".join(f"{'  ' * (d - 1)}{inert.shown(slug)} [{status}] {inert.shown(str(title))}\n"
                   for d, slug, status, title in lines)


def _record(t, blockers: dict, holds: dict) -> dict:
    """One task as `_export-json` prints it."""
    steps = md.steps_list(t["steps"])
    return {
        "id": t["slug"], "title": t["title"], "description": t["description"],
        "priority": t["priority"], "status": t["status"], "category": t["category"],
        "spec": t["spec_ref"], "ref": t["ref"], "assignee": t["assignee"],
        "lease_expires_at": t["lease_expires_at"], "retry_count": t["retry_count"],
        "fail_reason": t["fail_reason"], "steps": steps or None,
        "deps": [b[0] for b in blockers.get(t["id"], ())], "result": t["result"],
        "created_at": t["created_at"], "updated_at": t["updated_at"],
        "deleted_at": t["deleted_at"], "held": holds.get(t["id"]),
    }


def export_json(ctx: Ctx, argv: Sequence[str]) -> str:
    A.flags(argv)

    def snapshot(conn):
        tasks = q.fetch_tasks(conn, ctx.scope)
        holds = _holds(conn, ctx)
        return tasks, q.fetch_blockers(conn, (), whole_scope=ctx.scope), holds
    tasks, blockers, holds = db.read(ctx.conn, snapshot)
    return "".join(jsontext.dumps(_record(t, blockers, holds), ensure_ascii=False) + "\n"
                   for t in tasks)


# The parts of the scope a run reads between sessions, each found by an index (db.py), so that
# reading them costs the same at 100 tasks and at 100,000: (where, whether the scope's own
# indexes are kept out of the planner's way: without statistics SQLite takes the scope's
# equality for the better bet and walks every task of it).
SELECTIONS = {
    "touched": ("t.updated_at >= :since", True),                         # idx_tasks_updated
    "retried": ("t.retry_count > 0", True),                              # idx_tasks_retried
    "slugs": ("t.slug IN (SELECT value FROM json_each(:slugs))", False),  # (scope, slug) unique
    # a walk of the descriptions in C, once per run (the verify gate's start)
    "verify_line": ("lower(t.description) LIKE '%verify:%'", False),
}
# Whether the loop could still start a task: open or active, not held, every blocker done in
# the scope (the verify gate's re-check waits for that); the first such task ends the walk.
_PENDING = (f"SELECT 1 FROM tasks t WHERE {q.IN_SCOPE} AND t.status IN ('open', 'active') "
            f"AND NOT {q.HELD} AND NOT EXISTS (SELECT 1 FROM task_deps d LEFT JOIN tasks b "
            f"ON b.id = d.blocked_by AND b.scope_repo = :repo AND b.scope_branch = :branch "
            f"AND b.status = 'done' WHERE d.task_id = t.id AND b.id IS NULL) LIMIT 1")


def export_records(ctx: Ctx, selection: str, **params: object) -> list[dict]:
    """The `_export-json` records of the scope's tasks in SELECTIONS[selection], in the
    spec's order, read in one snapshot."""
    def snapshot(conn):
        where, unindexed = SELECTIONS[selection]
        tasks = q.fetch_tasks(conn, ctx.scope, where, by_rowid=unindexed, **params)
        ids = [t["id"] for t in tasks]
        if not ids:
            return [], {}, {}
        holds = dict(conn.execute(
            "SELECT h.task_id, coalesce(h.reason, '') FROM task_holds h "
            "WHERE h.task_id IN (SELECT value FROM json_each(?))", (jsontext.dumps(ids),)))
        return tasks, q.fetch_blockers(conn, ids), holds
    tasks, blockers, holds = db.read(ctx.conn, snapshot)
    return [_record(t, blockers, holds) for t in tasks]


def any_pending(ctx: Ctx) -> bool:
    """Whether a task of the scope could still be started (_PENDING)."""
    return db.read(ctx.conn, lambda conn: conn.execute(
        _PENDING, q.scope_params(ctx.scope)).fetchone() is not None)


__all__ = ["list_tasks", "show", "deps", "export_json", "export_records", "any_pending",
           "SELECTIONS"]
