"""Owns `agent register | list | deregister` (docs/contract/task-cli.md s.9.15): 4-hex agent ids
unique over the whole table, the scope's active agents, stopping an agent. Does not own the agent
table format (markdown.py) or anything about tasks."""
from __future__ import annotations

import os

from ralphpy.tasks import args as A
from ralphpy.tasks import db, markdown as md
from ralphpy.tasks.context import Ctx
from ralphpy.tasks.errors import TaskError, not_found

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence

_USAGE = "ralph task agent <register|list|deregister>"
_ATTEMPTS = 10


def host_name(environ) -> str:
    """$RALPH_HOSTNAME (containers and tests give each runner its own), else what `hostname`
    prints (gethostname)."""
    return environ.get("RALPH_HOSTNAME", "") or os.uname().nodename


def boot_id() -> str | None:
    """The kernel's boot id: a pid is only meaningful within one boot of one host."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def _register(ctx: Ctx) -> str:
    host = host_name(ctx.environ)
    fleet = db.is_postgres(ctx.conn)

    def act(conn):
        for _ in range(_ATTEMPTS):
            agent_id = os.urandom(2).hex()
            if conn.execute("SELECT 1 FROM agents WHERE id = ?", (agent_id,)).fetchone():
                continue
            conn.execute("INSERT INTO agents (id, pid, hostname, scope_repo, scope_branch, "
                         "started_at, status) VALUES (?, ?, ?, ?, ?, datetime('now'), 'active')",
                         (agent_id, os.getpid(), host, ctx.scope.repo, ctx.scope.branch))
            if fleet:
                conn.execute("UPDATE agents SET boot_id = ?, last_heartbeat = datetime('now') "
                             "WHERE id = ?", (boot_id(), agent_id))
            return agent_id
        raise TaskError(f"failed to generate unique agent ID after {_ATTEMPTS} attempts")
    return db.write(ctx.conn, act) + "\n"


def _list(ctx: Ctx) -> str:
    rows = db.read(ctx.conn, lambda conn: conn.execute(
        "SELECT id, pid, hostname, started_at, status FROM agents WHERE scope_repo = ? AND "
        "scope_branch = ? AND status = 'active' ORDER BY started_at DESC, rowid DESC",
        (ctx.scope.repo, ctx.scope.branch)).fetchall())
    return md.agent_table(rows)


def _deregister(ctx: Ctx, agent_id: str) -> str:
    def act(conn):
        changed = conn.execute("UPDATE agents SET status = 'stopped' WHERE id = ? AND "
                               "scope_repo = ? AND scope_branch = ?",
                               (agent_id, ctx.scope.repo, ctx.scope.branch)).rowcount
        if not changed:
            raise not_found(f"agent '{agent_id}' not found")
    db.write(ctx.conn, act)
    return f"deregistered {agent_id}\n"


def agent(ctx: Ctx, argv: Sequence[str]) -> str:
    if not argv:
        raise TaskError("missing agent subcommand", usage=_USAGE)
    sub, rest = argv[0], argv[1:]
    if sub == "register":
        A.flags(rest)
        return _register(ctx)
    if sub == "list":
        A.flags(rest)
        return _list(ctx)
    if sub == "deregister":
        agent_id, rest = A.optional_id(rest)
        A.flags(rest)
        if not agent_id:
            raise TaskError("missing agent ID", usage="ralph task agent deregister <id>")
        return _deregister(ctx, agent_id)
    raise TaskError(f"unknown agent subcommand '{sub}'")


__all__ = ["agent", "host_name", "boot_id"]
