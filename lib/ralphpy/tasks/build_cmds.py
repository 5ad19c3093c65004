"""Owns the build-phase commands (docs/contract/task-cli.md s.9.2-9.7): plan-status, peek, claim,
renew, done, fail, and `_release`, fail's twin for ralph.py that counts no failure. Each returns its
stdout text or raises TaskError. Does not own argument syntax rules
(args.py), SQL shared with other commands (queries.py) or formats (markdown.py)."""
from __future__ import annotations

from ralphpy.tasks import args as A
from ralphpy.tasks import claims, db, jsontext, markdown as md, queries as q
from ralphpy.tasks.context import Ctx
from ralphpy.tasks.errors import EXIT_NOT_FOUND, TaskError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence


def plan_status(ctx: Ctx, argv: Sequence[str]) -> str:
    if argv:
        raise TaskError(f"unknown flag '{argv[0]}'")
    params = q.scope_params(ctx.scope)

    # Two reads of one snapshot: each status's count, then how many tasks are blocked and how
    # many of those are open or active. SQLite: from the counts and the blocked tasks the
    # triggers keep (task_counts, task_blocked, decisions/0037), a few rows whatever the size
    # of the backlog and the number of dependencies. PostgreSQL: over idx_tasks_id_status (a task's id, status
    # and scope, and its blockers' statuses): no table row is read (decisions/0002), and only
    # the dependencies and holds are walked. Holds count as blocked only for tasks that could
    # otherwise be worked on; without any hold the test is left out.
    def count(conn):
        held = conn.execute("SELECT EXISTS (SELECT 1 FROM task_holds)").fetchone()[0]
        if not db.is_postgres(conn):
            try:
                return q.status_counts(conn, params), q.blocked_counts(conn, params, held)
            except db.sqlite3.OperationalError as err:  # a file opened read-only, made before
                if "no such table" not in str(err):      # the tables (decisions/0037): counted
                    raise
        totals = conn.execute(f"SELECT t.status, count(*) FROM tasks t WHERE {q.IN_SCOPE} "
                              "GROUP BY t.status", params).fetchall()
        blocked = (f"({q.BLOCKED_IDS} OR (t.status IN ('open', 'active') AND {q.HELD_IDS}))"
                   if held else q.BLOCKED_IDS)
        return totals, conn.execute(
            "SELECT count(*), sum(CASE WHEN t.status = 'open' THEN 1 ELSE 0 END), "
            f"sum(CASE WHEN t.status = 'active' THEN 1 ELSE 0 END) FROM tasks t {q.BY_ID_STATUS} "
            f"WHERE {q.IN_SCOPE} AND {blocked}", params).fetchone()
    totals, (blocked, blocked_open, blocked_active) = db.read(ctx.conn, count)
    counts = dict.fromkeys(("open", "active", "done", "blocked", "deleted"), 0)
    for status, n in totals:
        if status in ("open", "active", "done", "deleted"):
            counts[status] = n
    # s.9.2: blocked tasks of any status count as blocked; open and active only unblocked ones
    counts["blocked"] = blocked
    counts["open"] -= blocked_open or 0  # sum() of no rows is NULL
    counts["active"] -= blocked_active or 0
    return ", ".join(f"{n} {name}" for name, n in counts.items()) + "\n"


def _frozen(ctx: Ctx) -> tuple[str, dict]:
    frozen = q.frozen_slugs(ctx.environ, ctx.cwd)
    return ("TRUE", {}) if frozen is None else (q.FROZEN, {"frozen": frozen})


def peek(ctx: Ctx, argv: Sequence[str]) -> str:
    limit = A.flags(argv, values=("-n",)).get("-n", "5")
    if not A.digits(limit):
        raise TaskError(f"-n must be a non-negative integer, got: {limit}")
    frozen_sql, frozen = _frozen(ctx)

    def snapshot(conn):
        ready = q.fetch_tasks(conn, ctx.scope, q.first_claimable(frozen_sql),
                              limit=min(int(limit), 2**62), by_rowid=True, **frozen)
        active = q.fetch_tasks(conn, ctx.scope, "t.status = 'active' AND t.lease_expires_at "
                               f">= datetime('now') AND {frozen_sql}", **frozen)
        return ready, active, q.fetch_blockers(conn, [t["id"] for t in ready + active])
    ready, active, blockers = db.read(ctx.conn, snapshot)
    # s.9.3: a claimable task shows as open (an expired lease too), without assignee.
    parts = [md.task_section(t, blockers.get(t["id"], ()), md.PEEK_OPEN, "open") for t in ready]
    parts += [md.task_section(t, blockers.get(t["id"], ()), md.PEEK_ACTIVE) for t in active]
    return md.join_sections(parts)


