"""Owns the task-CLI contract's commands answered from a source (docs/contract/task-cli.md s.9):
peek, claim, renew, done, fail, list, show, plan-status, _export-json, _hold/_unhold, _reopen,
agent. Claims go through the lease record, status changes through the source's tool. Commands a
source cannot answer exactly (plan-sync, create, update, ...) are refused with one line naming the
tool's own command. Raises TaskError; never prints."""
from __future__ import annotations

import contextlib
import itertools
import json
import os
import time
from pathlib import Path
from typing import Container, Iterator, Mapping, Sequence

from ralphpy import atomic_file
from ralphpy.sources import views
from ralphpy.errors import RalphError
from ralphpy.sources.base import ACTIVE, DONE, OPEN, ClaimedElsewhere, Source, SourceError
from ralphpy.sources.leases import Agents, Lease, Leases
from ralphpy.tasks import args as A
from ralphpy.tasks import markdown as md
from ralphpy.tasks.errors import TaskError, not_found

# What to use instead, per source, for the commands that edit the backlog's definition.
NATIVE = {"tk": "tk create / tk dep / tk close", "flowctl": "flowctl task create / flowctl dep add",
          "github": "GitHub issues (label, 'blocked by #N')"}
UNSUPPORTED = ("plan-sync", "create", "update", "delete", "block", "unblock", "deps")


class Backlog:
    """One command's view of a source: its tasks, ralph's leases and holds."""

    def __init__(self, source: Source, environ: Mapping[str, str], cwd: str):
        self.source, self.environ, self.cwd = source, environ, cwd
        ralph_dir = Path(source.root) / ".ralph"
        self.leases = Leases(ralph_dir, source.name)
        self.holds_dir = ralph_dir / "sources" / source.name / "holds"
        self.agents = Agents(ralph_dir)
        self._listing = None

    @property
    def listing(self):
        if self._listing is None:                  # `agent register` never reads the backlog
            self._listing = self.source.load()
        return self._listing

    def problems(self) -> list[str]:
        """The files the listing skipped (unparseable tickets); none when it was never read."""
        return list(self._listing.problems) if self._listing is not None else []

    def holds(self) -> dict[str, str]:
        found = {}
        with contextlib.suppress(FileNotFoundError):
            for name in os.listdir(self.holds_dir):
                found[name] = (self.holds_dir / name).read_text(encoding="utf-8").strip()
        return found

    def records(self) -> list[dict]:
        """Every task's contract record: for the commands that show the whole backlog."""
        return views.rows(self.listing, self.leases.all(), self.holds())

    def record(self, task_id: str) -> dict:
        return self.near(task_id)[0]

    def near(self, task_id: str) -> tuple[dict, dict[str, dict]]:
        """The record of one task and, by id, its own and its dependencies' records (what
        `show` and `claim` print of them): made for those alone, so a command on one task
        costs the same at any size of backlog (the GitHub source makes a task from its line)."""
        tasks, leases, holds = self.listing.tasks, self.leases.all(), self.holds()
        if task_id not in tasks:
            raise not_found(f"task '{task_id}' not found")
        r = views.row(tasks[task_id], tasks, leases, holds)
        by_id = {d: views.row(tasks[d], tasks, leases, holds) for d in r["deps"] if d in tasks}
        by_id[task_id] = r
        return r, by_id

    def tool(self, action, *args) -> None:
        try:
            action(*args)
        except SourceError as err:
            raise TaskError(str(err)) from None


def _claimable(b: Backlog, leases: Mapping[str, Lease], holds: Mapping[str, str],
               target: str | None = None, skip: Container[str] = ()) -> Iterator[dict]:
    """The claimable records in the source's order, each made once the one before it was
    passed over: peek and claim stop at the first ones, so they cost the same at 10 tasks and
    100,000 when the source makes its tasks on demand (the GitHub cache, decision 0047)."""
    tasks = b.listing.tasks
    allowed = views.frozen(b.environ, b.cwd)
    for task_id in (tasks if target is None else (target,)):
        if (task_id in tasks and task_id not in skip
                and (allowed is None or task_id in allowed)):
            r = views.row(tasks[task_id], tasks, leases, holds)
            if r["claimable"]:
                yield r


