"""Black-box: a ralph.py killed with SIGKILL on a fleet's PostgreSQL store, then resumed. What
its dead agent held may have passed to another host meanwhile (its lease ran out); the resumed
run settles only what is still the dead agent's, presenting that agent's claims file, and
leaves the rest to its new holder. Real ralph.py and task CLI processes, stub agents, a real
throwaway PostgreSQL server (conftest's pg_url)."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import psutil
import pytest

from conftest import wait_for
from loophelp import Running
from task_helpers import PgStore, ok, query
from test_fleet_runner_e2e import create, repo, run_dir, statuses  # noqa: F401  (repo: fixture)

# The first attempt of a task records its agent, commits partial work and then works on
# (sleeps) until it is killed; a later attempt ends at once without finishing anything.
FIRST_ATTEMPT_HANGS = r"""
if mkdir "$MARKS/first" 2>/dev/null; then
  echo "$RALPH_AGENT_ID" > "$MARKS/agent"
  echo partial > partial.txt && git add partial.txt && git commit -qm partial >/dev/null
  exec sleep 600
fi
"""

# The single loop's agent claims two tasks, says so, and works on until it is killed.
CLAIM_TWO_THEN_HANG = r"""
"$RALPH_TASK_SCRIPT" claim >/dev/null && "$RALPH_TASK_SCRIPT" claim >/dev/null || exit 0
touch "$MARKS/claimed"
exec sleep 600
"""


def _agents(marks: Path) -> list[psutil.Process]:
    """The stub agents still running that write to `marks`."""
    found = []
    for proc in psutil.process_iter(["environ"]):
        try:
            if (proc.info["environ"] or {}).get("MARKS") == str(marks):
                found.append(proc)
        except psutil.Error:
            pass
    return found


@pytest.fixture
def marks(tmp_path: Path):
    path = tmp_path / "marks"
    path.mkdir()
    yield path
    for proc in _agents(path):                                   # a leftover agent of a
        try:                                                      # failing test
            proc.kill()
        except psutil.Error:
            pass


def _state(repo: Path) -> dict:
    return json.loads((run_dir(repo) / "state.json").read_text())


def _kill_ralph_only(run: Running) -> None:
    """SIGKILL to ralph.py alone: its agents live on, as after an out-of-memory kill."""
    os.kill(run.proc.pid, signal.SIGKILL)
    run.wait(30)


def _take_as_host_b(run_task, url: str, tmp_path: Path) -> str:
    """Another host's agent claims t1 (its lease ran out); its agent id."""
    other = {"RALPH_TASKS_DB": url, "RALPH_HOSTNAME": "host-b",
             "RALPH_CLAIMS_FILE": str(tmp_path / "claims-b")}
    agent_b = ok(run_task("agent", "register", env=other)).strip()
    query(PgStore(url), "UPDATE tasks SET lease_expires_at = '2000-01-01 00:00:00'")
    assert "id: t1" in ok(run_task("claim", "--agent", agent_b, env=other))
    return agent_b


def test_a_resumed_parallel_run_leaves_a_task_another_host_took_to_that_host(
        repo, base_env, run_task, run_ralph, pg_url, marks, tmp_path):
    """The dead run's session held t1 with partial work on its branch; host-b took t1 once the
    lease ran out. The resume stops the dead session's agent, neither fails t1 nor merges the
    dead session's branch, and starts no session for it."""
    create(run_task, pg_url, "t1")
    env = {**base_env, "STUB_ACTION": FIRST_ATTEMPT_HANGS, "MARKS": str(marks)}
    run = Running(["build", "--parallel", "2", "--tasks", pg_url], cwd=repo, env=env)
    try:
        agent = wait_for(lambda: (marks / "agent").exists()        # and its id written
                         and _state(repo)["extra"]["parallel"]["sessions"]
                         and (marks / "agent").read_text().strip(), 60)
        _kill_ralph_only(run)
    finally:
        run.kill()
    assert statuses(pg_url)["t1"] == ("active", agent)
    agent_b = _take_as_host_b(run_task, pg_url, tmp_path)
    before = query(PgStore(pg_url), "SELECT * FROM tasks")

    again = run_ralph("build", "--parallel", "2", "--tasks", pg_url, env=env, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "No tasks available. Exiting loop." in again.stdout    # t1 is host-b's
    assert query(PgStore(pg_url), "SELECT * FROM tasks") == before, again.stderr
    assert statuses(pg_url)["t1"] == ("active", agent_b)
    assert not (repo / "partial.txt").exists()               # the dead session's work unmerged
    assert "[t1] recovered" not in again.stderr
    assert _agents(marks) == []                               # its agent stopped


def test_a_resumed_run_fails_its_dead_agents_task_only_under_that_agents_claim(
        repo, base_env, run_task, run_ralph, pg_url, marks):
    """The dead agent's `fail` presents the dead agent's claims file: when a task it still
    lists is held under a newer claim than its own (another claim landed between the resumed
    run's listing and its `fail`, here made directly in the store), that `fail` is refused and
    nothing is written; a task under the dead agent's own claim fails as before."""
    create(run_task, pg_url, "t1", "t2")
    env = {**base_env, "STUB_ACTION": CLAIM_TWO_THEN_HANG, "MARKS": str(marks)}
    run = Running(["build", "-n", "1", "--tasks", pg_url], cwd=repo, env=env)
    try:
        wait_for((marks / "claimed").exists, 60)
        _kill_ralph_only(run)
    finally:
        run.kill()
    agent = statuses(pg_url)["t1"][1]
    assert statuses(pg_url)["t2"] == ("active", agent)
    store = PgStore(pg_url)
    query(store, "UPDATE tasks SET claim_version = 2, lease_expires_at = '2999-01-01 00:00:00' "
                 "WHERE slug = 't2'")
    t2_before = query(store, "SELECT * FROM tasks WHERE slug = 't2'")

    again = run_ralph("build", "-n", "1", "--tasks", pg_url, env={**env, "STUB_ACTION": "true"})
    assert again.returncode == 0, again.stderr
    assert query(store, "SELECT * FROM tasks WHERE slug = 't2'") == t2_before
    status, reason = query(store, "SELECT status, fail_reason FROM tasks WHERE slug = 't1'")[0]
    assert status == "open" and reason.startswith("ralph.py exited during the session")
    failed = [e["task"] for e in _state(repo)["failed"]]
    assert "t1" in failed and "t2" not in failed
    assert "failed task t1 of the dead run's agent" in again.stderr
    assert "failed task t2" not in again.stderr
