"""Owns which task store a run uses when it is a fleet's (a `postgresql://` URL): the store
the run's settings and environment name, checked before anything is written (an unknown
scheme, a missing driver, a server refusing the URL: one line, exit 1); the store as it may
be shown, its password `***`; each agent's claims file (`$RALPH_CLAIMS_FILE`) under the run's
directory; and the heartbeat's lease and pace, so each session's heartbeat is made here.
Knows nothing of claims or of running a beat (tasks.claims, session.heartbeat)."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Callable, Mapping

from ralphpy.errors import UsageError
from ralphpy.runs import state
from ralphpy.session import heartbeat as session_heartbeat
from ralphpy.sources import choice
from ralphpy.tasks import store_url

# The task CLI's `claim` lease without --lease (tasks/args.py): an agent's own claim lasts
# this long until the runner's first heartbeat renews it.
CLAIM_DEFAULT_LEASE_S = 600


def check(environ: Mapping[str, str], connect_timeout_s: float = 15.0,
          warn: Callable[[str], None] = lambda line: None) -> None:
    """The store the task CLI will open (sources.choice) is one it knows, a PostgreSQL
    store has its driver and is reached within `connect_timeout_s` (the
    store_connect_timeout setting); else UsageError (exit 1) before the first write."""
    value = choice.store_in(environ)
    if value is None:
        return                                   # a source answers: RALPH_TASKS_DB is unused
    kind = store_url.scheme(value)
    if kind is None:
        return                                   # a SQLite file (or the default one)
    if kind not in store_url.POSTGRES_SCHEMES:
        raise UsageError(store_url.unknown_scheme_message(value))
    if importlib.util.find_spec("psycopg") is None:
        from ralphpy.tasks import pg                 # psycopg itself is not imported
        raise UsageError(pg.driver_missing())
    _probe(value, connect_timeout_s, warn)


def _probe(value: str, timeout_s: float, warn: Callable[[str], None]) -> None:
    """One connection, before anything is written: a server that refuses this URL (a wrong
    password, an unknown database or role) or whose schema is newer than this ralph.py knows
    stops the run with its answer (UsageError, exit 1) instead of failing every task call of
    every session. A server not reached within `timeout_s` is a typo in its host or port, not
    an outage (there was nothing to wait out): one stderr line when the wait begins, then
    UsageError. An outage after this is waited out by the run's task calls (fleet.outage)."""
    from ralphpy.durations import format_duration
    from ralphpy.tasks import pg
    from ralphpy.tasks.errors import TaskError
    shown_store, bound = shown(value), format_duration(timeout_s)
    waiting: list[str] = []

    def report(line: str) -> None:                 # the task CLI's retry lines: one for all
        if not waiting:
            waiting.append(line)
            warn(f"waiting up to {bound} for {shown_store}")
    conn = pg.Connection(value, {"RALPH_STORE_RETRY": f"{timeout_s:g}"}, report, migrate=False)
    try:
        conn.open()
    except pg.StoreUnreachable as err:
        raise UsageError(f"{err.message}; not reached within {bound} "
                         "(store_connect_timeout): check its host and port") from None
    except TaskError as err:
        raise UsageError(err.message) from None
    finally:
        conn.close()


def url(environ: Mapping[str, str]) -> str | None:
    """The PostgreSQL store a run with this environment uses, else None (a SQLite file, a
    task source). Only then are there claims files and heartbeats."""
    value = choice.store_in(environ)
    return value if value is not None and store_url.is_postgres(value) else None


def shown(value: str) -> str:
    """The store as output, events, reports and errors may show it: no password."""
    return store_url.redact(value)


def claims_file(ralph_dir: Path, run_id: str, agent: str) -> Path:
    """The agent's claims file (tasks.claims) in the run's directory: its fencing tokens, one
    `<version> <slug>` line per claim, read by its `done`, `fail` and `renew`."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in agent) or "agent"
    return state.state_path(ralph_dir, run_id).parent / f"claims-{safe}.txt"


def as_agent(env: Mapping[str, str], ralph_dir: Path, run_id: str,
             agent: str) -> dict[str, str]:
    """env for a task call made as `agent` of the run: its id, and its claims file presented,
    so a claim made for it records its token there, its `done`, `fail` and `renew` are refused
    once another host holds the task, and its `done` and `fail` of a task another agent holds
    are refused."""
    return {**env, "RALPH_CLAIMS_FILE": str(claims_file(ralph_dir, run_id, agent)),
            "RALPH_AGENT_ID": agent}


def beat_interval(lease_s: float) -> float:
    """Seconds between heartbeats: a third of the lease, or of the agent's own claim lease
    when that is shorter (its claim must not run out before the first heartbeat)."""
    return min(lease_s, CLAIM_DEFAULT_LEASE_S) / 3


def heartbeat(task_cli: str | None, agent: str, lease_s: float, env: Mapping[str, str],
              cwd: Path | None) -> session_heartbeat.Heartbeat | None:
    """The heartbeat of `agent`'s session: it renews the agent's claims to `lease_s`, at the
    pace the lease gives (beat_interval). `task_cli` is the task CLI's executable; None (the
    task command is not an executable file) has no heartbeat, as no beat could run."""
    if task_cli is None:
        return None
    return session_heartbeat.for_agent(task_cli, agent, lease_s, beat_interval(lease_s), env,
                                       cwd)


__all__ = ["check", "url", "shown", "claims_file", "as_agent", "beat_interval", "heartbeat",
           "CLAIM_DEFAULT_LEASE_S"]
