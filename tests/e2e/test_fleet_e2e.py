"""A fleet simulation (docs/fleet.md): three "machines" (three clones of one bare origin, three
host names) run `ralph build --sync` at once over one PostgreSQL backlog, with stub agents that
claim, commit and mark done (tests/stubs/fleet-agent). Every task is done exactly once, every
commit reaches origin, no task is lost; a runner killed with SIGKILL mid-task loses its task to
another host once the lease runs out, and its agent's late `done` is refused by the fencing
token; a PostgreSQL restart mid-run is waited out. Real ralph.py, task CLI, git and server."""
from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path

import pytest

from conftest import wait_for
from fleethelp import Fleet, make_fleet
from task_helpers import PgStore, query

@pytest.fixture
def fleet(tmp_path: Path, base_env: dict[str, str], bin_dir: Path, pg_url: str,
          task_forker) -> Fleet:
    return make_fleet(tmp_path, base_env, bin_dir, machines=3, store=pg_url, forker=task_forker)


def short_leases(fleet: Fleet) -> None:
    """A stopped host's task is free again within seconds (a heartbeat every second)."""
    for clone in fleet.clones:
        (clone / "ralph.yml").write_text("lease: 3s\n")


@pytest.mark.long
@pytest.mark.timeout(600)
def test_three_machines_work_300_tasks_each_done_once_every_commit_on_origin(fleet):
    ids = [f"t{n:03}" for n in range(300)]
    fleet.create(*ids)
    runners = [fleet.start(i, "build", "--sync", "-n", "200") for i in range(3)]
    results = [fleet.finish(proc, timeout=400) for proc in runners]
    for result in results:
        assert result.returncode == 0, result.stderr[-2000:]
    fleet.assert_every_task_done_once_and_on_origin(ids)
    by_host = Counter(clone for clone, _ in fleet.finished())
    assert set(by_host) == {"host1", "host2", "host3"}         # all three machines worked
    hosts = query(PgStore(fleet.env["RALPH_TASKS_DB"]), "SELECT DISTINCT hostname FROM agents")
    assert sorted(h for (h,) in hosts) == ["host1", "host2", "host3"]


def test_a_killed_runner_loses_its_task_after_the_lease_and_its_late_done_is_refused(
        fleet, tmp_path, pg_server):
    short_leases(fleet)
    ids = [f"k{n:02}" for n in range(30)]
    fleet.create(*ids)
    hold = tmp_path / "hold"
    hold.mkdir()
    victim = fleet.start(0, "build", "--sync", "-n", "50", FLEET_HOLD_DIR=str(hold),
                         FLEET_LEASE="3")
    taken = wait_for(lambda: (hold / "claimed").exists() and (hold / "claimed").read_text().strip(),
                     timeout=60)
    others = [fleet.start(i, "build", "--sync", "-n", "50", FLEET_LEASE="3") for i in (1, 2)]
    os.kill(victim.pid, signal.SIGKILL)                      # the host stops: no heartbeat
    victim.communicate()
    # while the others work, the server restarts: the runners and their agents wait it out
    wait_for(lambda: len(fleet.finished()) >= 5, timeout=120)
    pg_server.restart()
    results = [fleet.finish(proc, timeout=300) for proc in others]
    for result in results:
        assert result.returncode == 0, result.stderr[-2000:]
    task = fleet.tasks()[taken]
    assert task["status"] == "done" and task["retry_count"] == 1
    assert task["fail_reason"].startswith("lease expired at ")
    assert "on host 'host1' stopped renewing it" in task["fail_reason"]
    (hold / "release").touch()                               # the stopped host wakes up late
    rc = hold / "done.rc"                                    # written after done.err
    assert wait_for(lambda: rc.exists() and rc.read_text().strip(), timeout=60) == "1"
    assert (hold / "done.err").read_text().startswith(
        f"Error: task '{taken}' is no longer held by this claim (claim 1; now claim 2, done")
    assert fleet.tasks()[taken]["result"] != '{"commit":"late"}'
    fleet.assert_every_task_done_once_and_on_origin(ids)
    assert all(clone != "host1" for clone, _ in fleet.finished())
