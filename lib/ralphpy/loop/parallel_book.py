"""Owns the shared record of one `--parallel N` run: its live sessions (loop.sessions'
`Session`, by task) and free agent ids, the task calls over the run's environment as one of
its agents, and writing the record down (the run state, where `active` lists every session
for a recovery and the deletions already named are kept, progress.md and events). Knows
nothing of starting or ending a session (parallel_sessions) or of the order of things
(parallel_loop)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ralphpy import procs
from ralphpy.assign import mode as assign_mode
from ralphpy.backlog import client
from ralphpy.backlog import readonly as backlog_readonly
from ralphpy.fleet import store as fleet_store
from ralphpy.loop.context import RunContext
from ralphpy.loop.features import Assign
from ralphpy.loop.sessions import Session
from ralphpy.parallel import worktrees
from ralphpy.runs import progress
from ralphpy.runs import state as run_state
from ralphpy.session import pool as session_pool


def listed(tid: str, agent: str, wt: worktrees.Worktree, log: Path, started: str,
           pidfile: Path | None, pid: int | None, n: int) -> dict:
    """A session as the run state lists it (parallel.recovery reads it back)."""
    return {"task": tid, "n": n, "agent": agent, "branch": wt.branch, "worktree": str(wt.path),
            "log": str(log), "startedAt": started, "pid": pid,
            "procStart": procs.start_time(pid) if pid else None,
            "pidfile": str(pidfile) if pidfile else None}


class Book:
    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx                               # the run's context: options, features, ...
        self.ralph_dir = ctx.run.ralph_dir           # <git top>/.ralph
        self.state: run_state.RunState = ctx.run.state
        self.free_agents: list[str] = []
        self.slots: dict[str, int] = {}              # agent id -> its slot (RALPH_SLOT)
        self.extra_agents: list[str] = []
        self.sessions: dict[str, Session] = {}       # by task: the running sessions
        self.starting: dict | None = None        # the session being started (write-ahead)
        self.ended: list[Path | None] = []       # pid files of sessions ended since the save
        self.pool: session_pool.Pool | None = None
        self.export_warned = False
        # The deletions read since the run began (parallel_sessions.name_unheld), and those named
        # already: in the run state, so a resumed run names none of them again.
        kept = self.state.extra.get("parallel") or {}
        self.deletions_since: str = kept.get("deletionsSince") or backlog_readonly.since_now()
        self.deletions_named: set[str] = set(kept.get("deletionsNamed") or [])

    # ------------------------------------------------------------------ the run's settings
    def dispatch_template(self) -> str | None:
        """--prompt's template (--assign takes precedence, as in the single loop), or None."""
        return assign_mode.dispatch_template(self.ctx.options)

    def assigning(self) -> bool:
        """--assign: the inbox before each peek, backlog.json, a task done archived."""
        return self.ctx.features.get(Assign) is not None

    def names_unheld(self) -> bool:
        """A task none of the run's sessions held, deleted while they ran, is named (as the
        single loop names it): over ralph's own store read back, not a fleet's store, where
        another host may have deleted it (loop.launch.names_unheld)."""
        return self.ctx.mode == "build" and bool(self.ctx.agent_id and self.ctx.task.embedded
                                                 and not self.ctx.fleet())

    # ------------------------------------------------------------------ task calls
    def call(self, *args: str, agent: str | None = None) -> tuple[bool, str]:
        """A task call; with `agent`, as that agent: its claims file presented (agent_env)."""
        result = self.ctx.task.call(*args, env=self.agent_env(agent))
        return result.ok, result.output

    def agent_env(self, agent: str | None) -> dict[str, str]:
        """The run's environment as `agent` (fleet_store.as_agent: its id, its claims file), so
        a claim ralph makes for a session and the session's own `done` hold the same token,
        and one session's `done` or `fail` of another's task is refused, on every store."""
        if not agent:
            return self.ctx.env
        return fleet_store.as_agent(self.ctx.env, self.ralph_dir, self.state.run_id, agent)

    def export(self) -> dict[str, dict]:
        records = client.export_tasks(self.ctx.task.bound(self.ctx.env))
        if records is None:
            if not self.export_warned:
                self.export_warned = True
                self.ctx.warn(f"Error: --parallel reads the backlog with `{self.ctx.task.command} "
                              "_export-json`, which failed; no task is started")
            return {}
        return {record["id"]: record for record in records if record.get("id")}

    def record(self, tid: str) -> dict:
        """One task's `_export-json` record ({} when it is not there): read by its id from
        ralph's own store, as a session's end needs it; else from the task command's export."""
        if self.ctx.task.embedded:
            found = backlog_readonly.export_records("slugs", environ=self.ctx.env,
                                                    cwd=self.ctx.cwd, slugs=[tid])
            if found is not None:
                return found[0] if found else {}
        return self.export().get(tid) or {}

    def passthrough(self, *args: str, agent: str | None = None) -> bool:
        """A task call whose output goes to the run's stdout; True when it succeeded."""
        self.ctx.stdout.flush()
        return self.ctx.task.passthrough(*args, env=self.agent_env(agent),
                                         out=self.ctx.stdout.buffer).ok

    # ------------------------------------------------------------------ the record
    def save(self) -> None:
        st = self.state
        pids = self.pool.pids() if self.pool else {}
        entries = [listed(tid, x.agent, x.place, x.log, x.started, x.pidfile,
                          pids.get(tid), x.n) for tid, x in self.sessions.items()]
        if self.starting:
            entries.append(self.starting)
        if entries:
            st.active = {"n": st.sessions_started, "task": ", ".join(x["task"] for x in entries),
                         "startedAt": min(x["startedAt"] for x in entries), "pid": None,
                         "log": f"{len(entries)} session logs", "agent": None,
                         "sessions": entries}
        else:
            st.active = None
        # the lifecycle's resume only knows one session (state.active): the sessions are kept
        # here too, for the recovery after a crash
        opts = self.ctx.options
        st.extra["parallel"] = {"slots": opts.parallel, "runBranch": self.ctx.branch,
                                "merge": opts.merge,
                                "agents": [self.ctx.agent_id, *self.extra_agents],
                                "sessions": (st.active or {}).get("sessions", []),
                                "deletionsSince": self.deletions_since,
                                "deletionsNamed": sorted(self.deletions_named)}
        run_state.save(self.ralph_dir, st)
        for pidfile in self.ended:          # after the save: the state no longer names them
            if pidfile:
                pidfile.unlink(missing_ok=True)
        self.ended = []
        progress.write_progress(self.ralph_dir, st)

    def event(self, name: str, **fields: Any) -> None:
        progress.append_event(self.ralph_dir, self.state.run_id, name, **fields)


__all__ = ["Book", "listed"]
