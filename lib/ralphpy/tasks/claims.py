"""Owns claims that hold across machines (PostgreSQL store): choosing and locking the task to
claim while other claimers skip it (FOR UPDATE SKIP LOCKED), the reason an expired lease
gives when another host takes its task, and fencing tokens. Every claim bumps the task's
`claim_version`; the claimer's token (slug and version) goes to `$RALPH_CLAIMS_FILE`, which a
ralph run gives each agent; `renew`, `done` and `fail` present it, and a holder whose claim was
superseded is refused and writes nothing. A call without a token (an operator at a
terminal) is not fenced. A caller presenting a claims file without a token for the task (a
session of ralph's, on the SQLite store too, which has no claim versions) may finish only a
task its own agent holds (other_holder): the sessions of a `--parallel` run share a backlog.
Does not own the commands (build_cmds.py) or the claimable predicate and its walks
(queries.py)."""
from __future__ import annotations

import os

from ralphpy.tasks import queries as q
from ralphpy.tasks.errors import TaskError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping

    from ralphpy.tasks.context import Ctx

_COLUMNS = "t.id, t.status, t.assignee, t.lease_expires_at, t.priority, t.created_at, t.rowid"
_LOCK = " FOR UPDATE OF t SKIP LOCKED"


def claim(conn, ctx: Ctx, extra: str, target: str | None, params: dict):
    """Claim the first claimable task (or target) for params' agent and lease: open tasks and
    expired leases each walked in index order (queries.claimable_walks), rows other claimers
    hold skipped; the claim version bumped; a taken expired lease's reason names its holder's
    host. At most two statements, each a transaction of its own (db.write(concurrent=True)):
    the second only when the first claimed nothing, which it then wrote nothing for.
    Returns the claimed task as fetch_tasks gives it, or None."""
    if target is not None:
        extra = f"({extra}) AND t.slug = :target"
    params = {**q.scope_params(ctx.scope), **params, "target": target}
    return (conn.fetch_one(_open_claim(extra), params)
            or conn.fetch_one(_any_claim(extra), params))


def _open_claim(extra: str) -> str:
    """The claim while no lease of the scope has run out, as nearly always: the first open
    task; none when a lease has run out (then _any_claim decides, in the spec's order). Without
    the walk of expired leases and the join for their reason, the server does a fifth less work
    a claim, and many claimers on few cores wait for that work.
    The test for a run-out lease is a WHERE term, which PostgreSQL evaluates once per
    statement. As the LIMIT (expired_walk_limit's way), whose value the planner cannot know, it
    is guessed at a tenth of the tasks, and the plan read every task of the store a claim."""
    open_one, _ = q.claimable_walks(
        _COLUMNS, f"({extra}) AND NOT {q.LEASE_EXPIRED_IN_SCOPE}", "1", _LOCK)
    return (f"WITH chosen AS ({open_one}) "
            "UPDATE tasks SET status = 'active', assignee = :agent, updated_at = datetime('now'), "
            "lease_expires_at = datetime('now', :lease), claim_version = tasks.claim_version + 1 "
            f"FROM chosen WHERE tasks.id = chosen.id RETURNING {_RETURNING}")


def _any_claim(extra: str) -> str:
    """The claim in the spec's order over open tasks and expired leases
    (docs/contract/task-cli.md s.9.4), in one statement."""
    open_one, expired_one = q.claimable_walks(_COLUMNS, extra, "1", _LOCK)
    return (
        f"WITH open_one AS ({open_one}), expired_one AS ({expired_one}), "
        "chosen AS (SELECT * FROM open_one UNION ALL SELECT * FROM expired_one "
        "ORDER BY priority, created_at, rowid LIMIT 1) "
        "UPDATE tasks SET status = 'active', assignee = :agent, updated_at = datetime('now'), "
        "lease_expires_at = datetime('now', :lease), claim_version = tasks.claim_version + 1, "
        "retry_count = coalesce(tasks.retry_count, 0) + CASE WHEN chosen.status = 'active' "
        "THEN 1 ELSE 0 END, fail_reason = CASE WHEN chosen.status = 'active' THEN "
        f"{_EXPIRED_REASON} ELSE tasks.fail_reason END "
        "FROM chosen LEFT JOIN agents a ON a.id = chosen.assignee "
        f"WHERE tasks.id = chosen.id RETURNING {_RETURNING}")


# The claimed task as fetch_tasks gives it, and whether it has blockers to read.
_RETURNING = (", ".join(f"tasks.{c.strip()}" for c in q.COLUMNS.split(","))
              + ", tasks.rowid, tasks.claim_version, EXISTS (SELECT 1 FROM task_deps d WHERE "
              "d.task_id = tasks.id) AS has_deps")


# "lease expired at <time>: agent '<id>' on host '<host>' stopped renewing it, last heartbeat
# <time>" (the host and the heartbeat only when the agent table knows them)
_EXPIRED_REASON = (
    "'lease expired at ' || coalesce(chosen.lease_expires_at, '') || ': agent ''' || "
    "coalesce(chosen.assignee, '') || '''' || coalesce(' on host ''' || nullif(a.hostname, '') "
    "|| '''', '') || ' stopped renewing it' || coalesce(', last heartbeat ' || a.last_heartbeat, '')")


# --- fencing tokens -----------------------------------------------------------------------

def _file(environ: Mapping[str, str], cwd: str) -> str | None:
    name = environ.get("RALPH_CLAIMS_FILE", "")
    return os.path.join(cwd, name) if name else None


class TokenFile:
    """The claimer's claims file, where its tokens go: one `<version> <slug>` line appended
    each (the last one counts). Opened before the claim is made, so one that cannot be written
    refuses the claim with nothing written: the claim was made, and the agent, told that it
    failed, held a task it did not know of. keep=False, or no RALPH_CLAIMS_FILE: nothing kept.
    A class, not contextlib: scripts/task on SQLite imports no functools (decisions/0002)."""

    def __init__(self, environ: Mapping[str, str], cwd: str, *, keep: bool = True) -> None:
        self.path = _file(environ, cwd) if keep else None
        self.fd = None
        if self.path is not None:
            try:
                self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            except OSError as err:
                raise self._error(err) from err

    def __enter__(self) -> TokenFile:
        return self

    def __exit__(self, *exc_info) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def record(self, slug: str, version: int) -> None:
        if self.fd is None:
            return
        # One os.write: a text file object (its buffer, encoder and seek to the end) for one
        # line cost a claim's client a seventh of its time.
        line = f"{version} {slug}\n".encode("utf-8", "surrogateescape")
        try:
            while line:                      # a short write (a full disk) goes on or fails
                line = line[os.write(self.fd, line):]
        except OSError as err:
            raise self._error(err) from err

    def _error(self, err: OSError) -> TaskError:
        return TaskError(f"cannot write RALPH_CLAIMS_FILE {self.path}: {err.strerror}")


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


def other_holder(environ: Mapping[str, str], slug: str, holder: str | None) -> TaskError | None:
    """The refusal of a session's `done` or `fail` (it presents a claims file, as every agent
    of a `--parallel` run and of a fleet does) of active task `slug`, which agent `holder`
    holds, when that is another agent; None when the caller presents none or holds it. Every
    store and task source asks it."""
    agent = environ.get("RALPH_AGENT_ID", "")
    if not environ.get("RALPH_CLAIMS_FILE") or not holder or holder == agent:
        return None
    return TaskError(f"task '{slug}' is held by agent '{holder}', not by this session's agent "
                     f"'{agent}': nothing written")


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


__all__ = ["claim", "TokenFile", "token", "other_holder", "superseded"]