def claim(ctx: Ctx, argv: Sequence[str]) -> str:
    target, rest = A.optional_id(argv)
    parsed = A.flags(rest, values=("--lease", "--agent"))
    seconds = A.lease(parsed)
    agent = parsed.get("--agent", ctx.environ.get("RALPH_AGENT_ID", ""))
    frozen_sql, frozen = _frozen(ctx)
    fleet = db.is_postgres(ctx.conn)

    def take(conn):
        if fleet:
            task = claims.claim(conn, ctx, frozen_sql, target,
                                {"agent": agent, "lease": f"+{seconds} seconds", **frozen})
            if task is None:
                return None
            # blockers read after the claim: claimable means every blocker is done or deleted
            blockers = q.fetch_blockers(conn, [task["id"]]) if task["has_deps"] else {}
            return task, blockers.get(task["id"], ())
        if target is None:
            where = q.first_claimable(frozen_sql)
        else:
            where = f"{q.CLAIMABLE} AND {frozen_sql} AND t.slug = :target"
        found = q.fetch_tasks(conn, ctx.scope, where, limit=1, by_rowid=target is None,
                              target=target, **frozen)
        if not found:
            return None
        slug = found[0]["slug"]
        conn.execute(
            "UPDATE tasks SET status = 'active', assignee = ?, updated_at = datetime('now'), "
            "lease_expires_at = datetime('now', ?), retry_count = coalesce(retry_count, 0) + "
            "CASE WHEN status = 'active' THEN 1 ELSE 0 END WHERE id = ?",
            (agent, f"+{seconds} seconds", found[0]["id"]))
        task = q.fetch_task(conn, ctx.scope, slug)
        return task, q.fetch_blockers(conn, [task["id"]]).get(task["id"], ())
    with claims.TokenFile(ctx.environ, ctx.cwd, keep=fleet) as tokens:  # SQLite: no versions
        claimed = db.write(ctx.conn, take, concurrent=True)
        if claimed is None:
            raise TaskError("Task not eligible" if target is not None else "No eligible tasks",
                            EXIT_NOT_FOUND, plain=True)
        if fleet:
            tokens.record(claimed[0]["slug"], claimed[0]["claim_version"])
    return md.join_sections([md.task_section(*claimed, md.CLAIM)])


def _active(conn, task, held: int | None) -> dict:
    """task, when it is active; held: the caller's fencing token (claims.py), checked first."""
    if held is not None and task["claim_version"] != held:
        raise claims.superseded(conn, task, held)
    if task["status"] != "active":
        raise TaskError(f"task '{task['slug']}' is not active (status: {task['status']})")
    return task


def _held(ctx: Ctx, conn, task, held: int | None) -> dict:
    """task, when it is active and the caller may finish it: it holds the task's claim (its
    token, claims.py), or it presents no token for it and is not a session another agent's
    task is out of bounds for (claims.other_holder)."""
    task = _active(conn, task, held)
    if held is None and (refusal := claims.other_holder(ctx.environ, task["slug"],
                                                         task["assignee"])):
        raise refusal
    return task


def _fenced_update(conn, ctx: Ctx, task, held: int | None, sets: str, params: tuple) -> None:
    """UPDATE tasks SET sets of task, only while the caller's claim is still the task's: a
    claim taken meanwhile (another host, after the lease expired) refuses it, nothing written."""
    if held is None:
        conn.execute(f"UPDATE tasks SET {sets} WHERE id = ?", (*params, task["id"]))
        return
    changed = conn.execute(f"UPDATE tasks SET {sets} WHERE id = ? AND claim_version = ? AND "
                           "status = 'active'", (*params, task["id"], held)).rowcount
    if not changed:
        raise claims.superseded(conn, q.fetch_task(conn, ctx.scope, task["slug"]), held)


