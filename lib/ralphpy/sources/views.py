"""Owns how a source's tasks look through the contract (docs/contract/task-cli.md s.8): each task's
contract status from the tool's status and ralph's lease (a valid lease: active under its agent; an
expired one: claimable again), blocked and claimable, and the output formats (markdown-KV, the
task table, show, _export-json, plan-status). Pure functions; knows nothing of the tools."""
from __future__ import annotations

import json
import os
from typing import Iterable, Mapping

from ralphpy import inert
from ralphpy.sources.base import ACTIVE, DONE, HELD, Listing, Task
from ralphpy.sources.leases import Lease
from ralphpy.tasks import markdown as md


def rows(listing: Listing, leases: Mapping[str, Lease], holds: Mapping[str, str]) -> list[dict]:
    """One contract record per task, in the source's order."""
    tasks = listing.tasks
    return [row(task, tasks, leases, holds) for task in tasks.values()]


def row(task: Task, tasks: Mapping[str, Task], leases: Mapping[str, Lease],
        holds: Mapping[str, str]) -> dict:
    """The contract record of one task; `tasks` are the listing's, for its dependencies."""
    lease = leases.get(task.id)
    held = holds.get(task.id) or (task.fail_reason if task.status == HELD else None)
    record = {"id": task.id, "title": task.title, "priority": task.priority,
              "status": "open", "category": task.category, "spec": task.spec,
              "ref": task.extra.get("ref"), "assignee": None, "lease_expires_at": None,
              "retry_count": task.retry_count, "deps": list(task.deps), "steps": None,
              "result": task.extra.get("result"), "description": task.description,
              "fail_reason": task.fail_reason, "created_at": task.created,
              "tags": list(task.tags), "held": held, "tool_status": task.tool_status,
              "ralph_hold": task.id in holds}       # else the tool's own (flowctl blocked)
    record["blocked"] = any(dep not in tasks or tasks[dep].status != DONE
                            for dep in task.deps)
    claimable = False
    if task.status == DONE:
        record["status"] = "done"
    elif lease is not None and lease.valid:
        record.update(status="active", assignee=lease.agent,
                      lease_expires_at=lease.expires_at,
                      retry_count=task.retry_count + lease.retry_count)
    elif task.status == ACTIVE:
        record["status"] = "active"
        claimable = lease is not None            # ours, expired: taken over (s.9.4)
    else:
        claimable = task.status != HELD and not held
    record["claimable"] = claimable and not record["blocked"]
    return record


def frozen(environ: Mapping[str, str], cwd: str) -> set[str] | None:
    """RALPH_FROZEN_IDS_FILE: the ids peek and claim may consider (one per line), or None."""
    name = environ.get("RALPH_FROZEN_IDS_FILE", "")
    if not name:
        return None
    with open(os.path.join(cwd, name), encoding="utf-8") as handle:
        return {line.strip() for line in handle if line.strip()}


def markdown(records: Iterable[dict], fields: frozenset, by_id: Mapping[str, dict] = {}) -> str:
    views = []
    for r in records:
        view = dict(r)
        if "blocker_results" in fields:
            view["blocker_results"] = [(d, md.compact(by_id[d]["result"]) if not isinstance(
                by_id[d]["result"], str) else by_id[d]["result"])
                for d in sorted(r["deps"]) if d in by_id and by_id[d].get("result")]
        view["deps"] = sorted(r["deps"])
        views.append((view, fields))
    return inert.shown(md.sections(views), lines=True)     # titles shown, not obeyed


def table(records: Iterable[dict]) -> str:
    return md.task_table([{**r, "slug": r["id"]} for r in records])


def plan_status(tasks: Mapping[str, Task], leases: Mapping[str, Lease]) -> str:
    """s.9.2: open/active count unblocked tasks; blocked counts any blocked task not done.
    Counted from each task's status, its dependencies and the leases, without a record per
    task: by `tasks.counts()` where the source keeps them indexed beside its order (the
    GitHub cache, counted by SQLite), else from the tasks (tk and flowctl have read them
    all anyway)."""
    counts = getattr(tasks, "counts", None)
    if counts is not None:
        leased = [i for i, lease in leases.items() if lease.valid]
        unblocked_open, active, done, blocked = counts(leased)
        return (f"{unblocked_open} open, {active} active, {done} done, {blocked} blocked, "
                "0 deleted\n")
    done = {t.id for t in tasks.values() if t.status == DONE}
    # As row: a valid lease makes a task active unless it is done; a dependency is met when
    # it is a done task of the listing.
    active = ({t.id for t in tasks.values() if t.status == ACTIVE}
              | {i for i, lease in leases.items() if lease.valid and i in tasks}) - done
    blocked = {t.id for t in tasks.values() if any(d not in done for d in t.deps)}
    unblocked_open = len(tasks) - len(done) - len(active) - len(blocked - done - active)
    return (f"{unblocked_open} open, {len(active - blocked)} active, {len(done)} done, "
            f"{len(blocked - done)} blocked, 0 deleted\n")


_SHOW = (("ID", "id", True), ("Title", "title", True), ("Status", "status", True),
         ("Priority", "priority", True), ("Category", "category", False),
         ("Description", "description", False), ("Spec", "spec", False), ("Ref", "ref", False),
         ("Assignee", "assignee", False), ("Lease", "lease_expires_at", False),
         ("Retries", "retry_count", False), ("Fail reason", "fail_reason", False),
         ("Held", "held", False), ("Result", "result", False), ("Created", "created_at", True))


def show(r: dict, by_id: Mapping[str, dict], with_deps: bool) -> str:
    """s.9.9's layout, labels padded to 13 characters."""
    lines = []
    for label, key, always in _SHOW:
        value = r.get(key)
        if always or (value not in (None, "", 0)):
            lines.append(f"{label + ':':<13}{'' if value is None else value}")
            if key == "held" and r.get("ralph_hold"):     # as the embedded store says it
                from ralphpy.tasks.question_files import release_hint   # only when held
                lines[-1] += "; " + release_hint(str(value), r["id"])
    if r["deps"]:
        lines += ["", "Dependencies:"]
        lines += [f"  {d} ({by_id[d]['status'] if d in by_id else 'missing'})"
                  for d in sorted(r["deps"])]
    if with_deps:
        results = [(d, by_id[d]["result"]) for d in sorted(r["deps"])
                   if d in by_id and by_id[d].get("result")]
        if results:
            lines += ["", "Blocker Results:"] + [f"  {d}: {res}" for d, res in results]
    return inert.shown("\n".join(lines) + "\n", lines=True)    # titles shown, not obeyed


def export_json(records: Iterable[dict]) -> str:
    keys = ("id", "title", "description", "priority", "status", "category", "spec", "ref",
            "assignee", "lease_expires_at", "retry_count", "fail_reason", "steps", "deps",
            "result", "created_at", "held", "tags")
    return "".join(json.dumps({k: r.get(k) for k in keys} | {"updated_at": None,
                                                             "deleted_at": None},
                              ensure_ascii=False) + "\n" for r in records)


__all__ = ["rows", "row", "frozen", "markdown", "table", "plan_status", "show", "export_json"]
