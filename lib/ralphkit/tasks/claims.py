"""Owns claims that hold across machines (PostgreSQL store): choosing and locking the task to
claim while other claimers skip it (FOR UPDATE SKIP LOCKED), the reason an expired lease
gives when another host takes its task, and fencing tokens. Every claim bumps the task's
`claim_version`; the claimer's token (slug and version) goes to `$RALPH_CLAIMS_FILE`, which a
ralph run gives each agent; `renew`, `done` and `fail` present it, and a holder whose claim was
superseded is refused and writes nothing. A call without a token (an operator at a
terminal) is not fenced. The SQLite store has none of this (one machine, one run lock).
Does not own the commands (build_cmds.py) or the claimable predicate (queries.py)."""
from __future__ import annotations

import os

from ralphkit.tasks import queries as q
from ralphkit.tasks.errors import TaskError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping

    from ralphkit.tasks.context import Ctx

_EXPIRED = "t.status = 'active' AND t.lease_expires_at < datetime('now')"


def lock_first(conn, ctx: Ctx, extra: str, target: str | None, params: dict):
    """The task a claim takes, its row locked for this transaction, or None. Open tasks and
    expired leases are each walked in index order (s.8), rows other claimers hold skipped."""
    ready = f"NOT {q.BLOCKED} AND NOT {q.HELD} AND ({extra})"
    if target is not None:
        ready += " AND t.slug = :target"
    found = []
    for status in ("t.status = 'open'", _EXPIRED):
        found += q.fetch_tasks(conn, ctx.scope, f"{status} AND {ready}", limit=1, lock=True,
                               target=target, **params)
    if not found:
        return None
    return min(found, key=lambda t: (t["priority"], t["created_at"], t["rowid"]))


def expired_reason(conn, task) -> str | None:
    """Why a task is taken from its holder: its lease ran out (None: it was open)."""
    if task["status"] != "active":
        return None
    row = conn.execute("SELECT hostname, last_heartbeat FROM agents WHERE id = ?",
                       (task["assignee"] or "",)).fetchone()
    holder = f"agent '{task['assignee'] or ''}'"
    if row is not None and row[0]:
        holder += f" on host '{row[0]}'"
    beat = f", last heartbeat {row[1]}" if row is not None and row[1] else ""
    return f"lease expired at {task['lease_expires_at']}: {holder} stopped renewing it{beat}"


# --- fencing tokens -----------------------------------------------------------------------

def _file(environ: Mapping[str, str], cwd: str) -> str | None:
    name = environ.get("RALPH_CLAIMS_FILE", "")
    return os.path.join(cwd, name) if name else None


def record(environ: Mapping[str, str], cwd: str, slug: str, version: int) -> None:
    """Keep the claimer's token: one `<version> <slug>` line appended (the last one counts)."""
    path = _file(environ, cwd)
    if path is None:
        return
    try:
        with open(path, "a", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(f"{version} {slug}\n")
    except OSError as err:
        raise TaskError(f"cannot write RALPH_CLAIMS_FILE {path}: {err.strerror}") from err


def token(environ: Mapping[str, str], cwd: str, slug: str) -> int | None:
    """The claim version this caller holds for slug, or None (no token: not fenced)."""
    path = _file(environ, cwd)
    if path is None:
        return None
    found = None
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            for line in handle:
                version, _, held = line.rstrip("\n").partition(" ")
                if held == slug and version.isdigit():
                    found = int(version)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise TaskError(f"cannot read RALPH_CLAIMS_FILE {path}: {err.strerror}") from err
    return found


def superseded(conn, task, held: int) -> TaskError:
    """The refusal of a holder whose claim `held` is no longer the task's claim."""
    row = conn.execute("SELECT hostname FROM agents WHERE id = ?",
                       (task["assignee"] or "",)).fetchone()
    now = f"agent '{task['assignee']}'" if task["assignee"] else "nobody"
    if row is not None and row[0]:
        now += f" on host '{row[0]}'"
    return TaskError(f"task '{task['slug']}' is no longer held by this claim (claim {held}; "
                     f"now claim {task['claim_version']}, {task['status']}, held by {now}): "
                     "nothing written")


__all__ = ["lock_first", "expired_reason", "record", "token", "superseded"]
