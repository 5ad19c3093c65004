"""Owns `plan-sync` (docs/contract/task-cli.md s.9.1): validate every JSONL line first, then upsert
by slug, replace dependencies (forward references allowed) and soft-delete orphans of each spec, all
in one transaction, with a constant number of statements (the scope's tasks and the synced tasks'
dependencies read first, then batched writes of what differs); PostgreSQL's planner
statistics refreshed after a sync that changed something. Does not own the transaction
machinery (db.py) or other commands."""
from __future__ import annotations

import json
import uuid

from ralphpy.tasks import args as A
from ralphpy.tasks import db
from ralphpy.tasks import queries as q
from ralphpy.tasks.context import Ctx
from ralphpy.tasks.errors import TaskError
from ralphpy.tasks.markdown import compact

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence

_FIELDS = ("title", "description", "category", "priority", "spec_ref", "ref", "steps")


def _reject_constant(name: str) -> None:
    raise ValueError(name)  # NaN and Infinity are not JSON


def _text(value: object) -> str | None:
    if value is None or value == "" or value == [] or value == {}:
        return None
    return value if isinstance(value, str) else compact(value)


def _as_list(value: object) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def parse_line(n: int, line: str) -> dict:
    """One validated line -> {slug, fields..., deps}; raises the s.9.1 error for line n."""
    try:
        obj = json.loads(line, parse_constant=_reject_constant)
    except ValueError:
        raise TaskError(f"line {n}: invalid JSON: {line[:80]}") from None
    if not isinstance(obj, dict) or obj.get("id") in (None, ""):
        raise TaskError(f'line {n}: field "id" is missing or empty')
    if obj.get("t") in (None, ""):
        raise TaskError(f'line {n}: field "t" is missing or empty')
    priority = obj.get("p")
    if priority is None:  # null is treated like a missing key, as for id and t
        priority = 2
    elif not (type(priority) is int and priority >= 0):
        raise TaskError(f'line {n}: field "p" must be a non-negative integer, got: '
                        f"{compact(priority)}")
    steps = [s if isinstance(s, str) else compact(s) for s in _as_list(obj.get("steps"))]
    return {
        "slug": _text(obj["id"]), "title": _text(obj["t"]), "description": _text(obj.get("d")),
        "category": _text(obj.get("cat")), "priority": priority,
        "spec_ref": _text(obj.get("spec")), "ref": _text(obj.get("ref")),
        "steps": compact(steps) if steps else None,
        "deps": [d for d in (_text(x) for x in _as_list(obj.get("deps"))) if d],
    }


def plan_sync(ctx: Ctx, argv: Sequence[str]) -> str:
    A.flags(argv)  # plan-sync takes no argument: any is an unknown flag
    lines = [line for line in ctx.stdin.read().split("\n") if line.strip()]
    items = [parse_line(n, line) for n, line in enumerate(lines, 1)]
    counts, changed = db.write(ctx.conn, lambda conn: _apply(conn, ctx, items))
    if changed:  # else the statistics are as true as before, and ANALYZE would read every task
        db.refresh_statistics(ctx.conn)
    return "inserted: {}, updated: {}, deleted: {}, skipped (done): {}\n".format(*counts)


def _apply(conn, ctx: Ctx, items: list[dict]) -> tuple[tuple[int, int, int, int], bool]:
    """(the four counts, whether any task or dependency row changed)."""
    params = q.scope_params(ctx.scope)
    existing = {row[0]: dict(zip(("slug", "id", "status", *_FIELDS), row)) for row in conn.execute(
        "SELECT slug, id, status, " + ", ".join(_FIELDS) + " FROM tasks t WHERE " + q.IN_SCOPE,
        params)}
    inserted: dict[str, dict] = {}   # slug -> row to insert (insertion order kept)
    updated: dict[str, dict] = {}
    deps: dict[str, list[str]] = {}  # slug -> blocker slugs, for tasks not done
    n_ins = n_upd = n_skip = 0
    for item in items:
        slug = item["slug"]
        current = existing.get(slug)
        if current is None:
            current = {"slug": slug, "id": str(uuid.uuid4()), "status": "open",
                       **{f: item[f] for f in _FIELDS}}
            existing[slug] = inserted[slug] = current
            n_ins += 1
        elif current["status"] == "done":
            n_skip += 1
            continue
        elif any(current[f] != item[f] for f in _FIELDS):
            current.update({f: item[f] for f in _FIELDS})
            if slug not in inserted:
                updated[slug] = current
            n_upd += 1
        deps[slug] = item["deps"]
    cols = ", ".join(_FIELDS)
    conn.executemany(
        f"INSERT INTO tasks (id, slug, scope_repo, scope_branch, status, {cols}, created_at, "
        f"updated_at) VALUES (?, ?, ?, ?, 'open', {', '.join('?' * len(_FIELDS))}, "
        "datetime('now'), datetime('now'))",
        [(r["id"], slug, ctx.scope.repo, ctx.scope.branch, *(r[f] for f in _FIELDS))
         for slug, r in inserted.items()])
    conn.executemany(
        "UPDATE tasks SET " + ", ".join(f"{f} = ?" for f in _FIELDS)
        + ", updated_at = datetime('now') WHERE id = ?",
        [(*(r[f] for f in _FIELDS), r["id"]) for r in updated.values()])
    ids = {slug: row["id"] for slug, row in existing.items()}
    # The synced tasks' dependencies are compared, not deleted and inserted again: only rows
    # that differ are written, so a sync knows whether it changed any (the counts leave
    # dependencies out, s.9.1).
    wanted = dict.fromkeys((ids[s], ids[b]) for s, blockers in deps.items()
                           for b in blockers if b in ids)
    present = {tuple(pair) for pair in conn.execute(
        "SELECT task_id, blocked_by FROM task_deps WHERE task_id IN "
        "(SELECT value FROM json_each(?))", (json.dumps([ids[s] for s in deps]),))}
    gone = sorted(pair for pair in present if pair not in wanted)
    added = [pair for pair in wanted if pair not in present]
    conn.executemany("DELETE FROM task_deps WHERE task_id = ? AND blocked_by = ?", gone)
    conn.executemany("INSERT INTO task_deps (task_id, blocked_by) VALUES (?, ?)", added)
    n_del = 0
    by_spec: dict[str, list[str]] = {}
    for item in items:
        if item["spec_ref"]:
            by_spec.setdefault(item["spec_ref"], []).append(item["slug"])
    for spec, slugs in by_spec.items():
        n_del += conn.execute(
            "UPDATE tasks AS t SET status = 'deleted', deleted_at = datetime('now'), "
            f"updated_at = datetime('now') WHERE {q.IN_SCOPE} AND t.spec_ref = :spec AND "
            "t.status NOT IN ('done', 'deleted') AND t.slug NOT IN "
            "(SELECT value FROM json_each(:slugs))",
            {**params, "spec": spec, "slugs": json.dumps(slugs)}).rowcount
    return (n_ins, n_upd, n_del, n_skip), bool(n_ins or n_upd or n_del or gone or added)


__all__ = ["plan_sync", "parse_line"]