def _leased(b: Backlog, leases: Mapping[str, Lease], holds: Mapping[str, str]) -> list[dict]:
    """The records of the tasks under a lease of ralph's, in the source's order."""
    tasks = b.listing.tasks
    in_order = getattr(tasks, "in_order", None)     # the GitHub cache: by its index, not a walk
    leased = (in_order(leases) if in_order is not None
              else [task_id for task_id in tasks if task_id in leases])
    return [views.row(tasks[task_id], tasks, leases, holds) for task_id in leased]


def peek(b: Backlog, argv: Sequence[str]) -> str:
    n = A.flags(argv, values=("-n",)).get("-n", "5")
    if not A.digits(n):
        raise TaskError(f"-n must be a non-negative integer, got: {n}")
    # Records only for the tasks shown: the first claimable ones and those under a lease.
    leases, holds = b.leases.all(), b.holds()
    shown = [dict(r, status="open", assignee=None)
             for r in itertools.islice(_claimable(b, leases, holds), int(n))]
    active = [r for r in _leased(b, leases, holds)
              if r["status"] == "active" and r["lease_expires_at"]]
    parts = [views.markdown(shown, md.PEEK_OPEN), views.markdown(active, md.PEEK_ACTIVE)]
    return md.join_sections(p.rstrip("\n") for p in parts if p)


def claim(b: Backlog, argv: Sequence[str]) -> str:
    target, rest = A.optional_id(argv)
    parsed = A.flags(rest, values=("--lease", "--agent"))
    seconds = A.lease(parsed)
    agent = parsed.get("--agent", b.environ.get("RALPH_AGENT_ID", ""))
    lost: set[str] = set()                     # held by another machine's claim
    while True:
        with b.leases.locked():                # leases re-read under the lock: one winner
            for task_id in b.leases.all():     # closed by the tool itself (`/tf` runs tk close)
                if task_id in b.listing.tasks and b.listing.tasks[task_id].status == DONE:
                    b.leases.drop(task_id)
            leases = b.leases.all()
            chosen = next(_claimable(b, leases, b.holds(), target, lost), None)
            if chosen is None:
                raise TaskError("Task not eligible" if target else "No eligible tasks", 2,
                                plain=True)
            old = leases.get(chosen["id"])
            retries = (old.retry_count + 1) if old is not None else 0
            b.leases.put(Lease(chosen["id"], agent, os.getpid(), time.time() + seconds,
                               retries))
        task = b.listing.tasks[chosen["id"]]
        try:
            if task.status == OPEN:
                b.source.start(task.id)
            elif resume := getattr(b.source, "resume", None):    # an expired lease's task,
                resume(task.id)                                  # started already: still ours?
        except ClaimedElsewhere:               # lost the source's own claim: the next task
            b.leases.drop(task.id)
            lost.add(task.id)
            continue
        except RalphError as err:
            if old is not None:                # the expired lease stays as it was
                b.leases.put(old)
            else:
                b.leases.drop(task.id)
            if isinstance(err, SourceError):
                raise TaskError(str(err)) from None
            raise
        if task.status == OPEN:
            task.status, task.tool_status = ACTIVE, "in_progress"
        break
    r, by_id = b.near(task.id)
    return views.markdown([r], md.CLAIM, by_id)


def _active(b: Backlog, task_id: str) -> dict:
    r = b.record(task_id)
    if r["status"] != "active":
        raise TaskError(f"task '{task_id}' is not active (status: {r['status']})")
    return r


def _held(b: Backlog, task_id: str) -> dict:
    """The task, when it is active and the caller may finish or fail it: not a session's call
    on a task another agent holds (claims.other_holder), as on the embedded store."""
    from ralphpy.tasks import claims            # imports the store: only done and fail need it
    r = _active(b, task_id)
    if refusal := claims.other_holder(b.environ, task_id, r["assignee"]):
        raise refusal
    return r