def _token(ctx: Ctx, slug: str) -> int | None:
    return claims.token(ctx.environ, ctx.cwd, slug) if db.is_postgres(ctx.conn) else None


def renew(ctx: Ctx, argv: Sequence[str]) -> str:
    slug, rest = A.optional_id(argv)
    parsed = A.flags(rest, values=("--lease", "--agent"))
    if not slug:
        raise TaskError("missing task ID", usage="ralph task renew <id> [--lease N]")
    seconds = A.lease(parsed)
    agent = parsed.get("--agent", ctx.environ.get("RALPH_AGENT_ID", ""))

    held = _token(ctx, slug)

    def act(conn):
        task = _active(conn, q.existing_task(conn, ctx.scope, slug), held)
        if (task["assignee"] or "") != agent:
            raise TaskError(f"agent '{agent}' is not the assignee of task '{slug}'")
        _fenced_update(conn, ctx, task, held, "lease_expires_at = datetime('now', ?), "
                       "updated_at = datetime('now')", (f"+{seconds} seconds",))
    db.write(ctx.conn, act)
    return f"renewed {slug}\n"


def _first_id(argv: Sequence[str], usage: str) -> tuple[str, Sequence[str]]:
    if not argv or not argv[0]:
        raise TaskError("missing task ID", usage=usage)
    return argv[0], argv[1:]


def done(ctx: Ctx, argv: Sequence[str]) -> str:
    slug, rest = _first_id(argv, "ralph task done <id> [--result '<json>']")
    result = A.flags(rest, values=("--result",)).get("--result") or None
    if result is not None:
        try:
            parsed = jsontext.loads(result)
        except ValueError:
            parsed = None
        commit = parsed.get("commit") if isinstance(parsed, dict) else None
        if commit is None or commit is False:  # jq truthiness: 0 and "" are values
            raise TaskError("result JSON must include a 'commit' key")

    held = _token(ctx, slug)

    def act(conn):
        task = q.existing_task(conn, ctx.scope, slug)
        if held is not None and (task["status"], task["claim_version"]) == ("done", held):
            return  # this claim's `done` again: its answer was lost with the connection
        _fenced_update(conn, ctx, _held(ctx, conn, task, held), held,
                       "status = 'done', result = ?, updated_at = datetime('now')", (result,))
    db.write(ctx.conn, act)
    return f"done {slug}\n"


def _give_back(ctx: Ctx, argv: Sequence[str], command: str, retries: str) -> str:
    """An active task back to open, assignee and lease cleared, the reason kept as its
    fail_reason; retries: the new retry_count. Fenced as done is."""
    slug, rest = _first_id(argv, f'ralph task {command} <id> [--reason "<text>"]')
    reason = A.flags(rest, values=("--reason",)).get("--reason") or None

    held = _token(ctx, slug)

    def act(conn):
        task = _held(ctx, conn, q.existing_task(conn, ctx.scope, slug), held)
        _fenced_update(conn, ctx, task, held, "status = 'open', assignee = NULL, "
                       f"lease_expires_at = NULL, retry_count = {retries}, "
                       "fail_reason = ?, updated_at = datetime('now')", (reason,))
    db.write(ctx.conn, act)
    return f"{'failed' if command == 'fail' else 'released'} {slug}\n"


def fail(ctx: Ctx, argv: Sequence[str]) -> str:
    return _give_back(ctx, argv, "fail", "coalesce(retry_count, 0) + 1")


def release(ctx: Ctx, argv: Sequence[str]) -> str:
    """Internal: `fail` for a session that was no attempt at its task (a usage limit, a stop
    of the whole run, the run's own Ctrl+C): retry_count is left as it is, so --max-attempts,
    which counts a task's earlier runs through it, does not hold the task for failures it
    never had."""
    return _give_back(ctx, argv, "_release", "retry_count")


__all__ = ["plan_status", "peek", "claim", "renew", "done", "fail", "release"]
