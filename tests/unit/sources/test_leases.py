"""The lease record and the contract's view of a source: real files, real processes racing
for the lock."""
from __future__ import annotations

import random
import subprocess
import sys
import time

from conftest import ROOT
from ralphpy.sources import contract_cmds, views
from ralphpy.tasks import markdown as md
from ralphpy.sources.base import ACTIVE, DONE, HELD, OPEN, Listing, Task
from ralphpy.sources.leases import Agents, Lease, Leases

# A child that takes the lock, records whether it saw a lease, writes one, and holds briefly.
CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[1] + "/lib")
from ralphpy.sources.leases import Lease, Leases
leases = Leases(sys.argv[2], "tk")
with leases.locked():
    taken = "t1" in leases.all()
    if not taken:
        leases.put(Lease("t1", sys.argv[3], 0, time.time() + 60))
print("lost" if taken else "won")
"""


def test_eight_processes_racing_for_one_lease_leave_one_winner(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(ROOT), str(tmp_path), f"a{n}"],
                              stdout=subprocess.PIPE, text=True) for n in range(8)]
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert sorted(outs) == ["lost"] * 7 + ["won"]
    (lease,) = Leases(tmp_path, "tk").all().values()
    assert lease.agent in {f"a{n}" for n in range(8)}


def test_ids_with_slashes_round_trip_through_file_names(tmp_path):
    leases = Leases(tmp_path / ".ralph", "tk")
    with leases.locked():
        leases.put(Lease("web/01", "ab12", 1, time.time() + 5))
    assert list(leases.all()) == ["web/01"]
    leases.drop("web/01")
    assert leases.all() == {}
    assert (tmp_path / ".ralph" / ".gitignore").read_text() == "*\n"


def _listing(*tasks: Task) -> Listing:
    return Listing({t.id: t for t in tasks})


def test_a_valid_lease_is_active_an_expired_one_claimable_and_no_lease_leaves_it_alone():
    now = time.time()
    listing = _listing(Task("a", "A", ACTIVE, "in_progress"), Task("b", "B", ACTIVE, "in_progress"),
                       Task("c", "C", ACTIVE, "in_progress"), Task("d", "D", OPEN, "open",
                                                                      deps=["e"]),
                       Task("e", "E", DONE, "closed"), Task("f", "F", OPEN, "open", deps=["zz"]))
    leases = {"a": Lease("a", "ag1", 1, now + 60), "b": Lease("b", "ag2", 1, now - 1)}
    rows = {r["id"]: r for r in views.rows(listing, leases, {})}
    assert (rows["a"]["status"], rows["a"]["assignee"], rows["a"]["claimable"]) == (
        "active", "ag1", False)
    assert (rows["b"]["status"], rows["b"]["claimable"]) == ("active", True)
    assert (rows["c"]["status"], rows["c"]["claimable"]) == ("active", False)
    assert rows["d"]["claimable"] and not rows["d"]["blocked"]
    assert rows["f"]["blocked"] and not rows["f"]["claimable"]    # a missing blocker blocks, as tk
    assert views.plan_status(listing.tasks, leases) == (
        "1 open, 3 active, 1 done, 1 blocked, 0 deleted\n")


def test_agents_register_list_and_deregister(tmp_path):
    agents = Agents(tmp_path)
    ids = {agents.register() for _ in range(3)}
    assert len(ids) == 3 and {row[0] for row in agents.active()} == ids
    gone = ids.pop()
    agents.deregister(gone)
    assert {row[0] for row in agents.active()} == ids


def test_plan_status_counts_as_the_records_say_without_making_them():
    """Counted from statuses, dependencies and leases (the GitHub cache keeps those on its
    first line): the same as counting each task's record, over many mixed backlogs."""
    now, pick = time.time(), random.Random(7)
    for _ in range(200):
        ids = [f"t{i}" for i in range(8)]
        tasks = [Task(i, i, pick.choice((OPEN, ACTIVE, DONE, HELD)), "x",
                      deps=pick.sample(ids + ["gone"], pick.randint(0, 2))) for i in ids]
        leases = {i: Lease(i, "ag", 1, now + pick.choice((60, -60)))
                  for i in pick.sample(ids, 3)}
        listing = _listing(*tasks)
        rows = views.rows(listing, leases, {})
        open_, active = (sum(r["status"] == s and not r["blocked"] for r in rows)
                         for s in ("open", "active"))
        done = sum(r["status"] == "done" for r in rows)
        blocked = sum(r["blocked"] and r["status"] != "done" for r in rows)
        assert views.plan_status(listing.tasks, leases) == (
            f"{open_} open, {active} active, {done} done, {blocked} blocked, 0 deleted\n")


class _Unreadable:
    """A task whose reading fails: a command that touches it read the whole backlog."""

    def __getattr__(self, name):
        raise AssertionError("read the whole backlog")


def test_list_by_assignee_reads_the_leased_tasks_and_says_what_the_whole_listing_says(
        tmp_path):
    """A task the tool itself marks active has no assignee: `list --status active --assignee`
    (the loop's call at every iteration) shows the agent's leased tasks, the same lines as
    filtering every record, without making the others."""
    tasks = {t.id: t for t in (Task("a", "A", ACTIVE, "in_progress"),
                               Task("b", "B", OPEN, "open", deps=["a"]),
                               Task("c", "C", ACTIVE, "in_progress"),
                               Task("d", "D", DONE, "closed"))}
    source = type("Src", (), {"name": "tk", "root": tmp_path})()
    source.load = lambda: Listing({**tasks, "far": _Unreadable()})
    backlog = contract_cmds.Backlog(source, {}, str(tmp_path))
    now = time.time()
    for lease in (Lease("a", "ag1", 1, now + 60), Lease("b", "ag2", 1, now + 60),
                  Lease("d", "ag1", 1, now + 60)):
        backlog.leases.put(lease)
    argv = ["--status", "active", "--assignee", "ag1"]
    mine = contract_cmds.list_tasks(backlog, argv)
    whole = [r for r in views.rows(Listing(tasks), backlog.leases.all(), {})
             if r["status"] == "active" and r["assignee"] == "ag1"]
    assert mine == views.table(whole) and "\na " in mine and "\nc " not in mine
    assert contract_cmds.list_tasks(backlog, argv + ["--markdown"]) == views.markdown(
        whole, md.LIST_MD)
