"""Owns the internal commands by which ralph.py edits tasks (ralph.py extensions, not in the
help): `_hold`/`_unhold` (a held task is never claimable and counts as blocked), `_reopen` (a
done task whose branch could not be merged goes back to open) and `_recommit` (a done task's
result names its commit's id after a `--sync` rebase). Every write is one transaction. Does not
own argument rules (args.py) or the spec's own edits (edit.py)."""
from __future__ import annotations

from ralphpy.strays import ENV as SESSION_TAG
from ralphpy.tasks import args as A
from ralphpy.tasks import db, jsontext, queries as q
from ralphpy.tasks.context import Ctx
from ralphpy.tasks.errors import TaskError
from ralphpy.git_files import object_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping, Sequence


def _id_and_reason(argv: Sequence[str], command: str) -> tuple[str, str | None]:
    slug, rest = A.optional_id(argv)
    reason = A.flags(rest, values=("--reason",)).get("--reason")
    if not slug:
        raise TaskError("missing task ID", usage=f"ralph task {command} <id> --reason <text>")
    return slug, reason


def hold(ctx: Ctx, argv: Sequence[str]) -> str:
    slug, reason = _id_and_reason(argv, "_hold")

    def act(conn):
        task_id, _ = q.task_id_status(conn, ctx.scope, slug)
        conn.execute("INSERT INTO task_holds (task_id, reason) VALUES (?, ?) ON CONFLICT (task_id) "
                     "DO UPDATE SET reason = excluded.reason, created_at = excluded.created_at",
                     (task_id, "" if reason is None else reason))
    db.write(ctx.conn, act)
    return f"held {slug}\n"


def refuse_in_session(environ: Mapping[str, str]) -> None:
    """A hold parks a task for a person (it failed too often, its verification or the tamper
    check held it): an agent session, whose environment carries its tag, cannot release it."""
    if environ.get(SESSION_TAG):
        raise TaskError("_unhold is refused inside an agent session: a held task waits for a "
                        "person (run `ralph task _unhold <id>` from your own shell)")


def unhold(ctx: Ctx, argv: Sequence[str]) -> str:
    refuse_in_session(ctx.environ)
    slug, rest = A.optional_id(argv)
    A.flags(rest)
    if not slug:
        raise TaskError("missing task ID", usage="ralph task _unhold <id>")

    def act(conn):
        task_id, _ = q.task_id_status(conn, ctx.scope, slug)
        conn.execute("DELETE FROM task_holds WHERE task_id = ?", (task_id,))
    db.write(ctx.conn, act)
    return f"unheld {slug}\n"


def reopen(ctx: Ctx, argv: Sequence[str]) -> str:
    """Internal: a `done` task whose branch could not be merged back goes back to
    `open` as `fail` would send an active one: assignee and lease cleared, retry_count + 1,
    fail_reason set, result cleared. Only done tasks (exit 1 otherwise). `--no-attempt`:
    retry_count left as it is, as `_release` leaves it: a task done whose pull request waits
    for its checks or a review (--pr) failed nothing."""
    slug, rest = A.optional_id(argv)
    parsed = A.flags(rest, values=("--reason",), switches=("--no-attempt",))
    if not slug:
        raise TaskError("missing task ID",
                        usage="ralph task _reopen <id> --reason <text> [--no-attempt]")
    reason = parsed.get("--reason")
    retries = "retry_count" if parsed.get("--no-attempt") else "coalesce(retry_count, 0) + 1"

    def act(conn):
        task_id, status = q.task_id_status(conn, ctx.scope, slug)
        if status != "done":
            raise TaskError(f"task '{slug}' is not done (status: {status})")
        conn.execute("UPDATE tasks SET status = 'open', assignee = NULL, lease_expires_at = NULL, "
                     f"retry_count = {retries}, fail_reason = ?, result = NULL, "
                     "updated_at = datetime('now') WHERE id = ?", (reason or None, task_id))
    db.write(ctx.conn, act)
    return f"reopened {slug}\n"


_RECOMMIT_USAGE = "ralph task _recommit <id> <old-commit> <new-commit>"


def recommit(ctx: Ctx, argv: Sequence[str]) -> str:
    """Internal (`--sync`): after a rebase gave a done task's commit a new id, the task's
    result names the new id where it named <old> (the full id, or the abbreviation of it the
    agent recorded). The rest of the result keeps every byte, and nothing else changes (not
    updated_at: the task was not done again). A result naming another commit is left as it
    is: `unchanged <id>`. Only done tasks (exit 1 otherwise)."""
    slug, rest = A.optional_id(argv)
    if not slug or len(rest) != 2:
        raise TaskError("missing argument", usage=_RECOMMIT_USAGE)
    old, new = rest
    for value in (old, new):
        if not object_id(value.encode("utf-8", "surrogateescape")):
            raise TaskError(f"not a full commit id: {value}", usage=_RECOMMIT_USAGE)

    def act(conn) -> bool:
        task = q.existing_task(conn, ctx.scope, slug)
        if task["status"] != "done":
            raise TaskError(f"task '{slug}' is not done (status: {task['status']})")
        result = task["result"]
        at = _commit_value_at(result or "", old)
        if at is None:
            return False
        start, end = at
        conn.execute("UPDATE tasks SET result = ? WHERE id = ?",
                     (result[:start] + new + result[end:], task["id"]))
        return True
    return f"{'recommitted' if db.write(ctx.conn, act) else 'unchanged'} {slug}\n"


def _commit_value_at(result: str, commit: str) -> tuple[int, int] | None:
    """Where the result's `commit` member has its value, when that value is `commit` or an
    abbreviation of it (at least 4 digits, as git abbreviates); else None."""
    try:
        value = jsontext.loads(result)
    except ValueError:
        return None
    value = value.get("commit") if isinstance(value, dict) else None
    if not isinstance(value, str) or len(value) < 4 or not commit.startswith(value):
        return None
    start = result.find(f'"{value}"', result.find('"commit"') + len('"commit"')) + 1
    return (start, start + len(value)) if start > 0 else None


__all__ = ["hold", "unhold", "reopen", "recommit"]