def renew(b: Backlog, argv: Sequence[str]) -> str:
    task_id, rest = A.optional_id(argv)
    parsed = A.flags(rest, values=("--lease", "--agent"))
    if task_id is None:
        raise TaskError("missing task ID", usage="ralph task renew <id> [--lease N]")
    seconds = A.lease(parsed)
    agent = parsed.get("--agent", b.environ.get("RALPH_AGENT_ID", ""))
    with b.leases.locked():
        r = _active(b, task_id)
        lease = b.leases.all().get(task_id)
        if lease is None or r["assignee"] != agent:
            raise TaskError(f"agent '{agent}' is not the assignee of task '{task_id}'")
        lease.expires = time.time() + seconds
        b.leases.put(lease)
    return f"renewed {task_id}\n"


def _id(argv: Sequence[str], usage: str) -> tuple[str, Sequence[str]]:
    if not argv:
        raise TaskError("missing task ID", usage=usage)
    return argv[0], argv[1:]


def done(b: Backlog, argv: Sequence[str]) -> str:
    task_id, rest = _id(argv, "ralph task done <id> [--result '<json>']")
    text = A.flags(rest, values=("--result",)).get("--result", "")
    result = None
    if text:
        try:
            result = json.loads(text)
        except ValueError:
            result = None
        if not isinstance(result, dict) or result.get("commit") in (None, False):
            raise TaskError("result JSON must include a 'commit' key")
    r = _held(b, task_id)
    agent = r["assignee"] or b.environ.get("RALPH_AGENT_ID", "")
    summary = (result or {}).get("summary") or (md.compact(result) if result else "")
    if b.source.name == "flowctl":
        summary = summary or f"Completed by ralph agent {agent}".rstrip()
    b.tool(b.source.finish, task_id, result, summary)
    b.leases.drop(task_id)
    return f"done {task_id}\n"


def fail(b: Backlog, argv: Sequence[str]) -> str:
    task_id, rest = _id(argv, 'ralph task fail <id> [--reason "<text>"]')
    reason = A.flags(rest, values=("--reason",)).get("--reason", "")
    _held(b, task_id)
    b.tool(b.source.release, task_id, reason)
    b.leases.drop(task_id)
    return f"failed {task_id}\n"


def reopen(b: Backlog, argv: Sequence[str]) -> str:
    task_id, rest = _id(argv, "ralph task _reopen <id> --reason <text>")
    reason = A.flags(rest, values=("--reason",)).get("--reason", "")
    b.record(task_id)
    b.tool(b.source.reopen, task_id, reason)
    b.leases.drop(task_id)
    return f"reopened {task_id}\n"


def hold(b: Backlog, argv: Sequence[str]) -> str:
    task_id, rest = _id(argv, "ralph task _hold <id> --reason <text>")
    reason = A.flags(rest, values=("--reason",)).get("--reason", "") or "held"
    b.record(task_id)
    atomic_file.ensure_dir(b.holds_dir)                 # .ralph/ ignores itself
    (b.holds_dir / task_id).write_text(reason + "\n", encoding="utf-8")
    if shared := getattr(b.source, "hold", None):       # a backlog other machines read too
        b.tool(shared, task_id, reason)
    return f"held {task_id}\n"


def unhold(b: Backlog, argv: Sequence[str]) -> str:
    from ralphpy.tasks.run_edits import refuse_in_session     # imports the store: only here
    refuse_in_session(b.environ)
    task_id, _ = _id(argv, "ralph task _unhold <id>")
    b.record(task_id)
    with contextlib.suppress(FileNotFoundError):
        (b.holds_dir / task_id).unlink()
    if shared := getattr(b.source, "unhold", None):
        b.tool(shared, task_id)
    return f"unheld {task_id}\n"


