"""Owns the commands a runner of a fleet calls (ralph.py extensions, not in ralph.sh's help):
`_heartbeat` renews the leases its agent holds and records that the agent is alive, so a
session longer than a lease keeps its task while a stopped host's task is freed when its lease
runs out; `_fleet` lists the scope's active agents, their hosts and the tasks they hold (for
`ralph status`). Does not own claims (claims.py) or the agent table's commands (agent_cmds.py)."""
from __future__ import annotations

from ralphpy.tasks import args as A
from ralphpy.tasks import db, jsontext, queries as q
from ralphpy.tasks.context import Ctx

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence


def heartbeat(ctx: Ctx, argv: Sequence[str]) -> str:
    parsed = A.flags(argv, values=("--lease", "--agent"))
    seconds = A.lease(parsed)
    agent = parsed.get("--agent", ctx.environ.get("RALPH_AGENT_ID", ""))

    def act(conn):
        held = [row[0] for row in conn.execute(
            "SELECT t.slug FROM tasks t WHERE " + q.IN_SCOPE + " AND t.status = 'active' AND "
            "t.assignee = :agent ORDER BY t.slug", q.scope_params(ctx.scope, agent=agent))]
        # Only leases this agent still holds: a task another agent took is theirs.
        conn.execute("UPDATE tasks AS t SET lease_expires_at = datetime('now', :lease), "
                     "updated_at = datetime('now') WHERE " + q.IN_SCOPE + " AND "
                     "t.status = 'active' AND t.assignee = :agent",
                     q.scope_params(ctx.scope, agent=agent, lease=f"+{seconds} seconds"))
        if db.is_postgres(conn):
            conn.execute("UPDATE agents SET last_heartbeat = datetime('now') WHERE id = ?",
                         (agent,))
        return held
    return "".join(f"renewed {slug}\n" for slug in db.write(ctx.conn, act))


def fleet(ctx: Ctx, argv: Sequence[str]) -> str:
    A.flags(argv)
    extra = ", boot_id, last_heartbeat" if db.is_postgres(ctx.conn) else ", NULL, NULL"

    def snapshot(conn):
        agents = conn.execute(
            f"SELECT id, hostname, pid, started_at{extra} FROM agents WHERE scope_repo = ? AND "
            "scope_branch = ? AND status = 'active' ORDER BY hostname, started_at, id",
            (ctx.scope.repo, ctx.scope.branch)).fetchall()
        tasks = q.fetch_tasks(conn, ctx.scope, "t.status = 'active'")
        return agents, tasks
    agents, tasks = db.read(ctx.conn, snapshot)
    lines = []
    for agent_id, host, pid, started, boot, beat in agents:
        held = [{"id": t["slug"], "title": t["title"], "lease_expires_at": t["lease_expires_at"]}
                for t in tasks if t["assignee"] == agent_id]
        lines.append(jsontext.dumps({"agent": agent_id, "host": host, "pid": pid,
                                     "boot_id": boot, "started_at": started,
                                     "last_heartbeat": beat, "tasks": held}) + "\n")
    return "".join(lines)


__all__ = ["heartbeat", "fleet"]
