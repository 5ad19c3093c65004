"""Owns the fleet as `ralph status` shows it when the run's task store is PostgreSQL: which
store to read (the one a run started here would use: the `tasks` setting's URL, from the
environment or ralph.yml, else RALPH_TASKS_DB; else the store the run recorded when its URL
holds no password: a password is never written down, give it through PGPASSWORD or
~/.pgpass), the task CLI's `_fleet` read without writing and without waiting for a lost
server, and its lines: the hosts, their agents with the last heartbeat's age, and the tasks
each holds until when. Never writes, never prints."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from ralphpy.fleet import store as fleet_store
from ralphpy.tasks import store_url


def _setting(environ: Mapping[str, str], repo: Path) -> str:
    """The `tasks` setting a run started here would take: the environment's, then ralph.yml's."""
    from ralphpy.config import settings
    from ralphpy.errors import UsageError
    try:
        return settings.load("build", {}, environ, repo).tasks
    except UsageError:                    # a bad ralph.yml is `ralph build`'s to report
        return environ.get("RALPH_TASKS", "")


def named_store(environ: Mapping[str, str], repo: Path) -> str:
    """The PostgreSQL store this environment names, as a run started here would take it
    (docs/fleet.md): the run exports the `tasks` setting (the environment, then ralph.yml,
    which this reads) as RALPH_TASKS, so its URL wins, RALPH_TASKS_DB counts only while it is
    sqlite and a source uses neither; "" when it names none."""
    return fleet_store.url({**environ, "RALPH_TASKS": _setting(environ, repo)}) or ""


def store(environ: Mapping[str, str], repo: Path, recorded: dict | None,
          named: str | None = None) -> str | None:
    """The PostgreSQL store to show, or None (not a fleet's run, or no usable URL). named:
    named_store's answer when the caller has it already (None: looked up here)."""
    found = (named_store(environ, repo) if named is None else named) or None
    if found is None and recorded and "***" not in str(recorded.get("store") or "***"):
        found = recorded["store"]
    return found


def _age(stamp: str | None, now: datetime) -> float | None:
    try:
        then = datetime.strptime(str(stamp), "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    return max(0.0, (now - then).total_seconds())


def read(environ: Mapping[str, str], repo: Path, recorded: dict | None,
         now: datetime | None = None, named: str | None = None) -> dict[str, Any] | None:
    """{"store", "agents": [_fleet's objects + heartbeatAgeS], "error"} or None. named: as
    for store."""
    from ralphpy.backlog import readonly
    from ralphpy.tasks import jsontext
    url = store(environ, repo, recorded, named)
    if url is None:
        return None
    env = {**environ, "RALPH_TASKS_DB": url, "RALPH_STORE_RETRY": "0"}  # a look: no waiting
    env.pop("RALPH_TASKS", None)
    answer = readonly.call(["_fleet"], environ=env, cwd=repo)
    fleet: dict[str, Any] = {"store": fleet_store.shown(url), "agents": [], "error": None}
    if not answer.ok:
        fleet["error"] = store_url.redact(answer.output) or "the task store could not be read"
        return fleet
    now = now or datetime.now(timezone.utc)
    for line in answer.output.splitlines():
        agent = jsontext.loads(line)
        agent["heartbeatAgeS"] = _age(agent.get("last_heartbeat"), now)
        fleet["agents"].append(agent)
    return fleet


def _ago(seconds: float | None) -> str:
    if seconds is None:
        return "no heartbeat yet"
    from ralphpy.durations import format_duration
    return f"heartbeat {format_duration(seconds)} ago"


def lines(fleet: dict[str, Any] | None) -> list[str]:
    """The fleet block of `ralph status`'s text."""
    if not fleet:
        return []
    agents = fleet["agents"]
    if fleet["error"]:
        return [f"Fleet:      {fleet['store']}: {fleet['error']}"]
    hosts = sorted({str(a.get("host") or "?") for a in agents})
    out = [f"Fleet:      {fleet['store']}: {len(agents)} agent(s) on {len(hosts)} host(s)"]
    for host in hosts:
        out.append(f"  {host}")
        for a in (a for a in agents if str(a.get("host") or "?") == host):
            out.append(f"    {a['agent']} (pid {a.get('pid')}, since {a.get('started_at')}, "
                       f"{_ago(a.get('heartbeatAgeS'))})")
            out += [f"      {t['id']}: {t.get('title')} (lease until {t.get('lease_expires_at')})"
                    for t in a.get("tasks") or []]
    return out


__all__ = ["named_store", "store", "read", "lines"]