def ask(b: Backlog, argv: Sequence[str]) -> str:
    """docs/questions.md: the task held with the question as its hold's reason, in the holds
    file a source's holds live in; an active task given back (its lease dropped)."""
    from ralphpy.tasks import ask as embedded, question_files as questions
    task_id, text, default, seconds = embedded.parse(argv)
    r = b.record(task_id)
    if r["status"] in ("done", "deleted"):
        raise TaskError(f"task '{task_id}' is {r['status']}: there is nothing to ask about")
    where = questions.folder(b.environ, lambda: str(Path(b.source.root)))
    questions.ask(where, task_id, text, default, seconds, time.time())
    atomic_file.ensure_dir(b.holds_dir)                 # .ralph/ ignores itself
    (b.holds_dir / task_id).write_text(questions.REASON + text + "\n", encoding="utf-8")
    if r["status"] == "active":
        b.tool(b.source.release, task_id, questions.REASON + text)
        b.leases.drop(task_id)
    return f"asked {task_id}: held until a person answers; go on with another task\n"


def list_tasks(b: Backlog, argv: Sequence[str]) -> str:
    parsed = A.flags(argv, values=("--status", "--assignee"), switches=("--all", "--markdown"))
    if "--all" in parsed and "--status" in parsed:
        raise TaskError("--all and --status are mutually exclusive")
    # A record has an assignee only through a lease of ralph's (a task the tool itself marks
    # active has none), so `--assignee` (the loop's crash-safety call at every iteration,
    # s.15.5) reads the leased tasks alone.
    records = (_leased(b, b.leases.all(), b.holds()) if "--assignee" in parsed
               else b.records())
    if "--status" in parsed:
        wanted = {s.strip() for s in str(parsed["--status"]).split(",")}
        records = [r for r in records if r["status"] in wanted]
    if "--assignee" in parsed:
        records = [r for r in records if r["assignee"] == parsed["--assignee"]]
    return views.markdown(records, md.LIST_MD) if "--markdown" in parsed else views.table(records)


def show(b: Backlog, argv: Sequence[str]) -> str:
    task_id, rest = _id(argv, "ralph task show <id> [--with-deps]")
    parsed = A.flags(rest, switches=("--with-deps",))
    r, by_id = b.near(task_id)
    return views.show(r, by_id, "--with-deps" in parsed)


def plan_status(b: Backlog, argv: Sequence[str]) -> str:
    A.flags(argv)
    return views.plan_status(b.listing.tasks, b.leases.all())


def export_json(b: Backlog, argv: Sequence[str]) -> str:
    A.flags(argv)
    return views.export_json(b.records())


def agent(b: Backlog, argv: Sequence[str]) -> str:
    if not argv:
        raise TaskError("missing agent subcommand",
                        usage="ralph task agent <register|list|deregister>")
    if argv[0] == "register":
        return b.agents.register() + "\n"
    if argv[0] == "list":
        return md.agent_table(b.agents.active())
    if argv[0] == "deregister":
        if len(argv) < 2:
            raise TaskError("missing agent ID", usage="ralph task agent deregister <id>")
        b.agents.deregister(argv[1])
        return f"deregistered {argv[1]}\n"
    raise TaskError(f"unknown agent subcommand '{argv[0]}'")


COMMANDS = {"peek": peek, "claim": claim, "renew": renew, "done": done, "fail": fail,
            "list": list_tasks, "show": show, "plan-status": plan_status,
            "_export-json": export_json, "_hold": hold, "_unhold": unhold, "_reopen": reopen,
            "agent": agent, "ask": ask}


def unsupported(source: str, command: str) -> TaskError:
    source = source.partition(":")[0]          # github:OWNER/REPO is the github source
    return TaskError(f"'{command}' is not supported by the {source} task source; use "
                     f"{NATIVE.get(source, 'the tool itself')}")


__all__ = ["Backlog", "COMMANDS", "UNSUPPORTED", "unsupported"]
