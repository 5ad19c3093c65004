"""Owns the shared record of one `--parallel N` run: what ralph.py hands it (Setup), its live
sessions and free agent ids, the task calls over the run's environment, and writing the
record down (the run state, where `active` lists every session for a recovery and the
deletions already named are kept, progress.md and events). Knows nothing of starting or
ending a session (launch, session_end) or of the order of things (run)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Callable

from ralphpy import procs
from ralphpy.agents import adapters
from ralphpy.backlog import client
from ralphpy.backlog import readonly as backlog_readonly
from ralphpy.backlog.calls import TaskCommand
from ralphpy.fleet import store as fleet_store
from ralphpy.parallel import worktrees
from ralphpy.parallel.prefix_writer import PrefixWriter
from ralphpy.runs import lifecycle, progress
from ralphpy.runs import state as run_state
from ralphpy.session import pool as session_pool
from ralphpy.session import watchdog
from ralphpy.signals import Guard


@dataclass
class Setup:
    """What the run needs from ralph.py (its RunContext, flattened)."""

    task: TaskCommand
    env: dict[str, str]                          # the run's: every child's, git's too
                                                 # (docs/contract/ralph-cli.md s.9)
    cwd: Path
    adapter: adapters.AgentAdapter
    danger: bool
    model: str | None
    parallel: int
    max_iterations: int
    merge: str
    run_branch: str
    first_agent: str
    run: lifecycle.Run                           # lock, state, progress
    guard: Guard
    out: BinaryIO
    say: Callable[[str], None]
    warn: Callable[[str], None]
    on_first_interrupt: Callable[[], None]
    stem: str                                    # session log name prefix
    timeouts: watchdog.SessionTimeouts | None = None   # none: no session or idle timeout
    kill_grace_s: float = 10.0                   # SIGTERM, this long, then SIGKILL
    # the scope check (it names each change once and raises
    # ScopeChanged under STOP_ON_SCOPE_CHANGE); True when every frozen task is done.
    scope_check: Callable[[], bool] | None = None
    verify: Any = None                           # verify.completion.Gate: judged before the merge
    # A fleet's store (docs/fleet.md): each agent's claims file, and each session's heartbeat
    # renewing its agent's claims to this lease (0: a SQLite store, neither).
    lease_s: float = 0.0
    # A usage limit's wait when its reset time is unknown (None: usage_limits' own).
    default_limit_wait_s: float | None = None
    # The run's unattended.night.Night (docs/unattended.md): its guards (the breaker and the
    # budgets, kept in the run state), `ralph ctl` stop and pause, SIGHUP, the usage-limit wait.
    night: Any = None
    # Each session's prompt: the --prompt template with {id} replaced, when it is given, else
    # the anti-drift block from this template (`assign_prompt`, or the shipped one).
    template: str | None = None
    prompt: str | None = None
    # --assign: new inbox files become tasks (docs/assignment.md), called before each peek;
    # the task files: backlog.json at each peek, a task done archived in .ralph/completed/.
    import_inbox: Callable[[], object] | None = None
    write_task_files: bool = False
    # A task none of the run's sessions held, deleted while they ran, is named (as the single
    # loop names it): a build run over ralph's own store read back, not a fleet's store, where
    # another host may have deleted it (loop.launch._names_unheld).
    name_unheld: bool = False


@dataclass
class Session:
    task: dict
    agent: str
    wt: worktrees.Worktree
    log: Path
    writer: PrefixWriter
    n: int = 0
    started: str = field(default_factory=run_state.utc_now)
    pidfile: Path | None = None
    clock: float = field(default_factory=time.monotonic)     # for the session's duration_s


def listed(tid: str, agent: str, wt: worktrees.Worktree, log: Path, started: str,
           pidfile: Path | None, pid: int | None, n: int) -> dict:
    """A session as the run state lists it (parallel.recovery reads it back)."""
    return {"task": tid, "n": n, "agent": agent, "branch": wt.branch, "worktree": str(wt.path),
            "log": str(log), "startedAt": started, "pid": pid,
            "procStart": procs.start_time(pid) if pid else None,
            "pidfile": str(pidfile) if pidfile else None}


class Book:
    def __init__(self, setup: Setup) -> None:
        self.s = setup
        self.ralph_dir = setup.run.ralph_dir         # <git top>/.ralph
        self.state: run_state.RunState = setup.run.state
        self.free_agents: list[str] = []
        self.extra_agents: list[str] = []
        self.sessions: dict[str, Session] = {}
        self.starting: dict | None = None        # the session being started (write-ahead)
        self.pool: session_pool.Pool | None = None
        self.export_warned = False
        # The deletions read since the run began (session_end.name_unheld), and those named
        # already: in the run state, so a resumed run names none of them again.
        kept = self.state.extra.get("parallel") or {}
        self.deletions_since: str = kept.get("deletionsSince") or backlog_readonly.since_now()
        self.deletions_named: set[str] = set(kept.get("deletionsNamed") or [])

    # ------------------------------------------------------------------ task calls
    def call(self, *args: str, agent: str | None = None) -> tuple[bool, str]:
        """A task call; with `agent`, as that agent: its claims file presented (agent_env)."""
        result = self.s.task.call(*args, env=self.agent_env(agent))
        return result.ok, result.output

    def agent_env(self, agent: str | None) -> dict[str, str]:
        """The run's environment as `agent` (fleet_store.as_agent: its id, its claims file), so
        a claim ralph makes for a session and the session's own `done` hold the same token,
        and one session's `done` or `fail` of another's task is refused, on every store."""
        if not agent:
            return self.s.env
        return fleet_store.as_agent(self.s.env, self.ralph_dir, self.state.run_id, agent)

    def export(self) -> dict[str, dict]:
        records = client.export_tasks(self.s.task.bound(self.s.env))
        if records is None:
            if not self.export_warned:
                self.export_warned = True
                self.s.warn(f"Error: --parallel reads the backlog with `{self.s.task.command} "
                            "_export-json`, which failed; no task is started")
            return {}
        return {record["id"]: record for record in records if record.get("id")}

    def passthrough(self, *args: str, agent: str | None = None) -> bool:
        """A task call whose output goes to the run's stdout; True when it succeeded."""
        self.s.out.flush()
        return self.s.task.passthrough(*args, env=self.agent_env(agent), out=self.s.out).ok

    # ------------------------------------------------------------------ the record
    def save(self) -> None:
        st = self.state
        pids = self.pool.pids() if self.pool else {}
        entries = [listed(tid, x.agent, x.wt, x.log, x.started, x.pidfile, pids.get(tid), x.n)
                   for tid, x in self.sessions.items()]
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
        st.extra["parallel"] = {"slots": self.s.parallel, "runBranch": self.s.run_branch,
                                "merge": self.s.merge,
                                "agents": [self.s.first_agent, *self.extra_agents],
                                "sessions": (st.active or {}).get("sessions", []),
                                "deletionsSince": self.deletions_since,
                                "deletionsNamed": sorted(self.deletions_named)}
        run_state.save(self.ralph_dir, st)
        progress.write_progress(self.ralph_dir, st)

    def event(self, name: str, **fields: Any) -> None:
        progress.append_event(self.ralph_dir, self.state.run_id, name, **fields)


__all__ = ["Setup", "Session", "Book", "listed"]
